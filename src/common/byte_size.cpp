#include "profile_train/common/byte_size.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace profile_train {

StatusOr<uint64_t> parse_byte_size(std::string_view text) {
  const std::string s(text);
  const auto bad = [&] {
    return InvalidArgument("'" + s + "' is not a size (bytes, or a number with K, M, G or T, such as 16G or 512MiB)");
  };
  // A number first (no sign, no space, no "inf"/"nan", no hex: strtod takes all of those).
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return bad();
  for (char c : s)
    if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return bad();
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno == ERANGE || !std::isfinite(v)) return bad();
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int power = -1;
  if (unit.empty() || unit == "b") power = 0;
  else if (unit.size() <= 3 && (unit.size() == 1 || unit.substr(1) == "b" || unit.substr(1) == "ib")) {
    const char u = unit[0];
    power = u == 'k' ? 1 : u == 'm' ? 2 : u == 'g' ? 3 : u == 't' ? 4 : -1;
  }
  if (power < 0) return bad();
  const double bytes = std::ldexp(v, 10 * power);
  if (!(bytes >= 1)) return InvalidArgument("'" + s + "': a size must be at least one byte");
  if (bytes >= 18446744073709551616.0) return InvalidArgument("'" + s + "': too large");
  return static_cast<uint64_t>(bytes);
}

}  // namespace profile_train
