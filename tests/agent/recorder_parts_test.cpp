// A part of the recorder on its own (src/agent/core/string_table.h), constructed directly: no process-wide
// recorder, no file, no fork (the scenarios through the public API are in recorder_test.cpp, each in a child).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/string_table.h"
#include "profile_train/format/protocol.h"

namespace detail = profile_train::agent::detail;
namespace protocol = profile_train::agent::protocol;

namespace {

struct Answer {
  uint32_t id = 0;
  const char* stored = nullptr;  // the table's copy of the name; nullptr for an "other names" id
};

struct Table {
  detail::StringTable strings;
  std::mutex mu;
  std::atomic<uint64_t> bucketed{0};
  std::vector<uint8_t> flags = std::vector<uint8_t>(detail::kMaxFlaggedIds);

  Table() { strings.flags = flags.data(); }
  Answer id_of(std::string_view s, uint64_t h = 0) {
    Answer a;
    a.id = strings.id_of(s, h, mu, bucketed, &a.stored);
    return a;
  }
};

}  // namespace

TEST(RecorderParts, StringTableStopsAtItsBoundAndSharesTheOtherNames) {
  Table t;
  const std::string step = std::string(protocol::kStepRangePrefix) + "0";
  const Answer first_step = t.id_of(step);
  ASSERT_EQ(first_step.id, 1u);
  ASSERT_NE(first_step.stored, nullptr);
  EXPECT_EQ(std::string_view(first_step.stored), step);
  EXPECT_TRUE(t.strings.is_step(first_step.id));
  EXPECT_EQ(t.id_of(step).id, first_step.id);  // found again, not added

  // Room for kMaxStrings - 1 names of their own.
  for (uint32_t i = 2; i < detail::kMaxStrings; ++i) {
    const Answer a = t.id_of("name " + std::to_string(i));
    ASSERT_EQ(a.id, i);
    ASSERT_NE(a.stored, nullptr);
  }
  EXPECT_FALSE(t.strings.full.load());
  EXPECT_FALSE(t.strings.is_step(2));
  EXPECT_EQ(t.bucketed.load(), 0u);

  // The next new name freezes the table: the "other names" entries are added once, the name is not stored.
  const Answer over = t.id_of("one name too many", 5);
  EXPECT_TRUE(t.strings.full.load());
  EXPECT_EQ(over.stored, nullptr);
  EXPECT_EQ(over.id, t.strings.other_ids[5 % detail::kOtherBuckets]);
  EXPECT_EQ(t.strings.names.size(), size_t{detail::kMaxStrings} - 1 + detail::kOtherBuckets + 1);
  EXPECT_EQ(t.bucketed.load(), 1u);

  // Full: known names keep their ids (read without the lock), new ones share the hashed buckets, and a new step
  // name still marks a step.
  EXPECT_EQ(t.id_of("name 77").id, 77u);
  EXPECT_EQ(t.id_of(step).id, first_step.id);
  const Answer other = t.id_of("another new name", 6);
  EXPECT_EQ(other.id, t.strings.other_ids[6 % detail::kOtherBuckets]);
  EXPECT_NE(other.id, over.id);
  const Answer late_step = t.id_of(std::string(protocol::kStepRangePrefix) + "999999");
  EXPECT_EQ(late_step.stored, nullptr);
  EXPECT_EQ(late_step.id, t.strings.other_step_id);
  EXPECT_TRUE(t.strings.is_step(late_step.id));
  EXPECT_EQ(t.bucketed.load(), 3u);
  EXPECT_EQ(t.strings.names.size(), size_t{detail::kMaxStrings} - 1 + detail::kOtherBuckets + 1);

  // The text bound: a name longer than kMaxStringBytes is never stored, even in a table with room for names.
  Table bytes;
  const Answer huge = bytes.id_of(std::string(detail::kMaxStringBytes + 1, 'x'), 7);
  EXPECT_EQ(huge.stored, nullptr);
  EXPECT_TRUE(bytes.strings.full.load());
  EXPECT_EQ(huge.id, bytes.strings.other_ids[7 % detail::kOtherBuckets]);
  EXPECT_EQ(bytes.strings.names.size(), size_t{detail::kOtherBuckets} + 1);
  EXPECT_EQ(bytes.bucketed.load(), 1u);
}
