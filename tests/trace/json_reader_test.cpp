// Unit tests of the streaming JSON reader and the number conversions.
#include <gtest/gtest.h>

#include <string>

#include "importers/byte_sources.h"
#include "importers/json_reader.h"

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
