// The shared number formats (common/format.h).
#include "profile_train/common/format.h"

#include <climits>

#include <gtest/gtest.h>

namespace profile_train {
namespace {

TEST(Format, CountsGetThousandsSeparators) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1813641), "1,813,641");
  EXPECT_EQ(format_count(-12000), "-12,000");
  EXPECT_EQ(format_count(LLONG_MIN), "-9,223,372,036,854,775,808");
}

TEST(Format, SignificantDigitsAndBinaryBytes) {
  EXPECT_EQ(format_significant(0.1234), "0.123");
  EXPECT_EQ(format_significant(1234.6), "1235");
  EXPECT_EQ(format_bytes_binary(512), "512 B");
  EXPECT_EQ(format_bytes_binary(822276), "803.0 KiB");
}

TEST(Format, PrintfConversionsAreNeverCut) {
  EXPECT_EQ(format_printf("%.1f%%", 12.345), "12.3%");
  EXPECT_EQ(format_printf("%.2f ms", 0.5), "0.50 ms");
  // 1e300 in fixed notation is 301 digits and the decimals: longer than any fixed buffer the callers had.
  const std::string huge = format_printf("%.1f", 1e300);
  EXPECT_EQ(huge.size(), 303u);
  EXPECT_EQ(huge.substr(0, 2), "10");
  EXPECT_EQ(huge.substr(huge.size() - 2), ".0");
}

}  // namespace
}  // namespace profile_train
