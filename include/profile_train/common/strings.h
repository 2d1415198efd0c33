// Small ASCII string helpers shared by the knob vocabulary, the tuner's --knob parser and the kernel
// classifier.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace profile_train {

// `s` with A-Z lowered (bytes >= 0x80 unchanged).
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `s` without leading and trailing whitespace (std::isspace).
inline std::string trim_space(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// A command as one line for notes and summaries: arguments that are empty or hold a space or a quote in single
// quotes (for reading, not for a shell), cut to at most `max_bytes` with "..." when longer.
inline std::string command_line(const std::vector<std::string>& argv, size_t max_bytes = 200) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a.find_first_of(" \t'\"") == std::string::npos && !a.empty() ? a : "'" + a + "'";
    if (s.size() > max_bytes) return s.substr(0, max_bytes - 3) + "...";
  }
  return s;
}

}  // namespace profile_train
