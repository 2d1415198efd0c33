// Unit tests of the trace model: Trace::finalize's order.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "profile_train/trace/model.h"

namespace profile_train::trace {
namespace {

// The documented order, computed the plain way: a stable sort by start, longer first.
std::vector<int64_t> reference_order(std::vector<Event> events) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.dur_ns > b.dur_ns;
  });
  std::vector<int64_t> ids;
  for (const auto& e : events) ids.push_back(e.correlation);
  return ids;
}

std::vector<int64_t> finalized_order(std::vector<Event> events) {
  Trace t;
  t.events = std::move(events);
  t.finalize();
  std::vector<int64_t> ids;
  for (const auto& e : t.events) ids.push_back(e.correlation);
  return ids;
}

TEST(TraceModel, FinalizeSortsByStartLongerFirstAndKeepsTheInputOrderOfTies) {
  std::mt19937_64 rng(7);
  for (int n : {0, 1, 2, 3, 17, 1000, 20000}) {
    for (int range : {1, 4, 1000000}) {  // few distinct values: many exact (start, dur) ties
      SCOPED_TRACE(testing::Message() << n << " events, values in [0, " << range << ")");
      std::vector<Event> ev(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        ev[static_cast<size_t>(i)].start_ns = static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
        ev[static_cast<size_t>(i)].dur_ns = static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
        ev[static_cast<size_t>(i)].correlation = i;  // identifies the event
      }
      EXPECT_EQ(finalized_order(ev), reference_order(ev));
      // Already in order (the common case for native captures): unchanged.
      std::vector<Event> sorted = ev;
      std::stable_sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) {
        return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
      });
      EXPECT_EQ(finalized_order(sorted), reference_order(sorted));
    }
  }
}

TEST(TraceModel, FinalizeOrdersNegativeAndExtremeStarts) {
  std::mt19937_64 rng(9);
  std::vector<Event> ev(5000);
  const int64_t extremes[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX};
  for (size_t i = 0; i < ev.size(); ++i) {
    ev[i].start_ns = i % 3 == 0 ? extremes[rng() % 7] : static_cast<int64_t>(rng());  // all 64 bits used
    ev[i].dur_ns = static_cast<int64_t>(rng() % 3);
    ev[i].correlation = static_cast<int64_t>(i);
  }
  EXPECT_EQ(finalized_order(ev), reference_order(ev));
}

TEST(TraceModel, FinalizeMovesWholeEvents) {
  std::vector<Event> ev(50);
  for (size_t i = 0; i < ev.size(); ++i) {
    ev[i].start_ns = static_cast<int64_t>((i * 37) % 50);
    ev[i].dur_ns = 5;
    ev[i].correlation = static_cast<int64_t>(i);
    ev[i].external_id = static_cast<int64_t>(i) * 3;
    ev[i].name = static_cast<StringId>(i + 1);
    ev[i].grid_blocks = i * 11;
    ev[i].occupancy_pct = static_cast<float>(i);
  }
  Trace t;
  t.events = ev;
  t.finalize();
  ASSERT_EQ(t.events.size(), ev.size());
  for (size_t k = 0; k < t.events.size(); ++k) {
    const Event& e = t.events[k];
    const Event& orig = ev[static_cast<size_t>(e.correlation)];
    EXPECT_EQ(e.start_ns, orig.start_ns);
    EXPECT_EQ(e.external_id, orig.external_id);
    EXPECT_EQ(e.name, orig.name);
    EXPECT_EQ(e.grid_blocks, orig.grid_blocks);
    EXPECT_EQ(e.occupancy_pct, orig.occupancy_pct);
    if (k > 0) {
      EXPECT_LE(t.events[k - 1].start_ns, e.start_ns);
    }
  }
}

}  // namespace
}  // namespace profile_train::trace
