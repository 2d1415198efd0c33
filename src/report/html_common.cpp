#include "html_common.h"

#include <cmath>
#include <iterator>

namespace profile_train::report::detail {

using nlohmann::json;

const char* const kDash = "\xE2\x80\x94";

namespace {
// In Role order (common/vocabulary.h); the static_asserts keep each table as long as its enum.
const RoleStyle kRoleStyles[] = {
    {"GPU kernels", "#4c78a8"},   // kKernel
    {"Memcpy", "#f58518"},        // kMemcpy
    {"Memset", "#e45756"},        // kMemset
    {"Communication", "#72b7b2"}, // kCommunication
    {"CUDA runtime", "#b279a2"},  // kRuntime
    {"Data loading", "#eeca3b"},  // kDataLoading
    {"CPU compute", "#54a24b"},   // kCpu
    {"Other / idle", "#bab0ac"},  // kOther
};
static_assert(std::size(kRoleStyles) == kRoleCount);

// In Bottleneck order (common/vocabulary.h).
const char* const kBottleneckLabels[] = {
    "Input pipeline (data loading)", "Host-to-device copies", "CPU overhead (launch-bound)",
    "Host\xE2\x80\x93" "device synchronization", "GPU compute", "GPU memory", "Communication",
    "CPU only (no GPU used)", "Unknown"};
static_assert(std::size(kBottleneckLabels) == kBottleneckCount);

int decimals_for(double v) {
  const double a = std::fabs(v);
  return a >= 100 ? 0 : a >= 10 ? 1 : 2;
}
}  // namespace

std::string fmt_ms(std::optional<double> ms) {
  if (!ms) return kDash;
  if (std::fabs(*ms) < 1.0 && *ms != 0) return fmt_us(*ms * 1000.0);
  if (std::fabs(*ms) >= 10000) return format_fixed(*ms / 1000.0, 2) + " s";
  return format_fixed(*ms, decimals_for(*ms)) + " ms";
}

std::string fmt_us(std::optional<double> us) {
  if (!us) return kDash;
  if (std::fabs(*us) >= 10000) return fmt_ms(*us / 1000.0);
  return format_fixed(*us, decimals_for(*us)) + " \xC2\xB5s";
}

std::string fmt_pct(std::optional<double> f) {
  if (!f) return kDash;
  const double p = *f * 100.0;
  return format_fixed(p, std::fabs(p) >= 10 || p == 0 ? 1 : 2) + "%";
}

std::string fmt_bytes(std::optional<double> b) {
  if (!b) return kDash;
  static const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = *b;
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 4) v /= 1000, ++u;
  return format_fixed(v, u == 0 ? 0 : decimals_for(v)) + " " + units[u];
}

std::string fmt_count(std::optional<double> n) {
  if (!n) return kDash;
  const double a = std::fabs(*n);
  if (a >= 1e6) return format_fixed(*n / 1e6, 2) + "M";
  if (a >= 1e4) return format_fixed(*n / 1e3, 1) + "k";
  if (a == std::floor(a)) return format_fixed(*n, 0);
  return format_fixed(*n, a >= 100 ? 0 : 1);
}

std::string fmt_gbps(std::optional<double> g) {
  if (!g) return kDash;
  return format_fixed(*g, decimals_for(*g)) + " GB/s";
}

const RoleStyle& style_of(Role role) { return kRoleStyles[static_cast<size_t>(role)]; }

std::string bottleneck_label(Bottleneck b) { return kBottleneckLabels[static_cast<size_t>(b)]; }

}  // namespace profile_train::report::detail
