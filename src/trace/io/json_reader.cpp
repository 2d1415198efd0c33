#include "io/json_reader.h"

#include <algorithm>

namespace profile_train::trace::detail {

std::string JsonReader::found() const {
  if (p_ >= end_) return eof_ ? " (found the end of the file)" : "";
  const auto u = static_cast<unsigned char>(*p_);
  if (u >= 0x20 && u < 0x7f) return std::string(" (found '") + *p_ + "')";
  static const char* hex = "0123456789abcdef";
  return std::string(" (found byte 0x") + hex[u >> 4] + hex[u & 15] + ")";
}

void JsonReader::fail(const char* what) const { fail_at(offset(), what); }

void JsonReader::fail_expected(const char* what) const { fail(what + found()); }

void JsonReader::fail_expected_char(char c) const { fail(std::string("expected '") + c + "'" + found()); }

void JsonReader::fail_expected_separator(char closer) const {
  fail(std::string("expected ',' or '") + closer + "'" + found());
}

void JsonReader::fail_too_deep() const { fail("nesting deeper than " + std::to_string(max_depth_) + " levels"); }

void JsonReader::refill(size_t mark) {
  char* buf = buf_.get();
  const size_t keep = static_cast<size_t>(end_ - buf) - mark;
  if (mark > 0) std::memmove(buf, buf + mark, keep);
  base_ += mark;
  // Grow only when the element being parsed does not leave room for half a chunk.
  if (cap_ - keep < chunk_ / 2) {
    if (keep >= max_element_)
      throw FormatError{"one JSON value at byte " + std::to_string(base_) +
                        " (an event or a top-level member, whitespace included) is larger than " +
                        std::to_string(max_element_ >> 20) + " MiB (limit)"};
    const size_t new_cap = std::max(cap_ * 2, keep + chunk_);
    std::unique_ptr<char[]> bigger(new char[new_cap + kPad]);
    advise_huge_pages(bigger.get(), new_cap + kPad);
    std::memcpy(bigger.get(), buf, keep);
    buf_ = std::move(bigger);
    cap_ = new_cap;
    buf = buf_.get();
  }
  size_t filled = keep;
  // Read until at least half a chunk is buffered (gzip sources return small pieces) or the stream ends.
  while (filled < cap_ && filled - keep < chunk_ / 2) {
    auto got = src_.read(buf + filled, cap_ - filled);
    if (!got.ok()) throw SourceError{got.status()};
    if (*got == 0) {
      eof_ = true;
      break;
    }
    filled += *got;
  }
  std::memset(buf + filled, 0, kPad);
  p_ = buf;
  end_ = buf + filled;
}

void JsonReader::skip_literal(const char* lit, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p_ + i >= end_) throw NeedMore{};
    if (p_[i] != lit[i]) {
      p_ += i;
      fail(std::string("invalid literal (expected '") + lit + "')" + found());
    }
  }
  p_ += n;
}

void JsonReader::skip_composite(int depth) {
  stack_.clear();
  for (;;) {
    // At the start of a value.
    char c = peek();
    if (c == '{' || c == '[') {
      if (depth + static_cast<int>(stack_.size()) + 1 > max_depth_) fail_too_deep();
      ++p_;
      const char closer = c == '{' ? '}' : ']';
      if (try_close(closer)) {
        // empty container: fall through to "after a value"
      } else {
        stack_.push_back(closer);
        if (closer == '}') {
          skip_string();
          expect(':');
        }
        continue;
      }
    } else if (c == '"') {
      skip_string();
    } else if (c == '-' || is_digit(c)) {
      (void)read_number();
    } else if (c == 't') {
      skip_literal("true", 4);
    } else if (c == 'f') {
      skip_literal("false", 5);
    } else if (c == 'n') {
      skip_literal("null", 4);
    } else {
      fail_expected("expected a JSON value");
    }
    // After a value: close containers as long as they end here.
    for (;;) {
      if (stack_.empty()) return;
      const char closer = stack_.back();
      if (next_or_close(closer)) {
        if (closer == '}') {
          skip_string();
          expect(':');
        }
        break;  // next value
      }
      stack_.pop_back();
    }
  }
}

namespace {
void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string_view JsonReader::read_escaped(const char* start, const char* q) {
  if (scratch_used_ == scratch_.size()) scratch_.emplace_back();
  std::string& out = scratch_[scratch_used_++];
  out.assign(start, static_cast<size_t>(q - start));
  const char* p = q;
  auto read_hex4 = [&](const char* at) -> uint32_t {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      if (at + i >= end_) throw NeedMore{};
      const int h = hex_value(at[i]);
      if (h < 0) {
        p_ = at + i;
        fail("invalid \\u escape in a string");
      }
      v = (v << 4) | static_cast<uint32_t>(h);
    }
    return v;
  };
  for (;;) {
    const char* r = find_quote_or_backslash(p);
    if (r >= end_) throw NeedMore{};
    out.append(p, static_cast<size_t>(r - p));
    if (*r == '"') {
      p_ = r + 1;
      return out;
    }
    if (r + 1 >= end_) throw NeedMore{};
    const char e = r[1];
    p = r + 2;
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = read_hex4(p);
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {  // high surrogate: a low one should follow
          if (p + 1 >= end_) throw NeedMore{};
          if (p[0] == '\\' && p[1] == 'u') {
            const uint32_t lo = read_hex4(p + 2);
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              p += 6;
            } else {
              cp = 0xFFFD;
            }
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;  // lone low surrogate
        }
        append_utf8(out, cp);
        break;
      }
      default:
        p_ = r;
        fail("invalid escape in a string");
    }
  }
}

}  // namespace profile_train::trace::detail

#include <charconv>
#include <cmath>

namespace profile_train::trace::detail {

bool number_to_double(const NumberText& n, double* out) {
  const char* b = n.text.data();
  const char* e = b + n.text.size();
  auto [ptr, ec] = std::from_chars(b, e, *out, std::chars_format::general);
  return ec == std::errc() && ptr == e && std::isfinite(*out);
}

bool number_to_i64(const NumberText& n, int64_t* out) {
  // Scanned by the reader: the digit count is known and whole words may be read.
  if (n.scanned && n.integral && n.int_digits <= 16) {
    const bool neg = n.text[0] == '-';
    const auto v = static_cast<int64_t>(parse_upto16_digits(n.text.data() + neg, n.int_digits));
    *out = neg ? -v : v;
    return true;
  }
  // Fast path: a JSON integer of at most 18 digits always fits; longer ones go through from_chars.
  if (n.integral && !n.text.empty() && n.text.size() <= 18) {
    const char* p = n.text.data();
    const size_t len = n.text.size();
    const bool neg = *p == '-';
    const size_t digits = len - neg;
    if (digits > 0 && count_digits(p + neg, p + len) == digits) {
      const auto v = static_cast<int64_t>(parse_digits(p + neg, digits));
      *out = neg ? -v : v;
      return true;
    }
  }
  if (n.integral) {
    const char* b = n.text.data();
    auto [ptr, ec] = std::from_chars(b, b + n.text.size(), *out);
    return ec == std::errc() && ptr == b + n.text.size();
  }
  double d = 0;
  if (!number_to_double(n, &d)) return false;
  if (!(d > -9.2e18 && d < 9.2e18)) return false;
  *out = std::llround(d);
  return true;
}

namespace {

// us_text_to_ns for any text: exponents, over-long integer parts.
bool us_text_to_ns_general(const NumberText& n, int64_t* out) {
  std::string_view t = n.text;
  bool neg = false;
  if (!t.empty() && t[0] == '-') {
    neg = true;
    t.remove_prefix(1);
  }
  const size_t exp_at = t.find_first_of("eE");
  if (exp_at != std::string_view::npos) {  // rare: go through long double
    double d = 0;
    if (!number_to_double(n, &d)) return false;
    const long double ns = static_cast<long double>(d) * 1000.0L;
    if (!(ns > -9.2e18L && ns < 9.2e18L)) return false;
    *out = std::llroundl(ns);
    return true;
  }
  uint64_t ip = 0;
  size_t i = 0;
  for (; i < t.size() && t[i] != '.'; ++i) {
    if (ip > (uint64_t{1} << 62) / 10) return false;  // keeps ip*1000 far inside int64
    ip = ip * 10 + static_cast<uint64_t>(t[i] - '0');
  }
  uint64_t frac = 0;
  int digits = 0;
  bool round_up = false;
  if (i < t.size()) {  // t[i] == '.'
    for (size_t j = i + 1; j < t.size(); ++j) {
      const int d = t[j] - '0';
      if (digits < 3) {
        frac = frac * 10 + static_cast<uint64_t>(d);
        ++digits;
      } else {
        if (digits == 3) round_up = d >= 5;
        ++digits;
        break;
      }
    }
  }
  while (digits < 3) {
    frac *= 10;
    ++digits;
  }
  if (ip > uint64_t{9'200'000'000'000'000}) return false;  // ip * 1000 + 999 must fit in int64
  uint64_t ns = ip * 1000 + frac + (round_up ? 1 : 0);
  *out = neg ? -static_cast<int64_t>(ns) : static_cast<int64_t>(ns);
  return true;
}

}  // namespace

bool us_text_to_ns(const NumberText& n, int64_t* out) {
  if (n.scanned && !n.exponent && n.int_digits <= 16) {  // no loop: the counts are known, words readable
    const char* p = n.text.data();
    const bool neg = *p == '-';
    p += neg;
    const uint64_t ip = parse_upto16_digits(p, n.int_digits);
    uint64_t frac = 0;
    bool round_up = false;
    if (n.frac_digits > 0) {
      static constexpr uint64_t kScale[4] = {1000, 100, 10, 1};
      const size_t k = std::min<size_t>(n.frac_digits, 3);
      const char* f = p + n.int_digits + 1;
      frac = parse_upto8_digits(f, k) * kScale[k];
      round_up = n.frac_digits > 3 && f[3] >= '5';
    }
    if (ip > uint64_t{9'200'000'000'000'000}) return false;  // ip * 1000 + 999 must fit in int64
    const uint64_t ns = ip * 1000 + frac + (round_up ? 1 : 0);
    *out = neg ? -static_cast<int64_t>(ns) : static_cast<int64_t>(ns);
    return true;
  }
  // The usual form, [-]digits[.digits], eight digits at a time; anything else (an exponent, an integer part
  // over 18 digits) is left to the general version, which gives the same result for this form.
  const char* p = n.text.data();
  const char* const e = p + n.text.size();
  const bool neg = p < e && *p == '-';
  p += neg;
  const size_t int_digits = count_digits(p, e);
  if (int_digits > 18) return us_text_to_ns_general(n, out);
  const uint64_t ip = parse_digits(p, int_digits);
  p += int_digits;
  uint64_t frac = 0;  // the first 3 decimals (ns), zero-filled
  bool round_up = false;
  if (p < e && *p == '.') {
    ++p;
    const size_t frac_digits = count_digits(p, e);
    for (size_t k = 0; k < 3; ++k) frac = frac * 10 + (k < frac_digits ? static_cast<uint64_t>(p[k] - '0') : 0);
    round_up = frac_digits > 3 && p[3] >= '5';
    p += frac_digits;
  }
  if (p != e) return us_text_to_ns_general(n, out);
  if (ip > uint64_t{9'200'000'000'000'000}) return false;  // ip * 1000 + 999 must fit in int64
  const uint64_t ns = ip * 1000 + frac + (round_up ? 1 : 0);
  *out = neg ? -static_cast<int64_t>(ns) : static_cast<int64_t>(ns);
  return true;
}

}  // namespace profile_train::trace::detail
