#include "profile_train/rules/expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "profile_train/rules/metric_paths.h"

namespace profile_train::rules::expr {

// ---------------------------------------------------------------------------------------------- values

Value Value::Number(double n) {
  if (!std::isfinite(n)) return Unknown();
  Value v;
  v.kind = ValueKind::kNumber;
  v.number = n;
  return v;
}

Value Value::FromJson(const nlohmann::json* j) {
  if (j == nullptr || j->is_null()) return Unknown();
  if (j->is_boolean()) return Bool(j->get<bool>());
  if (j->is_number()) return Number(j->get<double>());
  if (j->is_string()) return String(j->get<std::string>());
  Value v;
  v.kind = j->is_array() ? ValueKind::kList : ValueKind::kObject;
  v.ref = j;
  return v;
}

namespace {

std::string format_number(double n) {
  if (n == std::floor(n) && std::fabs(n) < 1e15) {
    std::ostringstream os;
    os << static_cast<long long>(n);
    return os.str();
  }
  std::ostringstream os;
  os.precision(4);
  os << n;
  return os.str();
}

}  // namespace

std::string Value::describe() const {
  switch (kind) {
    case ValueKind::kUnknown: return "missing";
    case ValueKind::kBool: return boolean ? "true" : "false";
    case ValueKind::kNumber: return format_number(number);
    case ValueKind::kString: return "\"" + string + "\"";
    case ValueKind::kList:
    case ValueKind::kObject: {
      std::string s = ref->dump();
      if (s.size() > 60) s = s.substr(0, 57) + "...";
      return s;
    }
  }
  return "?";
}

std::string_view static_type_name(StaticType t) {
  switch (t) {
    case StaticType::kAny: return "any";
    case StaticType::kBool: return "boolean";
    case StaticType::kNumber: return "number";
    case StaticType::kString: return "string";
    case StaticType::kList: return "list";
    case StaticType::kObject: return "object";
  }
  return "?";
}

// ------------------------------------------------------------------------------------------------- AST

enum class Op { kLiteral, kPath, kLocal, kNot, kNeg, kAnd, kOr, kEq, kNe, kLt, kLe, kGt, kGe,
                kAdd, kSub, kMul, kDiv, kCall };

struct Node {
  Op op = Op::kLiteral;
  size_t begin = 0, end = 0;  // byte range in the expression text
  Value literal;              // kLiteral (no list/object literals)
  std::string name;           // kPath / kLocal / kCall
  std::vector<std::unique_ptr<Node>> kids;
  StaticType type = StaticType::kAny;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Iterative: a left-deep chain (a + b + c + ...) is as deep as it is long, and recursive destruction of
  // such a tree overflowed the stack before the size limit existed.
  ~Node() {
    std::vector<std::unique_ptr<Node>> pending;
    for (auto& k : kids) pending.push_back(std::move(k));
    kids.clear();
    while (!pending.empty()) {
      std::unique_ptr<Node> n = std::move(pending.back());
      pending.pop_back();
      for (auto& k : n->kids) pending.push_back(std::move(k));
      n->kids.clear();
    }
  }
};

namespace {

// ----------------------------------------------------------------------------------------------- lexer

enum class Tok { kNumber, kString, kIdent, kLocal, kLParen, kRParen, kComma, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;  // identifier / operator / string contents
  double number = 0;
  size_t begin = 0, end = 0;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

struct ParseFailure {
  size_t pos;
  std::string token;
  std::string message;
};

// Bounds that keep parsing and evaluation (both recursive) far from the stack limit, with room for
// sanitizer builds; the built-in rules use at most a few dozen tokens and 4 levels.
constexpr size_t kMaxTokens = 4096;
constexpr int kMaxNesting = 64;  // parentheses, 'not', unary '-' and call arguments, counted together

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  // Throws ParseFailure (internal to this file; Parse() converts it to a Status).
  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (out.size() >= kMaxTokens)
        throw ParseFailure{i_, std::string(s_.substr(i_, std::min<size_t>(10, s_.size() - i_))),
                           "expression is longer than " + std::to_string(kMaxTokens) +
                               " tokens (limit; split the condition or simplify it)"};
      if (i_ >= s_.size()) {
        out.push_back({Tok::kEnd, "", 0, i_, i_});
        return out;
      }
      const size_t start = i_;
      const char c = s_[i_];
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
        out.push_back(number(start));
      } else if (c == '\'' || c == '"') {
        out.push_back(string(start, c));
      } else if (ident_start(c)) {
        out.push_back(ident(start, Tok::kIdent));
      } else if (c == '$') {
        ++i_;
        if (i_ >= s_.size() || !ident_start(s_[i_])) throw ParseFailure{start, "$", "expected a name after '$'"};
        Token t = ident(i_, Tok::kLocal);
        t.begin = start;
        out.push_back(t);
      } else if (c == '(') {
        ++i_;
        out.push_back({Tok::kLParen, "(", 0, start, i_});
      } else if (c == ')') {
        ++i_;
        out.push_back({Tok::kRParen, ")", 0, start, i_});
      } else if (c == ',') {
        ++i_;
        out.push_back({Tok::kComma, ",", 0, start, i_});
      } else {
        out.push_back(op(start));
      }
    }
  }

 private:
  Token number(size_t start) {
    // strtod needs a NUL-terminated copy; copy only the run of characters a number can span (copying
    // the rest of the text made lexing quadratic in the expression length).
    size_t run = start;
    while (run < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[run])) || s_[run] == '.' ||
                               s_[run] == '+' || s_[run] == '-'))
      ++run;
    const std::string rest(s_.substr(start, run - start));
    char* endp = nullptr;
    const double v = std::strtod(rest.c_str(), &endp);
    const size_t len = static_cast<size_t>(endp - rest.c_str());
    i_ = start + len;
    const std::string_view lexeme = s_.substr(start, len);
    if ((i_ < s_.size() && (ident_char(s_[i_]) || s_[i_] == '.')) ||
        lexeme.find_first_of("xXpPnN") != std::string_view::npos)
      throw ParseFailure{start, std::string(s_.substr(start, i_ + 1 - start)), "malformed number"};
    return {Tok::kNumber, std::string(s_.substr(start, len)), v, start, i_};
  }

  Token string(size_t start, char quote) {
    std::string out;
    ++i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      out.push_back(s_[i_++]);
    }
    if (i_ >= s_.size()) throw ParseFailure{start, std::string(1, quote), "unterminated string"};
    ++i_;
    return {Tok::kString, out, 0, start, i_};
  }

  // Dotted identifier; a hyphen belongs to the segment only when a letter or '_' follows it.
  Token ident(size_t start, Tok kind) {
    while (true) {
      if (i_ >= s_.size() || !ident_start(s_[i_]))
        throw ParseFailure{i_, i_ < s_.size() ? std::string(1, s_[i_]) : "end", "expected a name segment"};
      while (i_ < s_.size()) {
        if (ident_char(s_[i_])) {
          ++i_;
        } else if (s_[i_] == '-' && i_ + 1 < s_.size() && ident_start(s_[i_ + 1])) {
          i_ += 2;
        } else {
          break;
        }
      }
      if (i_ < s_.size() && s_[i_] == '.') {
        ++i_;
        continue;
      }
      break;
    }
    // For a $local the caller passes the position after '$' and the text keeps the '$' (text[0]).
    const size_t text_start = kind == Tok::kLocal ? start - 1 : start;
    return {kind, std::string(s_.substr(text_start, i_ - text_start)), 0, start, i_};
  }

  Token op(size_t start) {
    static const char* kTwo[] = {"==", "!=", "<=", ">="};
    for (const char* two : kTwo) {
      if (s_.substr(start, 2) == two) {
        i_ += 2;
        return {Tok::kOp, two, 0, start, i_};
      }
    }
    const char c = s_[start];
    if (std::string_view("<>+-*/").find(c) != std::string_view::npos) {
      ++i_;
      return {Tok::kOp, std::string(1, c), 0, start, i_};
    }
    std::string hint;
    if (s_.substr(start, 2) == "&&") hint = " (use 'and')";
    else if (s_.substr(start, 2) == "||") hint = " (use 'or')";
    else if (c == '!') hint = " (use 'not' or '!=')";
    else if (c == '=') hint = " (use '==')";
    throw ParseFailure{start, std::string(1, c), "unexpected character" + hint};
  }

  std::string_view s_;
  size_t i_ = 0;
};

// ---------------------------------------------------------------------------------------------- parser

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

// ------------------------------------------------------------------------------------------- evaluator

const nlohmann::json* lookup(const nlohmann::json& root, std::string_view path) {
  const nlohmann::json* cur = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string_view::npos) return cur;
    start = dot + 1;
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ValueKind::kBool: return a.boolean == b.boolean;
    case ValueKind::kNumber: return a.number == b.number;
    case ValueKind::kString: return a.string == b.string;
    case ValueKind::kList:
    case ValueKind::kObject: return *a.ref == *b.ref;
    case ValueKind::kUnknown: return false;
  }
  return false;
}

struct Evaluator {
  const nlohmann::json& report;
  const Locals& locals;

  Value eval(const Node& n) const {
    switch (n.op) {
      case Op::kLiteral: return n.literal;
      case Op::kPath: return Value::FromJson(lookup(report, n.name));
      case Op::kLocal: {
        auto it = locals.find(n.name);
        return it == locals.end() ? Value::Unknown() : it->second;
      }
      case Op::kNot: {
        const Value v = eval(*n.kids[0]);
        return v.kind == ValueKind::kBool ? Value::Bool(!v.boolean) : Value::Unknown();
      }
      case Op::kNeg: {
        const Value v = eval(*n.kids[0]);
        return v.kind == ValueKind::kNumber ? Value::Number(-v.number) : Value::Unknown();
      }
      case Op::kAnd:
      case Op::kOr: {
        const bool is_and = n.op == Op::kAnd;
        const Value l = eval(*n.kids[0]);
        // Short-circuit on the deciding value (false for and, true for or).
        if (l.kind == ValueKind::kBool && l.boolean != is_and) return l;
        const Value r = eval(*n.kids[1]);
        if (r.kind == ValueKind::kBool && r.boolean != is_and) return r;
        if (l.kind == ValueKind::kBool && r.kind == ValueKind::kBool) return Value::Bool(is_and);
        return Value::Unknown();
      }
      case Op::kEq:
      case Op::kNe: {
        const Value l = eval(*n.kids[0]);
        const Value r = eval(*n.kids[1]);
        if (!l.known() || !r.known() || l.kind != r.kind) return Value::Unknown();
        const bool eq = values_equal(l, r);
        return Value::Bool(n.op == Op::kEq ? eq : !eq);
      }
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe: {
        const Value l = eval(*n.kids[0]);
        const Value r = eval(*n.kids[1]);
        int cmp;
        if (l.kind == ValueKind::kNumber && r.kind == ValueKind::kNumber) {
          cmp = l.number < r.number ? -1 : (l.number > r.number ? 1 : 0);
        } else if (l.kind == ValueKind::kString && r.kind == ValueKind::kString) {
          cmp = l.string.compare(r.string);
          cmp = cmp < 0 ? -1 : (cmp > 0 ? 1 : 0);
        } else {
          return Value::Unknown();
        }
        switch (n.op) {
          case Op::kLt: return Value::Bool(cmp < 0);
          case Op::kLe: return Value::Bool(cmp <= 0);
          case Op::kGt: return Value::Bool(cmp > 0);
          default: return Value::Bool(cmp >= 0);
        }
      }
      case Op::kAdd:
      case Op::kSub:
      case Op::kMul:
      case Op::kDiv: {
        const Value l = eval(*n.kids[0]);
        const Value r = eval(*n.kids[1]);
        if (l.kind != ValueKind::kNumber || r.kind != ValueKind::kNumber) return Value::Unknown();
        switch (n.op) {
          case Op::kAdd: return Value::Number(l.number + r.number);
          case Op::kSub: return Value::Number(l.number - r.number);
          case Op::kMul: return Value::Number(l.number * r.number);
          default: return r.number == 0 ? Value::Unknown() : Value::Number(l.number / r.number);
        }
      }
      case Op::kCall: return call(n);
    }
    return Value::Unknown();
  }

  Value call(const Node& n) const {
    const std::string& f = n.name;
    if (f == "exists") return Value::Bool(eval(*n.kids[0]).known());
    if (f == "if") {  // only the chosen branch is evaluated; an unknown condition gives UNKNOWN
      const Value c = eval(*n.kids[0]);
      if (c.kind != ValueKind::kBool) return Value::Unknown();
      return eval(*n.kids[c.boolean ? 1 : 2]);
    }
    if (f == "coalesce") {
      for (const auto& k : n.kids) {
        Value v = eval(*k);
        if (v.known()) return v;
      }
      return Value::Unknown();
    }
    std::vector<Value> args;
    for (const auto& k : n.kids) {
      args.push_back(eval(*k));
      if (!args.back().known()) return Value::Unknown();
    }
    if (f == "min" || f == "max") {
      double acc = 0;
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].kind != ValueKind::kNumber) return Value::Unknown();
        acc = i == 0 ? args[i].number : (f == "min" ? std::min(acc, args[i].number) : std::max(acc, args[i].number));
      }
      return Value::Number(acc);
    }
    if (f == "contains") {
      if (args[0].kind == ValueKind::kString) {
        if (args[1].kind != ValueKind::kString) return Value::Unknown();
        return Value::Bool(args[0].string.find(args[1].string) != std::string::npos);
      }
      if (args[0].kind != ValueKind::kList) return Value::Unknown();
      for (const auto& item : *args[0].ref)
        if (values_equal(Value::FromJson(&item), args[1])) return Value::Bool(true);
      return Value::Bool(false);
    }
    if (f == "startswith") {
      if (args[0].kind != ValueKind::kString || args[1].kind != ValueKind::kString) return Value::Unknown();
      return Value::Bool(args[0].string.rfind(args[1].string, 0) == 0);
    }
    if (f == "number") {
      if (args[0].kind == ValueKind::kNumber) return args[0];
      if (args[0].kind != ValueKind::kString || args[0].string.empty()) return Value::Unknown();
      const char* s = args[0].string.c_str();
      char* end = nullptr;
      const double v = std::strtod(s, &end);
      if (end == s || *end != '\0') return Value::Unknown();
      return Value::Number(v);
    }
    if (f == "len") {
      if (args[0].kind == ValueKind::kString) return Value::Number(static_cast<double>(args[0].string.size()));
      if (args[0].kind == ValueKind::kList || args[0].kind == ValueKind::kObject)
        return Value::Number(static_cast<double>(args[0].ref->size()));
      return Value::Unknown();
    }
    return Value::Unknown();
  }
};

void collect_paths(const Node& n, std::set<std::string>& out) {
  if (n.op == Op::kPath) out.insert(n.name);
  if (n.op == Op::kLocal) out.insert("$" + n.name);
  for (const auto& k : n.kids) collect_paths(*k, out);
}

std::string bracket(const Value& v) {
  if (v.kind == ValueKind::kBool) return v.boolean ? "[true]   " : "[false]  ";
  if (!v.known()) return "[unknown]";
  return "[" + v.describe() + "]";
}

void explain_node(const Node& n, std::string_view text, const Evaluator& ev, int depth, std::string& out) {
  const Value v = ev.eval(n);
  out += std::string(static_cast<size_t>(depth), ' ') + bracket(v) + " " +
         std::string(text.substr(n.begin, n.end - n.begin));
  const bool expand = n.op == Op::kAnd || n.op == Op::kOr || n.op == Op::kNot;
  if (!expand) {
    std::set<std::string> paths;
    collect_paths(n, paths);
    if (!paths.empty() && !(n.op == Op::kPath && v.known())) {
      std::string vals;
      for (const auto& p : paths) {
        Value pv;
        if (p[0] == '$') {
          auto it = ev.locals.find(p.substr(1));
          if (it != ev.locals.end()) pv = it->second;
        } else {
          pv = Value::FromJson(lookup(ev.report, p));
        }
        if (!vals.empty()) vals += ", ";
        vals += p + " = " + pv.describe();
      }
      out += "   (" + vals + ")";
    }
  }
  out += "\n";
  if (!expand) return;
  // Flatten chains of the same operator (a and b and c) into siblings.
  std::vector<const Node*> items;
  std::vector<const Node*> stack{n.kids.rbegin()->get()};
  if (n.kids.size() == 2) stack.push_back(n.kids[0].get());
  while (!stack.empty()) {
    const Node* k = stack.back();
    stack.pop_back();
    // Same operator without parentheses of its own (its text is not wrapped) -> flatten.
    if (k->op == n.op && n.op != Op::kNot && text[k->begin] != '(') {
      stack.push_back(k->kids[1].get());
      stack.push_back(k->kids[0].get());
    } else {
      items.push_back(k);
    }
  }
  for (const Node* k : items) explain_node(*k, text, ev, depth + 2, out);
}

}  // namespace

// -------------------------------------------------------------------------------------------- Expression

StatusOr<Expression> Expression::Parse(std::string_view text,
                                       const std::map<std::string, StaticType, std::less<>>& locals) {
  try {
    Lexer lexer(text);
    Parser parser(text, lexer.run(), locals);
    Expression e;
    e.text_ = std::string(text);
    e.root_ = parser.parse();
    return e;
  } catch (const ParseFailure& f) {
    return BadInput("column " + std::to_string(f.pos + 1) + " near '" + f.token + "': " + f.message);
  } catch (const std::exception& ex) {
    return Internal(std::string("expression parser failed: ") + ex.what());
  }
}

Value Expression::Evaluate(const nlohmann::json& report, const Locals& locals) const {
  if (!root_) return Value::Unknown();
  return Evaluator{report, locals}.eval(*root_);
}

std::string Expression::Explain(const nlohmann::json& report, const Locals& locals, int indent) const {
  std::string out;
  if (root_) explain_node(*root_, text_, Evaluator{report, locals}, indent, out);
  return out;
}

StaticType Expression::type() const { return root_ ? root_->type : StaticType::kAny; }

std::vector<std::string> Expression::Paths() const {
  std::set<std::string> out;
  if (root_) collect_paths(*root_, out);
  return {out.begin(), out.end()};
}

}  // namespace profile_train::rules::expr
