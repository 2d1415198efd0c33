// The one byte-size parser (--max-input-size, --max-memory).
#include "profile_train/common/byte_size.h"

#include <gtest/gtest.h>

using profile_train::parse_byte_size;

TEST(ByteSize, UnitsAreBinaryAnyCaseWithOptionalBOrIB) {
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("4096b"), 4096u);
  EXPECT_EQ(*parse_byte_size("16G"), uint64_t{16} << 30);
  EXPECT_EQ(*parse_byte_size("16gb"), uint64_t{16} << 30);
  EXPECT_EQ(*parse_byte_size("512MiB"), uint64_t{512} << 20);
  EXPECT_EQ(*parse_byte_size("40M"), uint64_t{40} << 20);
  EXPECT_EQ(*parse_byte_size("3k"), 3072u);
  EXPECT_EQ(*parse_byte_size("2T"), uint64_t{2} << 40);
  EXPECT_EQ(*parse_byte_size("1.5g"), uint64_t{3} << 29);
  EXPECT_EQ(*parse_byte_size("1e9"), 1000000000u);
}

TEST(ByteSize, AnythingElseIsOneReasonNotAThrowOrAWrap) {
  for (const char* bad : {"", "0", "0.1", "-5M", "+5M", " 5M", "5 M", "12Q", "5MM", "5Mx", "inf", "nan", "1e999",
                          "0x10", "1p4", "M", "16777216T", "1e300k"}) {
    auto r = parse_byte_size(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' was accepted as " << (r.ok() ? *r : 0);
    if (!r.ok()) EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(*parse_byte_size("16777215T"), uint64_t{16777215} << 40);  // the largest whole T under 2^64
}
