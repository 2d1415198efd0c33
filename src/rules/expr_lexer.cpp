// The expression language's lexer: numbers, quoted strings, metric paths (dotted identifiers with inner
// hyphens), $locals, parentheses, commas and operators, at most kMaxTokens of them.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "expr_internal.h"

namespace profile_train::rules::expr::detail {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

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

}  // namespace

std::vector<Token> lex(std::string_view text) { return Lexer(text).run(); }

}  // namespace profile_train::rules::expr::detail
