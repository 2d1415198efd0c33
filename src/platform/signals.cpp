// StopSignals (platform/signals.h): SIGINT / SIGTERM as a polled flag.
#include "profile_train/platform/signals.h"

#include <signal.h>

namespace profile_train::platform {
namespace {

std::atomic<std::atomic<bool>*> g_stop_flag{nullptr};  // lock-free pointer: safe to read in a handler
std::atomic<int> g_last_stop_request{0};
struct sigaction g_saved_sigint {}, g_saved_sigterm {};

void on_stop_request(int sig) {
  g_last_stop_request.store(sig);
  if (std::atomic<bool>* stop = g_stop_flag.load()) stop->store(true);
}

}  // namespace

StopSignals::StopSignals(std::atomic<bool>* stop) {
  g_stop_flag.store(stop);
  struct sigaction sa {};
  sa.sa_handler = on_stop_request;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_saved_sigint);
  ::sigaction(SIGTERM, &sa, &g_saved_sigterm);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &g_saved_sigint, nullptr);
  ::sigaction(SIGTERM, &g_saved_sigterm, nullptr);
  g_stop_flag.store(nullptr);
}

int StopSignals::last_signal() { return g_last_stop_request.load(); }

}  // namespace profile_train::platform
