// Terminal helpers: color decision and a progress indicator for long work. Output goes to an injected
// stream; nothing here is global except the color decision's environment read.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace profile_train {

// `s` made inert for a terminal: C0 controls (ESC, BEL, CR, NUL, ...), DEL, C1 controls and bidirectional
// overrides become visible escapes (\x1b, \u009b, \u202e), invalid UTF-8 becomes U+FFFD. Tabs stay;
// newlines stay only with keep_newlines (multi-line text such as a rule explanation). Every string that a
// trace, report, rule file or command line supplies goes through this before reaching stdout/stderr.
std::string terminal_safe(std::string_view s, bool keep_newlines = false);

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
