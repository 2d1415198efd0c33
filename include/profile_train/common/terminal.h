// Terminal helpers: color decision and a progress indicator for long work. Output goes to an injected
// stream; nothing here is global except the color decision's environment read.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace profile_train {

// True when `fd` is a TTY, NO_COLOR is unset and TERM is not "dumb".
bool use_color(int fd);

// Progress on one line of a TTY (\r updates, at most ~10 per second), or a line every few seconds
// otherwise. finish() ends the line. Thread-compatible, not thread-safe.
class Progress {
 public:
  Progress(std::ostream& out, std::string label, bool tty);
  void update(uint64_t done, uint64_t total, const std::string& unit = "");
  void finish(const std::string& message = "");
  ~Progress();

 private:
  std::ostream& out_;
  std::string label_;
  bool tty_;
  bool shown_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace profile_train
