// A streaming, validating JSON tokenizer for large trace files (owner: trace component).
//
// Design: decompressed bytes are read in chunks into one growable buffer. The caller parses one *element*
// at a time (an array element, a top-level member) through `element(f)`: `f` reads tokens straight from the
// buffer; if it runs past the buffered data it throws NeedMore, the buffer is compacted/refilled (growing
// only when a single element is larger than the buffer) and `f` runs again from the element's start. So `f`
// must only commit its results when it returns. Memory is bounded by max(chunk, largest element) and the
// hot path (no escapes) hands out string_views into the buffer without allocating.
//
// Errors: malformed JSON, truncation and nesting deeper than `max_depth` throw JsonError (offset + reason);
// a failing source throws SourceError with its Status. Both are caught by the importer and turned into a
// Status; no exception leaves the importer.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "profile_train/common/huge_pages.h"
#include "profile_train/trace/importer.h"

namespace profile_train::trace::detail {

struct NeedMore {};
struct JsonError {
  uint64_t offset;  // byte offset in the decompressed stream
  std::string what;
};
// Valid JSON that is not a trace of the expected shape (e.g. no traceEvents array).
struct FormatError {
  std::string what;
};
struct SourceError {
  Status status;
};

// A number token as written in the source, interpreted on demand.
struct NumberText {
  std::string_view text;
  bool integral = true;  // no '.', no exponent
  // Set by JsonReader::read_number: the text is [-]int_digits[.frac_digits][exponent], already validated,
  // and at least 8 bytes past any of its digits are readable (the buffer's padding), so the conversions
  // may read whole words.
  bool scanned = false;
  bool exponent = false;
  uint32_t int_digits = 0, frac_digits = 0;
};

// Eight bytes at a time over ASCII digits (SWAR). Byte 0 of a word is the first character (little-endian
// targets; elsewhere the scalar loops are used).
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
inline constexpr bool kSwarDigits = true;
#else
inline constexpr bool kSwarDigits = false;
#endif

inline uint64_t load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// The high bit of each byte of `w` that is not an ASCII digit ('0'..'9' is 0x30..0x39: high nibble 3, and
// adding 6 keeps it 3). A carry out of a byte >= 0xFA only disturbs the bytes after it, which come after a
// non-digit anyway.
inline uint64_t non_digit_bytes(uint64_t w) {
  constexpr uint64_t kHi = 0xF0F0F0F0F0F0F0F0ull, k3 = 0x3030303030303030ull, k6 = 0x0606060606060606ull;
  const uint64_t x = ((w & kHi) ^ k3) | (((w + k6) & kHi) ^ k3);  // non-zero bytes: not digits
  constexpr uint64_t k7f = 0x7F7F7F7F7F7F7F7Full;
  return (x | ((x & k7f) + k7f)) & 0x8080808080808080ull;
}

// The value of 8 digit bytes: pairs, then quadruples, then the whole, each step in every lane at once.
inline uint64_t parse8_word(uint64_t w) {
  uint64_t v = w - 0x3030303030303030ull;                              // 8 lanes of 0..9
  v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFull;                    // 4 lanes of 0..99
  v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFull;                  // 2 lanes of 0..9999
  return (v * 10000 + (v >> 32)) & 0xFFFFFFFFull;                     // 0..99999999
}
inline uint64_t parse8_digits(const char* p) { return parse8_word(load8(p)); }

// The value of the n (1..8) digits at p, reading the 8 bytes at p: the digits are shifted to the top of the
// word and '0's fill the bottom, so that one parse8_word does it without a loop.
inline uint64_t parse_upto8_digits(const char* p, size_t n) {
  const unsigned shift = 8 * static_cast<unsigned>(8 - n);  // 0..56
  return parse8_word((load8(p) << shift) | (~(~uint64_t{0} << shift) & 0x3030303030303030ull));
}

// The value of the n (1..16) digits at p, reading up to 16 bytes from p.
inline uint64_t parse_upto16_digits(const char* p, size_t n) {
  if (n <= 8) return parse_upto8_digits(p, n);
  static constexpr uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
  return parse8_digits(p) * kPow10[n - 8] + parse_upto8_digits(p + 8, n - 8);
}

// Number of ASCII digits in [p, e).
inline size_t count_digits(const char* p, const char* e) {
  const char* q = p;
  if constexpr (kSwarDigits) {
    while (e - q >= 8) {
      const uint64_t m = non_digit_bytes(load8(q));
      if (m != 0) return static_cast<size_t>(q - p) + (static_cast<size_t>(__builtin_ctzll(m)) >> 3);
      q += 8;
    }
  }
  while (q < e && static_cast<unsigned char>(*q - '0') < 10) ++q;
  return static_cast<size_t>(q - p);
}

// The value of the `n` (<= 19) digits at p.
inline uint64_t parse_digits(const char* p, size_t n) {
  uint64_t v = 0;
  if constexpr (kSwarDigits) {
    for (; n >= 8; n -= 8, p += 8) v = v * 100000000 + parse8_digits(p);
  }
  for (; n > 0; --n, ++p) v = v * 10 + static_cast<uint64_t>(*p - '0');
  return v;
}

class JsonReader {
 public:
  static constexpr size_t kPad = 64;  // zero bytes kept after the data: SIMD loads may read past the end

  // `max_element` bounds one element (with the whitespace inside it): the buffer never grows past it.
  // `base`: the stream offset of `src`'s first byte (a reader of a part of a stream: its offsets and error
  // positions are those of the whole stream).
  JsonReader(ByteSource& src, int max_depth, size_t chunk = size_t{4} << 20, uint64_t max_element = UINT64_MAX,
             uint64_t base = 0)
      : src_(src), max_depth_(max_depth), chunk_(chunk), max_element_(max_element), base_(base) {
    cap_ = chunk_;
    buf_.reset(new char[cap_ + kPad]);
    advise_huge_pages(buf_.get(), cap_ + kPad);
    std::memset(buf_.get(), 0, kPad);
    p_ = end_ = buf_.get();
  }

  int max_depth() const { return max_depth_; }
  uint64_t offset() const { return base_ + static_cast<uint64_t>(p_ - buf_.get()); }
  bool at_eof() const { return eof_ && p_ >= end_; }
  // The stream offset where the next element starts (whitespace skipped; outside element() only).
  uint64_t element_offset() {
    skip_ws_between();
    return offset();
  }

  // Runs `f` until it completes without running out of buffered data (see the file comment).
  template <typename F>
  void element(F&& f) {
    skip_ws_between();
    for (;;) {
      const size_t mark = static_cast<size_t>(p_ - buf_.get());
      scratch_used_ = 0;
      try {
        f();
        return;
      } catch (const NeedMore&) {
        if (eof_) fail_at(base_ + (end_ - buf_.get()), "truncated JSON (the file ends inside a value)");
        refill(mark);
      }
    }
  }

  // Skips whitespace; returns kEof at the true end of the stream, else the next byte (not consumed).
  // Only valid outside element(): used between top-level tokens.
  static constexpr int kEof = -1;
  int peek_top() {
    int c = kEof;
    element([&] {
      skip_ws();
      if (p_ >= end_) {
        if (!eof_) throw NeedMore{};
        c = kEof;
        return;
      }
      c = static_cast<unsigned char>(*p_);
    });
    return c;
  }

  // ---- token primitives (use inside element()) ---------------------------------------------------------
  void skip_ws() {
    while (is_ws(*p_)) ++p_;
  }
  // Next non-whitespace byte, not consumed. Throws NeedMore at the end of the buffered data.
  char peek() {
    skip_ws();
    if (p_ >= end_) throw NeedMore{};
    return *p_;
  }
  void expect(char c) {
    if (peek() != c) fail_expected_char(c);
    ++p_;
  }
  // After a value inside a container: consumes ',' (returns true) or the closer (returns false).
  bool next_or_close(char closer) {
    const char c = peek();
    ++p_;
    if (c == ',') return true;
    if (c == closer) return false;
    --p_;
    fail_expected_separator(closer);
  }
  // Consumes `s` if the stream continues with it (no whitespace skipping).
  bool starts_with(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (p_ + i >= end_) throw NeedMore{};
      if (p_[i] != s[i]) return false;
    }
    p_ += s.size();
    return true;
  }
  // Consumes `closer` if it is next (empty container).
  bool try_close(char closer) {
    if (peek() == closer) {
      ++p_;
      return true;
    }
    return false;
  }

  // Reads a string token. The view points into the buffer (no escapes) or into per-element scratch
  // storage; it is valid until the current element() call returns.
  std::string_view read_string() {
    if (peek() != '"') fail_expected("expected a string");
    const char* start = ++p_;
    const char* q = find_quote_or_backslash(start);
    if (*q == '"' && q < end_) {
      p_ = q + 1;
      return std::string_view(start, static_cast<size_t>(q - start));
    }
    if (q >= end_) throw NeedMore{};
    return read_escaped(start, q);
  }
  void skip_string() {
    if (peek() != '"') fail_expected("expected a string");
    ++p_;
    for (;;) {
      const char* q = find_quote_or_backslash(p_);
      if (q >= end_) throw NeedMore{};
      if (*q == '"') {
        p_ = q + 1;
        return;
      }
      // backslash: skip it and the escaped byte (validated loosely: any byte but end of data)
      if (q + 1 >= end_) throw NeedMore{};
      p_ = q + 2;
    }
  }
  NumberText read_number() {
    skip_ws();
    const char* start = p_;
    const char* q = p_;
    NumberText n;
    if (*q == '-') ++q;
    if (!is_digit(*q)) {
      if (q >= end_) throw NeedMore{};
      p_ = q;
      fail_expected("expected a number");
    }
    const char* int_start = q;
    q = skip_digits(q);
    n.int_digits = static_cast<uint32_t>(q - int_start);
    if (*q == '.') {
      n.integral = false;
      ++q;
      if (!is_digit(*q)) {
        if (q >= end_) throw NeedMore{};
        p_ = q;
        fail("expected a digit after '.'");
      }
      const char* frac_start = q;
      q = skip_digits(q);
      n.frac_digits = static_cast<uint32_t>(q - frac_start);
    }
    if (*q == 'e' || *q == 'E') {
      n.integral = false;
      n.exponent = true;
      ++q;
      if (*q == '+' || *q == '-') ++q;
      if (!is_digit(*q)) {
        if (q >= end_) throw NeedMore{};
        p_ = q;
        fail("expected a digit in the exponent");
      }
      while (is_digit(*q)) ++q;
    }
    if (q >= end_) throw NeedMore{};  // the number might continue in the next chunk
    p_ = q;
    n.text = std::string_view(start, static_cast<size_t>(q - start));
    n.scanned = kSwarDigits;
    return n;
  }
  // The text of the list at the next token, '[' to its matching ']', and its nesting depth, without moving
  // the reader; "" when it holds '{', '}' or ':' outside strings or runs past `max_len` bytes. Nothing else is
  // checked: for a caller that only uses text it has read (validated) before, then skip_text()s it.
  // Throws NeedMore when the list is not buffered to its end.
  std::string_view peek_list_text(size_t max_len, int* nesting) {
    if (peek() != '[') return {};
    int d = 0, max_d = 0;
    const size_t avail = static_cast<size_t>(end_ - p_);
    const char* const limit = p_ + (max_len < avail ? max_len : avail);
    for (const char* q = p_; q < limit; ++q) {
      const char c = *q;
      if (c == '[') {
        if (++d > max_d) max_d = d;
      } else if (c == ']') {
        if (--d == 0) {
          *nesting = max_d;
          return std::string_view(p_, static_cast<size_t>(q + 1 - p_));
        }
      } else if (c == '"') {
        for (++q; q < limit && *q != '"'; ++q)
          if (*q == '\\') ++q;
      } else if (c == '{' || c == '}' || c == ':') {
        return {};
      }
    }
    if (limit == end_ && !eof_) throw NeedMore{};
    return {};
  }
  void skip_text(std::string_view text) { p_ = text.data() + text.size(); }

  // Skips any value; `depth` is the nesting depth of the container holding it (top-level value: 0).
  // Strings and numbers (most skipped values) inline; containers and literals out of line.
  void skip_value(int depth) {
    const char c = peek();
    if (c == '"') {
      skip_string();
    } else if (c == '-' || is_digit(c)) {
      (void)read_number();
    } else {
      skip_composite(depth);
    }
  }

  // Formats " (found 'x')" for error messages.
  std::string found() const;
  [[noreturn]] void fail(const std::string& what) const { fail_at(offset(), what); }
  [[noreturn, gnu::cold, gnu::noinline]] void fail(const char* what) const;
  [[noreturn]] static void fail_at(uint64_t off, const std::string& what) { throw JsonError{off, what}; }
  // The error paths of the token primitives, out of line so that the primitives stay small enough to inline.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_expected(const char* what) const;  // what + found()
  [[noreturn, gnu::cold, gnu::noinline]] void fail_expected_char(char c) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_expected_separator(char closer) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_too_deep() const;

  // ' ', '\n', '\r', '\t' as one bit test (one branch instead of four).
  static bool is_ws(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= ' ' && ((uint64_t{1} << u) & ((uint64_t{1} << ' ') | (1u << '\n') | (1u << '\r') | (1u << '\t'))) != 0;
  }
  static bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

 private:
  // First non-digit at or after q, inside the buffer: the zero padding after end_ stops the scan there.
  static const char* skip_digits(const char* q) {
    if constexpr (kSwarDigits) {
      for (;; q += 8) {
        const uint64_t m = non_digit_bytes(load8(q));
        if (m != 0) return q + (__builtin_ctzll(m) >> 3);
      }
    }
    while (is_digit(*q)) ++q;
    return q;
  }
  // First '"' or '\\' at or after p, or a pointer >= end_ if none is buffered.
  const char* find_quote_or_backslash(const char* p) const {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i bslash = _mm_set1_epi8('\\');
    for (;;) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
      if (m != 0) return p + __builtin_ctz(static_cast<unsigned>(m));
      p += 16;
      if (p >= end_) return end_;
    }
#else
    while (p < end_ && *p != '"' && *p != '\\') ++p;
    return p;
#endif
  }
  // Consumes whitespace before an element across refills, so whitespace between elements (however much
  // of it a hostile gzip inflates to) never accumulates in the buffer.
  void skip_ws_between() {
    for (;;) {
      skip_ws();
      if (p_ < end_ || eof_) return;
      refill(static_cast<size_t>(p_ - buf_.get()));
    }
  }
  void skip_composite(int depth);  // skip_value's general case
  std::string_view read_escaped(const char* start, const char* q);
  void skip_literal(const char* lit, size_t n);
  void refill(size_t mark);

  ByteSource& src_;
  int max_depth_;
  size_t chunk_;
  uint64_t max_element_;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  uint64_t base_ = 0;  // stream offset of buf_[0]
  bool eof_ = false;
  std::vector<char> stack_;  // skip_value's container stack (reused)
  // Decoded strings with escapes, reused across elements (capacity kept: allocation-free when warm).
  std::deque<std::string> scratch_;  // deque: growing it never moves the strings views point into
  size_t scratch_used_ = 0;
};

}  // namespace profile_train::trace::detail

namespace profile_train::trace::detail {

// Number conversions. All return false when the value does not fit (the caller counts a malformed field).
bool number_to_i64(const NumberText& n, int64_t* out);
bool number_to_double(const NumberText& n, double* out);
// Converts a microsecond count written in decimal (e.g. "4458677051847.046") to integer nanoseconds,
// reading the digits directly (no double round-trip): rounds half away from zero beyond the 3rd decimal.
bool us_text_to_ns(const NumberText& n, int64_t* out);

}  // namespace profile_train::trace::detail
