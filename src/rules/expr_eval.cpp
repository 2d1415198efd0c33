// Evaluation of an expression's AST over a report (three-valued: see include/profile_train/rules/expr.h) and
// its explanation, one line per sub-condition.
#include <algorithm>
#include <cmath>

#include "expr_internal.h"

namespace profile_train::rules::expr::detail {
namespace {

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

void collect_paths(const Node& n, std::set<std::string>& out) {
  if (n.op == Op::kPath) out.insert(n.name);
  if (n.op == Op::kLocal) out.insert("$" + n.name);
  for (const auto& k : n.kids) collect_paths(*k, out);
}

Value evaluate(const Node& n, const nlohmann::json& report, const Locals& locals) {
  return Evaluator{report, locals}.eval(n);
}

void explain(const Node& n, std::string_view text, const nlohmann::json& report, const Locals& locals, int indent,
             std::string& out) {
  explain_node(n, text, Evaluator{report, locals}, indent, out);
}

}  // namespace profile_train::rules::expr::detail
