// The one UTF-8 helper: validation, repair and truncation on a character boundary.
#include <gtest/gtest.h>

#include <string>

#include "profile_train/common/utf8.h"

namespace profile_train {
namespace {

TEST(Utf8, RepairReplacesEachInvalidByteAndKeepsValidSequences) {
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9"));
  EXPECT_FALSE(is_valid_utf8("a\xFF" "b"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_EQ(to_valid_utf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(to_valid_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // cut sequence: one U+FFFD per byte
}

TEST(Utf8, TruncateNeverSplitsACharacter) {
  EXPECT_EQ(truncate_utf8("short", 10), "short");
  EXPECT_EQ(truncate_utf8("abcdef", 3), "abc\xE2\x80\xA6");
  // "é" is 2 bytes at offsets 2-3: a cut at 3 backs off to 2.
  EXPECT_EQ(truncate_utf8("ab\xC3\xA9" "cd", 3), "ab\xE2\x80\xA6");
  EXPECT_TRUE(is_valid_utf8(truncate_utf8("\xF0\x9F\x98\x80\xF0\x9F\x98\x80", 5)));
}

}  // namespace
}  // namespace profile_train
