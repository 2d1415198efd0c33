// Small ASCII string helpers shared by the knob vocabulary, the tuner's --knob parser and the kernel
// classifier.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

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

}  // namespace profile_train
