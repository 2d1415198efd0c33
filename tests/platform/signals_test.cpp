// StopSignals (platform/signals.h): a real SIGTERM / SIGINT sets the flag and is recorded instead of ending the
// process, and the handler that was there before comes back afterwards.
#include "profile_train/platform/signals.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>

namespace profile_train::platform {
namespace {

std::atomic<int> g_previous_handler_calls{0};
void previous_handler(int) { g_previous_handler_calls.fetch_add(1); }

TEST(StopSignals, ASignalSetsTheFlagAndThePreviousHandlerComesBack) {
  struct sigaction mine {}, saved {};
  mine.sa_handler = previous_handler;
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(::sigaction(SIGTERM, &mine, &saved), 0);
  std::atomic<bool> stop{false};
  {
    StopSignals watch(&stop);
    ASSERT_EQ(::raise(SIGTERM), 0);  // delivered before raise returns (a single-threaded test process)
    EXPECT_TRUE(stop.load());
    EXPECT_EQ(StopSignals::last_signal(), SIGTERM);
    EXPECT_EQ(g_previous_handler_calls.load(), 0);
    ASSERT_EQ(::raise(SIGINT), 0);
    EXPECT_EQ(StopSignals::last_signal(), SIGINT);
  }
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(g_previous_handler_calls.load(), 1);  // ours again, not the watch's
  ::sigaction(SIGTERM, &saved, nullptr);
}

TEST(StopSignals, WithoutASignalTheFlagStaysClear) {
  std::atomic<bool> stop{false};
  { StopSignals watch(&stop); }
  EXPECT_FALSE(stop.load());
}

}  // namespace
}  // namespace profile_train::platform
