// Small helpers shared by the trial runners (process_runner.cpp, ray_runner.cpp). Internal to pt_tuner.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace profile_train::tuner::detail {

// Seconds on the steady clock (durations and deadlines of measurements).
inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// n with leading zeros up to `width` digits: trial folders sort by name ("007-r1").
inline std::string zero_padded(int n, int width) {
  std::string s = std::to_string(n);
  while (static_cast<int>(s.size()) < width) s.insert(s.begin(), '0');
  return s;
}

// How `profile-train run` said its command ended, read from run's output (a trial's log): run exits 4 for any
// failed command, so its own exit code says nothing about the command's. `code` is the command's exit code,
// `signal` the signal that ended it ("SIGSEGV"), `last_line` the command's last line of output before run's own
// lines (the Python exception of a traceback). `found` is false when run printed no such line.
struct CommandEnd {
  bool found = false;
  std::optional<int> code;
  std::string signal;
  std::string last_line;
};

inline CommandEnd command_end_from_run_log(std::string_view log) {
  CommandEnd out;
  static constexpr std::string_view kExited = "profile-train run: the command exited with code ";
  static constexpr std::string_view kKilled = "profile-train run: the command was killed by ";
  size_t at = std::string_view::npos;
  for (std::string_view marker : {kExited, kKilled}) {
    size_t pos = log.rfind(marker);
    while (pos != std::string_view::npos && pos > 0 && log[pos - 1] != '\n')
      pos = pos == 0 ? std::string_view::npos : log.rfind(marker, pos - 1);
    if (pos == std::string_view::npos) continue;
    at = pos;
    out.found = true;
    const std::string_view rest = log.substr(pos + marker.size());
    const std::string_view word = rest.substr(0, rest.find_first_of(" \n;("));
    if (marker == kExited) {
      int code = 0;
      bool digits = !word.empty() && word.size() < 10;
      for (char c : word) {
        if (c < '0' || c > '9') digits = false;
        else code = code * 10 + (c - '0');
      }
      if (digits) out.code = code;
    } else {
      out.signal = std::string(word);
    }
    break;
  }
  if (!out.found) return out;
  // The command's last line before `at`, skipping what profile-train itself printed there (run's notes, the
  // agent's and the shim's lines).
  size_t end = at;
  while (end > 0) {
    size_t begin = log.rfind('\n', end - 1);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    std::string_view line = log.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty() && !line.starts_with("profile-train")) {
      out.last_line = std::string(line.substr(0, 300));
      if (line.size() > 300) out.last_line.replace(297, 3, "...");
      break;
    }
    end = begin == 0 ? 0 : begin - 1;
    if (begin == 0) break;
  }
  return out;
}

}  // namespace profile_train::tuner::detail
