// Number formatting shared by the text and HTML writers.
#pragma once

#include <cstdio>
#include <string>

namespace profile_train {

// `v` in fixed notation with `decimals` digits after the point ("12.3").
inline std::string format_fixed(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace profile_train
