// Number formatting shared by the text and HTML writers.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace profile_train {

// `v` in fixed notation with `decimals` digits after the point ("12.3").
inline std::string format_fixed(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// `v` through one printf conversion of a double, e.g. "%.1f%%" -> "12.3%" (never cut, whatever its length).
inline std::string format_printf(const char* f, double v) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, f, v);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, f, v);
  return out;
}

// `v` with `digits` significant digits in fixed notation, never fewer than 0 nor more than 6 decimals:
// 0.1234 -> "0.123", 12.34 -> "12.3", 1234.6 -> "1235" (rates below 1 keep their digits: "0.12", not "0.1").
inline std::string format_significant(double v, int digits = 3) {
  if (!std::isfinite(v) || v == 0) return format_fixed(v, 0);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  int decimals = digits - 1 - magnitude;
  decimals = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;
  return format_fixed(v, decimals);
}

// Bytes in binary units with one decimal ("803.0 KiB", "22.5 GiB"; under 1 KiB: "512 B"), the memory budget's
// and the tuner's memory prediction's one spelling.
inline std::string format_bytes_binary(double v) {
  static const char* const kUnit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(v) >= 1024.0 && u < 4) v /= 1024.0, ++u;
  return u == 0 ? format_fixed(v, 0) + " B" : format_fixed(v, 1) + " " + kUnit[u];
}

// A count with thousands separators ("1,813,641"; "-12,000"; "512").
inline std::string format_count(long long v) {
  std::string digits = std::to_string(v < 0 ? -(v + 1) + 1ULL : static_cast<unsigned long long>(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace profile_train
