// The expression language's recursive-descent parser (grammar: include/profile_train/rules/expr.h), with the
// load-time checks: metric paths against metric_paths.h (with a suggestion), functions and their arity, and
// the types visible statically.
#include <algorithm>
#include <cmath>

#include "expr_internal.h"
#include "profile_train/rules/metric_paths.h"

namespace profile_train::rules::expr::detail {
namespace {

struct FunctionSpec {
  const char* name;
  size_t min_args;
  size_t max_args;  // SIZE_MAX = variadic
};

constexpr FunctionSpec kFunctions[] = {
    {"exists", 1, 1},          {"min", 1, SIZE_MAX},    {"max", 1, SIZE_MAX}, {"coalesce", 1, SIZE_MAX},
    {"contains", 2, 2},        {"startswith", 2, 2},    {"number", 1, 1},     {"len", 1, 1},
    {"if", 3, 3},
};

const FunctionSpec* find_function(std::string_view name) {
  for (const auto& f : kFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string suggest_metric(std::string_view path) {
  std::string best;
  size_t best_d = std::max<size_t>(3, path.size() / 4) + 1;
  for (const auto& m : metric_paths()) {
    const size_t d = edit_distance(path, m.path);
    if (d < best_d) {
      best_d = d;
      best = std::string(m.path);
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

StaticType from_metric(MetricType t) {
  switch (t) {
    case MetricType::kNumber: return StaticType::kNumber;
    case MetricType::kBool: return StaticType::kBool;
    case MetricType::kString: return StaticType::kString;
    case MetricType::kList: return StaticType::kList;
    case MetricType::kObject: return StaticType::kObject;
  }
  return StaticType::kAny;
}

class Parser {
 public:
  Parser(std::string_view text, std::vector<Token> toks,
         const std::map<std::string, StaticType, std::less<>>& locals)
      : text_(text), toks_(std::move(toks)), locals_(locals) {}

  std::unique_ptr<Node> parse() {
    auto n = parse_or();
    if (peek().kind != Tok::kEnd) fail(peek(), "unexpected token after the end of the expression");
    return n;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  Token take() { return toks_[pos_++]; }
  bool is_word(const Token& t, std::string_view w) const { return t.kind == Tok::kIdent && t.text == w; }
  bool is_op(const Token& t, std::string_view o) const { return t.kind == Tok::kOp && t.text == o; }

  [[noreturn]] void fail(const Token& t, const std::string& msg) const {
    throw ParseFailure{t.begin, t.kind == Tok::kEnd ? "end of expression" : std::string(text_.substr(t.begin, t.end - t.begin)), msg};
  }
  [[noreturn]] void fail_node(const Node& n, const std::string& msg) const {
    std::string tok(text_.substr(n.begin, n.end - n.begin));
    if (tok.size() > 40) tok = tok.substr(0, 37) + "...";
    throw ParseFailure{n.begin, tok, msg};
  }

  // Entered on each construct that nests (the parser recurses there); fails past kMaxNesting.
  struct Nest {
    explicit Nest(Parser& p, const Token& at) : p_(p) {
      if (++p_.depth_ > kMaxNesting)
        p_.fail(at, "expression nests deeper than " + std::to_string(kMaxNesting) +
                        " levels (parentheses, 'not', unary '-' and calls; limit)");
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    Parser& p_;
  };

  std::unique_ptr<Node> make(Op op, size_t begin, size_t end, StaticType type) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->begin = begin;
    n->end = end;
    n->type = type;
    return n;
  }

  void expect_type(const Node& n, StaticType want, const char* context) const {
    if (n.type != StaticType::kAny && n.type != want)
      fail_node(n, std::string(context) + " needs a " + std::string(static_type_name(want)) + ", got a " +
                       std::string(static_type_name(n.type)));
  }

  std::unique_ptr<Node> binary(Op op, std::unique_ptr<Node> l, std::unique_ptr<Node> r, StaticType type) {
    auto n = make(op, l->begin, r->end, type);
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }

  std::unique_ptr<Node> parse_or() {
    auto l = parse_and();
    while (is_word(peek(), "or")) {
      take();
      auto r = parse_and();
      expect_type(*l, StaticType::kBool, "'or'");
      expect_type(*r, StaticType::kBool, "'or'");
      l = binary(Op::kOr, std::move(l), std::move(r), StaticType::kBool);
    }
    return l;
  }

  std::unique_ptr<Node> parse_and() {
    auto l = parse_not();
    while (is_word(peek(), "and")) {
      take();
      auto r = parse_not();
      expect_type(*l, StaticType::kBool, "'and'");
      expect_type(*r, StaticType::kBool, "'and'");
      l = binary(Op::kAnd, std::move(l), std::move(r), StaticType::kBool);
    }
    return l;
  }

  std::unique_ptr<Node> parse_not() {
    if (is_word(peek(), "not")) {
      const Token t = take();
      Nest nest(*this, t);
      auto operand = parse_not();
      expect_type(*operand, StaticType::kBool, "'not'");
      auto n = make(Op::kNot, t.begin, operand->end, StaticType::kBool);
      n->kids.push_back(std::move(operand));
      return n;
    }
    return parse_comparison();
  }

  std::unique_ptr<Node> parse_comparison() {
    auto l = parse_additive();
    static const std::pair<const char*, Op> kOps[] = {{"==", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt},
                                                      {"<=", Op::kLe}, {">", Op::kGt},  {">=", Op::kGe}};
    for (const auto& [text, op] : kOps) {
      if (!is_op(peek(), text)) continue;
      const Token t = take();
      auto r = parse_additive();
      const bool known = l->type != StaticType::kAny && r->type != StaticType::kAny;
      if (op == Op::kEq || op == Op::kNe) {
        if (known && l->type != r->type)
          fail(t, "cannot compare a " + std::string(static_type_name(l->type)) + " with a " +
                      std::string(static_type_name(r->type)));
      } else {
        for (const Node* side : {l.get(), r.get()})
          if (side->type != StaticType::kAny && side->type != StaticType::kNumber &&
              side->type != StaticType::kString)
            fail_node(*side, "'" + std::string(text) + "' orders numbers or strings, not a " +
                                 std::string(static_type_name(side->type)));
        if (known && l->type != r->type)
          fail(t, "cannot order a " + std::string(static_type_name(l->type)) + " against a " +
                      std::string(static_type_name(r->type)) + " (number(x) converts a string)");
      }
      auto n = binary(op, std::move(l), std::move(r), StaticType::kBool);
      for (const auto& [text2, op2] : kOps) {
        (void)op2;
        if (is_op(peek(), text2)) fail(peek(), "comparisons do not chain; combine them with 'and'");
      }
      return n;
    }
    return l;
  }

  std::unique_ptr<Node> parse_additive() {
    auto l = parse_multiplicative();
    while (is_op(peek(), "+") || is_op(peek(), "-")) {
      const Token t = take();
      auto r = parse_multiplicative();
      expect_type(*l, StaticType::kNumber, ("'" + t.text + "'").c_str());
      expect_type(*r, StaticType::kNumber, ("'" + t.text + "'").c_str());
      l = binary(t.text == "+" ? Op::kAdd : Op::kSub, std::move(l), std::move(r), StaticType::kNumber);
    }
    return l;
  }

  std::unique_ptr<Node> parse_multiplicative() {
    auto l = parse_unary();
    while (is_op(peek(), "*") || is_op(peek(), "/")) {
      const Token t = take();
      auto r = parse_unary();
      expect_type(*l, StaticType::kNumber, ("'" + t.text + "'").c_str());
      expect_type(*r, StaticType::kNumber, ("'" + t.text + "'").c_str());
      l = binary(t.text == "*" ? Op::kMul : Op::kDiv, std::move(l), std::move(r), StaticType::kNumber);
    }
    return l;
  }

  std::unique_ptr<Node> parse_unary() {
    if (is_op(peek(), "-")) {
      const Token t = take();
      Nest nest(*this, t);
      auto operand = parse_unary();
      expect_type(*operand, StaticType::kNumber, "unary '-'");
      auto n = make(Op::kNeg, t.begin, operand->end, StaticType::kNumber);
      n->kids.push_back(std::move(operand));
      return n;
    }
    return parse_primary();
  }

  std::unique_ptr<Node> parse_primary() {
    const Token t = take();
    switch (t.kind) {
      case Tok::kNumber: {
        auto n = make(Op::kLiteral, t.begin, t.end, StaticType::kNumber);
        n->literal = Value::Number(t.number);
        return n;
      }
      case Tok::kString: {
        auto n = make(Op::kLiteral, t.begin, t.end, StaticType::kString);
        n->literal = Value::String(t.text);
        return n;
      }
      case Tok::kLParen: {
        Nest nest(*this, t);
        auto inner = parse_or();
        if (peek().kind != Tok::kRParen) fail(peek(), "expected ')'");
        const Token close = take();
        inner->begin = t.begin;  // keep the parentheses in the node's text
        inner->end = close.end;
        return inner;
      }
      case Tok::kLocal: {
        const std::string name = t.text.substr(1);
        auto it = locals_.find(name);
        if (it == locals_.end()) fail(t, "unknown variable '$" + name + "' here");
        auto n = make(Op::kLocal, t.begin, t.end, it->second);
        n->name = name;
        return n;
      }
      case Tok::kIdent: return parse_identifier(t);
      case Tok::kEnd: fail(t, "expression is incomplete");
      default: fail(t, "unexpected token");
    }
  }

  std::unique_ptr<Node> parse_identifier(const Token& t) {
    if (t.text == "true" || t.text == "false") {
      auto n = make(Op::kLiteral, t.begin, t.end, StaticType::kBool);
      n->literal = Value::Bool(t.text == "true");
      return n;
    }
    if (t.text == "null") return make(Op::kLiteral, t.begin, t.end, StaticType::kAny);
    if (t.text == "and" || t.text == "or" || t.text == "not") fail(t, "'" + t.text + "' needs an operand before it");
    if (peek().kind == Tok::kLParen) return parse_call(t);
    const MetricPath* metric = find_metric(t.text);
    if (metric == nullptr) fail(t, "unknown metric '" + t.text + "'" + suggest_metric(t.text));
    auto n = make(Op::kPath, t.begin, t.end, from_metric(metric->type));
    n->name = t.text;
    return n;
  }

  std::unique_ptr<Node> parse_call(const Token& name) {
    const FunctionSpec* spec = find_function(name.text);
    if (spec == nullptr)
      fail(name, "unknown function '" + name.text +
                     "' (known: exists, min, max, coalesce, contains, startswith, number, len, if)");
    Nest nest(*this, take());  // '('
    auto n = make(Op::kCall, name.begin, name.end, StaticType::kAny);
    n->name = name.text;
    if (peek().kind != Tok::kRParen) {
      while (true) {
        n->kids.push_back(parse_or());
        if (peek().kind == Tok::kComma) {
          take();
          continue;
        }
        break;
      }
    }
    if (peek().kind != Tok::kRParen) fail(peek(), "expected ',' or ')' in the call of " + name.text + "()");
    n->end = take().end;
    const size_t argc = n->kids.size();
    if (argc < spec->min_args || argc > spec->max_args) {
      std::string want = spec->min_args == spec->max_args ? std::to_string(spec->min_args)
                                                          : "at least " + std::to_string(spec->min_args);
      fail_node(*n, name.text + "() takes " + want + " argument(s), got " + std::to_string(argc));
    }
    type_call(*n);
    return n;
  }

  void type_call(Node& n) {
    const std::string& f = n.name;
    auto& k = n.kids;
    if (f == "exists") {
      if (k[0]->op != Op::kPath && k[0]->op != Op::kLocal) fail_node(*k[0], "exists() takes a metric path");
      n.type = StaticType::kBool;
    } else if (f == "min" || f == "max") {
      for (auto& a : k) expect_type(*a, StaticType::kNumber, (f + "()").c_str());
      n.type = StaticType::kNumber;
    } else if (f == "coalesce") {
      StaticType t = k[0]->type;
      for (auto& a : k)
        if (a->type != t) t = StaticType::kAny;
      n.type = t;
    } else if (f == "contains") {
      if (k[0]->type != StaticType::kAny && k[0]->type != StaticType::kList && k[0]->type != StaticType::kString)
        fail_node(*k[0], "contains() searches a list or a string, not a " +
                             std::string(static_type_name(k[0]->type)));
      if (k[0]->type == StaticType::kString) expect_type(*k[1], StaticType::kString, "contains() in a string");
      n.type = StaticType::kBool;
    } else if (f == "startswith") {
      expect_type(*k[0], StaticType::kString, "startswith()");
      expect_type(*k[1], StaticType::kString, "startswith()");
      n.type = StaticType::kBool;
    } else if (f == "number") {
      n.type = StaticType::kNumber;
    } else if (f == "if") {
      expect_type(*k[0], StaticType::kBool, "if() condition");
      n.type = k[1]->type == k[2]->type ? k[1]->type : StaticType::kAny;
    } else if (f == "len") {
      if (k[0]->type != StaticType::kAny && k[0]->type != StaticType::kList && k[0]->type != StaticType::kString &&
          k[0]->type != StaticType::kObject)
        fail_node(*k[0], "len() needs a list, object or string");
      n.type = StaticType::kNumber;
    }
  }

  std::string_view text_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  const std::map<std::string, StaticType, std::less<>>& locals_;
};

}  // namespace

std::unique_ptr<Node> parse(std::string_view text, std::vector<Token> tokens,
                            const std::map<std::string, StaticType, std::less<>>& locals) {
  return Parser(text, std::move(tokens), locals).parse();
}

}  // namespace profile_train::rules::expr::detail
