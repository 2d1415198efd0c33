#include "profile_train/common/terminal.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "profile_train/common/utf8.h"

namespace profile_train {

std::string terminal_safe(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) {
      out += kReplacementChar;
      ++i;
      continue;
    }
    const bool c0 = cp < 0x20 || cp == 0x7F;
    const bool c1 = cp >= 0x80 && cp <= 0x9F;
    // Bidirectional embeddings/overrides/isolates reorder what the user sees ("Trojan source").
    const bool bidi = (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F;
    if (cp == '\t' || (cp == '\n' && keep_newlines) || !(c0 || c1 || bidi)) {
      out.append(s.data() + i, len);
    } else if (c0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    }
    i += len;
  }
  return out;
}

bool use_color(int fd) {
  if (std::getenv("NO_COLOR") != nullptr) return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(fd) == 1;
}

Progress::Progress(std::ostream& out, std::string label, bool tty)
    : out_(out), label_(std::move(label)), tty_(tty), start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::update(uint64_t done, uint64_t total, const std::string& unit) {
  const auto now = std::chrono::steady_clock::now();
  const auto since = now - last_;
  if (shown_ && since < (tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000))) return;
  if (!shown_ && now - start_ < std::chrono::milliseconds(500)) return;  // short work: stay quiet
  last_ = now;
  shown_ = true;
  char buf[160];
  if (total > 0) {
    std::snprintf(buf, sizeof buf, "%s: %5.1f%% (%llu/%llu%s%s)", label_.c_str(), 100.0 * double(done) / double(total),
                  static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                  unit.empty() ? "" : " ", unit.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%s: %llu%s%s", label_.c_str(), static_cast<unsigned long long>(done),
                  unit.empty() ? "" : " ", unit.c_str());
  }
  if (tty_) out_ << "\r\033[K" << buf << std::flush;
  else out_ << buf << '\n' << std::flush;
}

void Progress::finish(const std::string& message) {
  if (finished_) return;
  finished_ = true;
  if (!shown_) return;
  if (tty_) out_ << "\r\033[K";
  if (!message.empty()) out_ << label_ << ": " << message << '\n';
  out_ << std::flush;
}

Progress::~Progress() { finish(); }

}  // namespace profile_train
