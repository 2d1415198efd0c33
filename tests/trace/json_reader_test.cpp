// Unit tests of the streaming JSON reader and the number conversions.
#include <gtest/gtest.h>

#include <charconv>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "io/byte_sources.h"
#include "io/json_reader.h"

namespace profile_train::trace::detail {
namespace {

NumberText num(std::string_view s) {
  NumberText n;
  n.text = s;
  n.integral = s.find_first_of(".eE") == std::string_view::npos;
  return n;
}

TEST(JsonNumbers, MicrosecondsToNanoseconds) {
  int64_t v = 0;
  ASSERT_TRUE(us_text_to_ns(num("1623142623460111"), &v));
  EXPECT_EQ(v, 1623142623460111000);
  ASSERT_TRUE(us_text_to_ns(num("4458677051847.046"), &v));
  EXPECT_EQ(v, 4458677051847046);
  ASSERT_TRUE(us_text_to_ns(num("0.0004"), &v));
  EXPECT_EQ(v, 0);
  ASSERT_TRUE(us_text_to_ns(num("0.0005"), &v));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(us_text_to_ns(num("-0.0005"), &v));
  EXPECT_EQ(v, -1);
  ASSERT_TRUE(us_text_to_ns(num("2.5"), &v));
  EXPECT_EQ(v, 2500);
  ASSERT_TRUE(us_text_to_ns(num("1e3"), &v));
  EXPECT_EQ(v, 1000000);
  ASSERT_TRUE(us_text_to_ns(num("9200000000000000"), &v));  // largest accepted: 9.2e18 ns
  EXPECT_EQ(v, 9200000000000000000);
  EXPECT_FALSE(us_text_to_ns(num("9300000000000000"), &v));
  EXPECT_FALSE(us_text_to_ns(num("123456789012345678901234567890"), &v));
}

TEST(JsonNumbers, Integers) {
  int64_t v = 0;
  ASSERT_TRUE(number_to_i64(num("-42"), &v));
  EXPECT_EQ(v, -42);
  ASSERT_TRUE(number_to_i64(num("4294967295"), &v));
  EXPECT_EQ(v, 4294967295);
  ASSERT_TRUE(number_to_i64(num("7.0"), &v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(number_to_i64(num("99999999999999999999"), &v));
  EXPECT_FALSE(number_to_i64(num("1e300"), &v));
}

// Exact reference for [-]digits[.digits] (no exponent): round(value * 1000) half away from zero, in 128-bit
// integers; nullopt when the integer part is over 9.2e15 µs (the documented limit).
std::optional<int64_t> exact_us_to_ns(const std::string& s) {
  size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  i += neg;
  __int128 ip = 0, fr = 0, scale = 1;
  for (; i < s.size() && s[i] != '.'; ++i) {
    ip = ip * 10 + (s[i] - '0');
    if (ip > 9'200'000'000'000'000) return std::nullopt;
  }
  if (i < s.size()) {
    for (++i; i < s.size() && scale < static_cast<__int128>(1e30); ++i) {
      fr = fr * 10 + (s[i] - '0');
      scale *= 10;
    }
  }
  const __int128 num = ip * scale * 1000 + fr * 1000;  // value * 1000 * scale
  const __int128 ns = (2 * num + scale) / (2 * scale);
  return static_cast<int64_t>(neg ? -ns : ns);
}

TEST(JsonNumbers, MicrosecondConversionMatchesExactArithmetic) {
  std::mt19937_64 rng(11);
  auto digits = [&](int n) {
    std::string d;
    for (int k = 0; k < n; ++k) d += static_cast<char>('0' + rng() % 10);
    return d;
  };
  for (int iter = 0; iter < 200000; ++iter) {
    std::string s = (rng() % 4 == 0) ? "-" : "";
    s += digits(1 + static_cast<int>(rng() % 19));
    if (rng() % 3 != 0) s += "." + digits(static_cast<int>(rng() % 9));
    SCOPED_TRACE(s);
    int64_t v = 0;
    const auto want = exact_us_to_ns(s);
    ASSERT_EQ(us_text_to_ns(num(s), &v), want.has_value());
    if (want) {
      ASSERT_EQ(v, *want);
    }
  }
  // Exponents and integer parts too long for the fast path take the general path.
  int64_t v = 0;
  ASSERT_TRUE(us_text_to_ns(num("1.5e3"), &v));
  EXPECT_EQ(v, 1500000);
  ASSERT_TRUE(us_text_to_ns(num("12345678901234567890e-10"), &v));
  EXPECT_EQ(v, 1234567890123);
  EXPECT_FALSE(us_text_to_ns(num("123456789012345678901"), &v));
  ASSERT_TRUE(us_text_to_ns(num("000000000000000000000001.5"), &v));
  EXPECT_EQ(v, 1500);
}

TEST(JsonNumbers, IntegerConversionMatchesFromChars) {
  std::mt19937_64 rng(13);
  for (int iter = 0; iter < 200000; ++iter) {
    std::string s = (rng() % 3 == 0) ? "-" : "";
    const int n = 1 + static_cast<int>(rng() % 21);
    for (int k = 0; k < n; ++k) s += static_cast<char>('0' + rng() % 10);
    SCOPED_TRACE(s);
    int64_t want = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), want);
    const bool ok = ec == std::errc() && ptr == s.data() + s.size();
    int64_t v = 0;
    ASSERT_EQ(number_to_i64(num(s), &v), ok);
    if (ok) {
      ASSERT_EQ(v, want);
    }
  }
  int64_t v = 0;
  EXPECT_FALSE(number_to_i64(num("-"), &v));
  ASSERT_TRUE(number_to_i64(num("-9223372036854775808"), &v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_FALSE(number_to_i64(num("9223372036854775808"), &v));
}

// Numbers read by JsonReader carry their digit counts and are converted without loops; the results must be
// those of the plain conversions (tested above) of the same text, whatever the buffer boundaries.
TEST(JsonNumbers, NumbersScannedByTheReaderConvertAsTheirText) {
  std::mt19937_64 rng(17);
  std::vector<std::string> texts;
  std::string doc = "[";
  for (int i = 0; i < 20000; ++i) {
    std::string s = (rng() % 4 == 0) ? "-" : "";
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int k = 0; k < n; ++k) s += static_cast<char>('0' + rng() % 10);
    if (rng() % 2 == 0) {
      s += '.';
      const int f = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < f; ++k) s += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 10 == 0) s += "e" + std::to_string(static_cast<int>(rng() % 7) - 3);
    texts.push_back(s);
    doc += (i > 0 ? ", " : "") + s;
  }
  doc += "]";
  for (size_t chunk : {size_t{16}, size_t{29}, size_t{4096}}) {
    SCOPED_TRACE(chunk);
    MemorySource src(doc, "mem");
    JsonReader r(src, 8, chunk);
    r.element([&] { r.expect('['); });
    for (size_t i = 0; i < texts.size(); ++i) {
      NumberText scanned;
      r.element([&] {
        scanned = r.read_number();
        (void)r.next_or_close(']');
        int64_t a = 0, b = 0;
        const NumberText plain = num(texts[i]);
        ASSERT_EQ(scanned.text, texts[i]);
        ASSERT_EQ(us_text_to_ns(scanned, &a), us_text_to_ns(plain, &b)) << texts[i];
        ASSERT_EQ(a, b) << texts[i];
        a = b = 0;
        ASSERT_EQ(number_to_i64(scanned, &a), number_to_i64(plain, &b)) << texts[i];
        ASSERT_EQ(a, b) << texts[i];
      });
    }
  }
}

// Skips one value from `text` with the given chunk size; returns the error text or "" on success.
std::string skip_all(const std::string& text, size_t chunk, int max_depth = 64) {
  MemorySource src(text, "mem");
  JsonReader r(src, max_depth, chunk);
  try {
    r.element([&] { r.skip_value(0); });
    if (r.peek_top() != JsonReader::kEof) return "trailing";
    return "";
  } catch (const JsonError& e) {
    return e.what;
  }
}

TEST(JsonReader, SkipsValidValuesAcrossChunkBoundaries) {
  const std::string doc =
      R"J({"a": [1, -2.5e+3, true, false, null, "s\"\\\u00e9"], "b": {"c": {}, "d": []}, "e": "x"})J";
  for (size_t chunk : {16, 17, 23, 64, 4096}) {
    SCOPED_TRACE(chunk);
    EXPECT_EQ(skip_all(doc, chunk), "");
  }
}

TEST(JsonReader, RejectsInvalidValues) {
  EXPECT_NE(skip_all(R"J({"a" 1})J", 4096).find("expected ':'"), std::string::npos);
  EXPECT_NE(skip_all(R"J([1,])J", 4096).find("expected a JSON value"), std::string::npos);
  EXPECT_NE(skip_all(R"J([1 2])J", 4096).find("expected ','"), std::string::npos);
  EXPECT_NE(skip_all(R"J([nul])J", 4096).find("invalid literal"), std::string::npos);
  EXPECT_NE(skip_all(R"J([-])J", 4096).find("expected a number"), std::string::npos);
  EXPECT_NE(skip_all(R"J([1.])J", 4096).find("digit after '.'"), std::string::npos);
  EXPECT_NE(skip_all("[[[[1]]]]", 4096, 3).find("nesting deeper than 3"), std::string::npos);
  EXPECT_EQ(skip_all("[[[1]]]", 4096, 3), "");
  EXPECT_NE(skip_all(R"J({"a": [1, 2)J", 16).find("truncated JSON"), std::string::npos);
}

}  // namespace
}  // namespace profile_train::trace::detail
