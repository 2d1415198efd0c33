// Small helpers shared by the HTML writers (report, diff, job summary): number formatting, the display names
// and colours of the report's vocabularies, and safe JSON access (for the report's free-form facts). Internal to
// the report component. Nothing here throws on a missing or mistyped key.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
#include "profile_train/common/format.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/vocabulary.h"
#include "profile_train/report/escape.h"

namespace profile_train::report::detail {

// JSON access: the shared lookups of common/json_path.h.
using profile_train::find_path;
using profile_train::number_path;
using profile_train::string_path;

// Formatting; std::nullopt renders as an em dash ("not measurable").
using profile_train::format_fixed;
inline std::string f1(double v) { return format_fixed(v, 1); }  // SVG coordinates and axis labels
std::string fmt_ms(std::optional<double> ms);           // "12.3 ms" / "850 µs"
std::string fmt_us(std::optional<double> us);           // "12.3 µs"
std::string fmt_pct(std::optional<double> fraction);    // 0.123 -> "12.3%"
std::string fmt_bytes(std::optional<double> bytes);     // "1.5 GB" (decimal units)
std::string fmt_count(std::optional<double> n);         // "12", "1.2k", "3.4M"
std::string fmt_gbps(std::optional<double> gbps);       // "12.3 GB/s"
extern const char* const kDash;                        // "—"

// Display label and chart colour of each breakdown role, indexed by Role (the JSON key is name_of(role)).
struct RoleStyle {
  const char* label;
  const char* color;
};
const RoleStyle& style_of(Role role);

// Human label of a bottleneck class (Bottleneck::kInputPipeline -> "Input pipeline (data loading)").
std::string bottleneck_label(Bottleneck bottleneck);

// A JSON value as display text (strings as is, null as a dash, numbers to 4 decimals).
std::string value_to_text(const nlohmann::json& v);

// Appends escaped text or trusted markup to one output buffer.
class Html {
 public:
  Html& raw(std::string_view s) {
    out_.append(s);
    return *this;
  }
  Html& text(std::string_view s) {
    detail::append_html_escaped(out_, s);
    return *this;
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

// Report sections of html_recommendations.cpp: the plan (first, under the banner), what the host does while
// the GPU idles, and the ordered recommendations with minor fixes and notes folded.
void write_plan(Html& h, const model::Report& report);
void write_host_idle(Html& h, const model::Report& report);
void write_recommendations(Html& h, const model::Report& report);
// html_steps.cpp: how the steps were found, the steady state (steps left out and why) and the phase split.
void write_steps(Html& h, const model::Report& report);
// html_compilation.cpp: the compiled program (report.compilation); nothing when absent.
void write_compilation(Html& h, const model::Report& report);
// html_collectives.cpp: the collectives table (report.collectives); nothing when absent.
void write_collectives(Html& h, const model::Report& report);
// html_operators.cpp: operators and modules (top by GPU time, host self time, during GPU idle).
void write_operators(Html& h, const model::Report& report);
// html_efficiency.cpp: MFU, the roofline and the operators on it (efficiency).
void write_efficiency(Html& h, const model::Report& report);
// html_memory.cpp: the memory timeline, live blocks at the peak and the per-operator table (nothing without
// report.memory).
void write_memory_timeline(Html& h, const model::Report& report);
// The static/activation split and the fit line (report.memory_budget); nothing when absent.
void write_memory_budget(Html& h, const model::Report& report);
// html_gpu_panels.cpp: the top kernels, the copies (pageable vs pinned) and the GPU memory peak.
void write_kernels(Html& h, const model::Report& report);
void write_copies(Html& h, const model::Report& report);
void write_memory(Html& h, const model::Report& report);

}  // namespace profile_train::report::detail
