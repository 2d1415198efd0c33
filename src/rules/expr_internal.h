// The expression language's parts, shared by its files (not installed): expr_lexer.cpp (text -> tokens),
// expr_parser.cpp (tokens -> a typed AST, with the load-time checks), expr_eval.cpp (evaluation over a
// report, explanations) and expr.cpp (Value and the Expression facade of include/profile_train/rules/expr.h).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/rules/expr.h"

namespace profile_train::rules::expr {

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

namespace detail {

enum class Tok { kNumber, kString, kIdent, kLocal, kLParen, kRParen, kComma, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;  // identifier / operator / string contents
  double number = 0;
  size_t begin = 0, end = 0;
};

// A syntax or type error at byte `pos`; thrown inside the parser and turned into a Status by Expression::Parse.
struct ParseFailure {
  size_t pos;
  std::string token;
  std::string message;
};

// Bounds that keep parsing and evaluation (both recursive) far from the stack limit, with room for
// sanitizer builds; the built-in rules use at most a few dozen tokens and 4 levels.
constexpr size_t kMaxTokens = 4096;
constexpr int kMaxNesting = 64;  // parentheses, 'not', unary '-' and call arguments, counted together

// expr_lexer.cpp. Throws ParseFailure.
std::vector<Token> lex(std::string_view text);

// expr_parser.cpp: the typed AST of `tokens` (from lex(text)). Throws ParseFailure.
std::unique_ptr<Node> parse(std::string_view text, std::vector<Token> tokens,
                            const std::map<std::string, StaticType, std::less<>>& locals);

// expr_eval.cpp.
Value evaluate(const Node& n, const nlohmann::json& report, const Locals& locals);
void explain(const Node& n, std::string_view text, const nlohmann::json& report, const Locals& locals, int indent,
             std::string& out);
void collect_paths(const Node& n, std::set<std::string>& out);

}  // namespace detail
}  // namespace profile_train::rules::expr
