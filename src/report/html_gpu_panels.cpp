// report.html's GPU panels: the top kernels, the host<->device copies (pageable vs pinned) and the GPU memory
// peak. Left out of a report whose run used no GPU (html.cpp, no_gpu_used). Owner: report component.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "html_common.h"

namespace profile_train::report::detail {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

using model::Report;

std::optional<double> as_number(std::optional<int64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

}  // namespace

// What the kernels compute (gpu.kernel_classes): one row per kind with its precision, the share on matrix units and
// the evidence that decided it, so a bf16 step reads bf16 here as in the roofline.
void write_kernel_classes(Html& h, const Report& r) {
  if (r.gpu.kernel_classes.empty()) return;
  const bool amd = r.device && r.device->vendor && *r.device->vendor == "amd";
  h.raw("<h3>What the kernels compute</h3>\n<table class=\"data\" id=\"kernel-classes\"><thead><tr><th>Kind</th>"
        "<th class=\"num\">GPU / step</th><th class=\"num\">Share of kernel time</th><th>Precision</th><th class=\"num\">On ")
      .raw(amd ? "matrix cores" : "tensor cores").raw("</th><th>Decided by</th></tr></thead><tbody>\n");
  for (const auto& c : r.gpu.kernel_classes) {
    std::string precisions;
    for (const auto& p : c.precisions) {
      if (p.share < 0.005 && &p != &c.precisions.front()) continue;
      precisions += (precisions.empty() ? "" : ", ") + p.precision + " " + fmt_pct(p.share);
    }
    h.raw("<tr><td>").text(c.kind).raw("</td><td class=\"num\">").text(fmt_ms(c.gpu_ms_per_step)).raw("</td><td class=\"num\">")
        .raw("<span class=\"share\"><span style=\"width:").raw(format_fixed(std::clamp(c.share, 0.0, 1.0) * 100, 1))
        .raw("%\"></span></span>").text(fmt_pct(c.share)).raw("</td><td title=\"").text(precisions).raw("\">")
        .text(c.precision).raw("</td><td class=\"num\">").text(fmt_pct(c.matrix_unit_share)).raw("</td><td>")
        .text(c.kind_from == c.precision_from ? c.kind_from : c.kind_from + " / " + c.precision_from).raw("</td></tr>\n");
  }
  h.raw("</tbody></table>\n");
}

void write_kernels(Html& h, const Report& r) {
  h.raw("<section id=\"kernels\"><h2>Top kernels</h2>\n");
  if (r.gpu.top_kernels.empty()) {
    h.raw("<p class=\"na\">No GPU kernels in this trace.</p></section>\n");
    return;
  }
  write_kernel_classes(h, r);
  h.raw("<table class=\"data\" id=\"kernels-table\"><thead><tr><th>#</th><th>Kernel</th><th class=\"num\">Calls</th>"
        "<th class=\"num\">Total (all steps)</th><th class=\"num\">Mean</th><th class=\"num\">Share of kernel time</th><th>Tensor cores</th>"
        "<th>Category</th><th>Precision</th></tr></thead><tbody>\n");
  int rank = 0;
  for (const auto& kr : r.gpu.top_kernels) {
    ++rank;
    const std::string& name = kr.name;
    const auto share = kr.share;
    h.raw("<tr><td class=\"num\">").raw(std::to_string(rank)).raw("</td><td class=\"kname\" title=\"").text(name)
        .raw("\"><code>").text(detail::truncate_utf8(name, 160)).raw("</code></td><td class=\"num\">")
        .text(fmt_count(static_cast<double>(kr.count))).raw("</td><td class=\"num\">")
        .text(fmt_ms(kr.total_ms)).raw("</td><td class=\"num\">")
        .text(fmt_us(kr.mean_us)).raw("</td><td class=\"num\"><span class=\"share\"><span style=\"width:")
        .raw(format_fixed(std::clamp(share.value_or(0.0), 0.0, 1.0) * 100, 1)).raw("%\"></span></span>")
        .text(fmt_pct(share)).raw("</td><td>");
    h.raw(kr.tensor_core ? "<span class=\"yes\">yes</span>" : "no");
    h.raw("</td><td>").text(kr.category).raw("</td><td title=\"").text("decided by " + kr.precision_from +
                                                                           (kr.library ? "; " + *kr.library : std::string()))
        .raw("\">").text(kr.precision).raw("</td></tr>\n");
  }
  h.raw("</tbody></table>\n</section>\n");
}

void write_copies(Html& h, const Report& r) {
  h.raw("<section id=\"copies\"><h2>Copies</h2>\n");
  bool any = false;
  Html body;
  using model::CopyDirection;
  using model::Memcpy;
  static const struct {
    const char* label;
    CopyDirection Memcpy::*direction;
  } kDirections[] = {{"Host \xE2\x86\x92 device", &Memcpy::h2d},
                     {"Device \xE2\x86\x92 host", &Memcpy::d2h},
                     {"Device \xE2\x86\x92 device", &Memcpy::d2d}};
  for (const auto& dir : kDirections) {
    if (!r.gpu.memcpy) break;
    const CopyDirection& c = (*r.gpu.memcpy).*dir.direction;
    if (c.count_per_step == 0) continue;  // no copies this direction
    any = true;
    const double pageable = c.pageable_bytes, pinned = c.pinned_bytes;
    const auto pf = c.pageable_fraction;
    body.raw("<tr><td>").raw(dir.label).raw("</td><td class=\"num\">").text(fmt_count(c.count_per_step))
        .raw("</td><td class=\"num\">").text(fmt_bytes(c.bytes_per_step))
        .raw("</td><td class=\"num\">").text(fmt_ms(c.time_ms_per_step))
        .raw("</td><td class=\"num\">").text(fmt_pct(c.fraction))
        .raw("</td><td class=\"num\">").text(fmt_gbps(c.bandwidth_gbps))
        .raw("</td><td><div class=\"pp\" title=\"pageable ").text(fmt_bytes(pageable)).raw(", pinned ")
        .text(fmt_bytes(pinned)).raw("\">");
    if (pf) {
      body.raw("<span class=\"pp-pageable\" style=\"width:").raw(format_fixed(std::clamp(*pf, 0.0, 1.0) * 100, 1))
          .raw("%\"></span><span class=\"pp-pinned\" style=\"width:")
          .raw(format_fixed((1 - std::clamp(*pf, 0.0, 1.0)) * 100, 1)).raw("%\"></span>");
    }
    body.raw("</div><span class=\"pp-label\">").text(pf ? fmt_pct(pf) + " pageable" : std::string("pinned/pageable unknown"))
        .raw("</span></td></tr>\n");
  }
  if (!any) {
    h.raw("<p class=\"na\">No memory copies recorded.</p></section>\n");
    return;
  }
  h.raw("<table class=\"data\" id=\"copies-table\"><thead><tr><th>Direction</th><th class=\"num\">Copies / step</th>"
        "<th class=\"num\">Bytes / step</th><th class=\"num\">Time / step</th><th class=\"num\">Share of step</th>"
        "<th class=\"num\">Achieved bandwidth</th><th>Pageable vs pinned (bytes)</th></tr></thead><tbody>\n")
      .raw(body.str()).raw("</tbody></table>\n");
  h.raw("<p class=\"hint\">Pageable host memory forces a staged, synchronous copy (typically ~10 GB/s on PCIe vs "
        "tens of GB/s pinned); <span class=\"legend-chip pp-pageable\"></span>pageable "
        "<span class=\"legend-chip pp-pinned\"></span>pinned.</p>\n</section>\n");
}

void write_memory(Html& h, const Report& r) {
  h.raw("<section id=\"memory\"><h2>GPU memory</h2>\n");
  auto peak = as_number(r.gpu.memory.peak_allocated_bytes);
  if (!peak) peak = number_path(r.facts, {"gpu", "memory_peak_bytes"});
  auto cap = as_number(r.gpu.memory.capacity_bytes);
  if (!cap && r.device) cap = as_number(r.device->total_memory_bytes);
  if (!cap) cap = number_path(r.facts, {"gpu", "memory_total_bytes"});
  auto frac = r.gpu.memory.peak_fraction;
  if (!frac && peak && cap && *cap > 0) frac = *peak / *cap;
  if (!peak) {
    h.raw("<p class=\"na\">Peak memory is not known for this trace (no allocator events).</p></section>\n");
    return;
  }
  h.raw("<div class=\"mem\"><div class=\"mem-bar\"><span class=\"mem-fill").raw(frac && *frac > 0.9 ? " mem-high" : "")
      .raw("\" style=\"width:").raw(format_fixed(std::clamp(frac.value_or(0.0), 0.0, 1.0) * 100, 1))
      .raw("%\"></span></div><div class=\"mem-text\">Peak allocated <b>").text(fmt_bytes(peak)).raw("</b> of ")
      .text(cap ? fmt_bytes(cap) : std::string("unknown capacity")).raw(" (").text(fmt_pct(frac)).raw(")</div></div>\n</section>\n");
}

}  // namespace profile_train::report::detail
