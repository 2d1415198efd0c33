// report.html: the efficiency section -- MFU, a log-log roofline (arithmetic intensity against achieved
// TFLOP/s; the memory roof and the compute roofs of the device drawn; a point per operator and input
// signature, its area proportional to its GPU time) and the table of efficiency.operators. Every
// program-supplied string is escaped.
#include <algorithm>
#include <cmath>
#include <string>

#include "html_common.h"

namespace profile_train::report::detail {

namespace {

constexpr double kW = 640, kH = 360, kLeft = 60, kBottom = 40, kTop = 14, kRight = 16;

struct Axis {
  double lo, hi;  // log10 of the range
  double to(double v, double px_lo, double px_hi) const {
    const double t = (std::log10(std::max(v, 1e-30)) - lo) / (hi - lo);
    return px_lo + std::clamp(t, 0.0, 1.0) * (px_hi - px_lo);
  }
};


std::string kind_color(const std::string& kind) {
  if (kind == "gemm") return "#4e79a7";
  if (kind == "conv") return "#59a14f";
  if (kind == "attention") return "#b07aa1";
  if (kind == "norm") return "#f28e2b";
  if (kind == "reduction") return "#edc948";
  return "#e15759";  // elementwise
}

void roofline_svg(Html& h, const model::Efficiency& e) {
  double ai_lo = 1e9, ai_hi = 0, tf_lo = 1e9, tf_hi = 0, max_ms = 0;
  for (const auto& r : e.operators) {
    if (!r.intensity || !r.tflops || *r.intensity <= 0 || *r.tflops <= 0) continue;
    ai_lo = std::min(ai_lo, *r.intensity), ai_hi = std::max(ai_hi, *r.intensity);
    tf_lo = std::min(tf_lo, *r.tflops), tf_hi = std::max(tf_hi, *r.tflops);
    max_ms = std::max(max_ms, r.gpu_ms_per_step);
  }
  if (ai_hi <= 0) return;
  double peak = 0;
  for (const auto& r : e.operators) peak = std::max(peak, r.peak_tflops.value_or(0.0));
  if (e.peak_tflops) peak = std::max(peak, *e.peak_tflops);
  const double bw = e.peak_tbps.value_or(0.0);
  if (peak > 0) tf_hi = std::max(tf_hi, peak);
  if (peak > 0 && bw > 0) ai_hi = std::max(ai_hi, 4 * peak / bw), ai_lo = std::min(ai_lo, peak / bw / 100);
  const Axis x{std::floor(std::log10(ai_lo)), std::ceil(std::log10(ai_hi)) + (ai_lo == ai_hi ? 1 : 0)};
  const Axis y{std::floor(std::log10(tf_lo)), std::ceil(std::log10(tf_hi * 1.5)) + (tf_lo == tf_hi ? 1 : 0)};
  auto px = [&](double ai) { return x.to(ai, kLeft, kW - kRight); };
  auto py = [&](double tf) { return y.to(tf, kH - kBottom, kTop); };
  h.raw("<svg id=\"roofline\" class=\"roofline\" viewBox=\"0 0 ").raw(f1(kW)).raw(" ").raw(f1(kH))
      .raw("\" width=\"").raw(f1(kW)).raw("\" height=\"").raw(f1(kH))
      .raw("\" role=\"img\" aria-label=\"Roofline: achieved TFLOP/s against FLOPs per byte, log-log\">\n");
  // Decade grid and labels.
  for (double d = x.lo; d <= x.hi; ++d) {
    const double X = px(std::pow(10, d));
    h.raw("<line x1=\"").raw(f1(X)).raw("\" y1=\"").raw(f1(kTop)).raw("\" x2=\"").raw(f1(X)).raw("\" y2=\"")
        .raw(f1(kH - kBottom)).raw("\" stroke=\"#ddd\"/><text x=\"").raw(f1(X)).raw("\" y=\"").raw(f1(kH - kBottom + 14))
        .raw("\" font-size=\"10\" text-anchor=\"middle\">1e").raw(format_fixed(d, 0)).raw("</text>\n");
  }
  for (double d = y.lo; d <= y.hi; ++d) {
    const double Y = py(std::pow(10, d));
    h.raw("<line x1=\"").raw(f1(kLeft)).raw("\" y1=\"").raw(f1(Y)).raw("\" x2=\"").raw(f1(kW - kRight)).raw("\" y2=\"")
        .raw(f1(Y)).raw("\" stroke=\"#ddd\"/><text x=\"").raw(f1(kLeft - 4)).raw("\" y=\"").raw(f1(Y + 3))
        .raw("\" font-size=\"10\" text-anchor=\"end\">1e").raw(format_fixed(d, 0)).raw("</text>\n");
  }
  h.raw("<text x=\"").raw(f1((kLeft + kW - kRight) / 2)).raw("\" y=\"").raw(f1(kH - 6))
      .raw("\" font-size=\"11\" text-anchor=\"middle\">arithmetic intensity (FLOPs / byte)</text>\n");
  h.raw("<text x=\"12\" y=\"").raw(f1((kTop + kH - kBottom) / 2)).raw("\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 12 ")
      .raw(f1((kTop + kH - kBottom) / 2)).raw(")\">TFLOP/s</text>\n");
  // The roofs: memory (slope bw) up to each compute roof's ridge point, then flat.
  if (bw > 0) {
    std::vector<double> roofs;
    for (const auto& r : e.operators)
      if (r.peak_tflops && std::find(roofs.begin(), roofs.end(), *r.peak_tflops) == roofs.end()) roofs.push_back(*r.peak_tflops);
    if (e.peak_tflops && std::find(roofs.begin(), roofs.end(), *e.peak_tflops) == roofs.end()) roofs.push_back(*e.peak_tflops);
    std::sort(roofs.begin(), roofs.end());
    const double a0 = std::pow(10, x.lo), top = roofs.empty() ? std::pow(10, y.hi) : roofs.back();
    const double ridge_top = top / bw;
    h.raw("<line class=\"roof-memory\" x1=\"").raw(f1(px(a0))).raw("\" y1=\"").raw(f1(py(a0 * bw))).raw("\" x2=\"")
        .raw(f1(px(ridge_top))).raw("\" y2=\"").raw(f1(py(top))).raw("\" stroke=\"#333\" stroke-width=\"2\"/>\n");
    h.raw("<text x=\"").raw(f1(px(a0) + 4)).raw("\" y=\"").raw(f1(py(a0 * bw) - 6)).raw("\" font-size=\"10\">")
        .text(format_fixed(bw, 2) + " TB/s").raw("</text>\n");
    for (double roof : roofs) {
      const double ridge = roof / bw;
      h.raw("<line class=\"roof-compute\" x1=\"").raw(f1(px(ridge))).raw("\" y1=\"").raw(f1(py(roof))).raw("\" x2=\"")
          .raw(f1(kW - kRight)).raw("\" y2=\"").raw(f1(py(roof))).raw("\" stroke=\"#333\" stroke-width=\"2\"/>\n");
      h.raw("<text x=\"").raw(f1(kW - kRight - 4)).raw("\" y=\"").raw(f1(py(roof) - 4))
          .raw("\" font-size=\"10\" text-anchor=\"end\">").text(format_fixed(roof, roof >= 100 ? 0 : 1) + " TFLOP/s")
          .raw("</text>\n");
    }
  }
  // A point per operator and input signature, area proportional to its GPU time.
  for (const auto& r : e.operators) {
    if (!r.intensity || !r.tflops || *r.intensity <= 0 || *r.tflops <= 0) continue;
    const double radius = 3 + 14 * std::sqrt(max_ms > 0 ? r.gpu_ms_per_step / max_ms : 0);
    h.raw("<circle class=\"op\" cx=\"").raw(f1(px(*r.intensity))).raw("\" cy=\"").raw(f1(py(*r.tflops)))
        .raw("\" r=\"").raw(f1(radius)).raw("\" fill=\"").raw(kind_color(r.kind)).raw("\" fill-opacity=\"0.55\" stroke=\"")
        .raw(kind_color(r.kind)).raw("\"><title>").text(r.name + " " + r.shapes.value_or("") + ": " +
                                                     format_fixed(*r.tflops, 2) + " TFLOP/s, " + fmt_ms(r.gpu_ms_per_step) +
                                                     " per step" +
                                                     (r.roof_share ? ", " + fmt_pct(r.roof_share) + " of its roof" : ""))
        .raw("</title></circle>\n");
  }
  h.raw("</svg>\n<p class=\"hint\">Colours: <span style=\"color:#4e79a7\">GEMM</span>, <span style=\"color:#59a14f\">"
        "convolution</span>, <span style=\"color:#b07aa1\">attention</span>, <span style=\"color:#e15759\">elementwise"
        "</span>, <span style=\"color:#edc948\">reduction</span>, <span style=\"color:#f28e2b\">normalization</span>; "
        "area: GPU time.</p>\n");
}

}  // namespace

void write_efficiency(Html& h, const model::Report& r) {
  const model::Efficiency& e = r.efficiency;
  if (!r.gpu.utilization || (!e.flops_known && e.kernel_classes.empty() && !e.flops_note)) return;  // no GPU: no roofline
  h.raw("<section id=\"efficiency\"><h2>Efficiency: the roofline</h2>\n<p id=\"efficiency-summary\">");
  if (e.mfu)
    h.raw("MFU <b>").text(fmt_pct(e.mfu)).raw("</b>: ").text(format_fixed(e.achieved_tflops.value_or(0), 1))
        .raw(" TFLOP/s of the ").text(format_fixed(*e.peak_tflops, 0) + " TFLOP/s " + e.precision.value_or(e.dtype.value_or("")) + " peak of the " +
                                     e.gpu_spec.value_or("device"))
        .raw(" (FLOPs of the modelled operators, ").text(fmt_pct(e.shape_coverage)).raw(" of GPU time). ");
  else if (e.achieved_tflops)
    h.raw("Achieved ").text(format_fixed(*e.achieved_tflops, 1)).raw(" TFLOP/s; the device is not in the GPU peak table "
                                                                     "(add it with --gpu-spec FILE). ");
  if (e.at_roof) h.raw("<b>").text(*e.at_roof).raw(".</b> ");
  if (e.flops_note) h.raw("<span class=\"hint\">").text(*e.flops_note).raw(".</span>");
  h.raw("</p>\n");
  if (e.flops_known) {
    roofline_svg(h, e);
    h.raw("<table id=\"efficiency-table\" class=\"sortable\"><thead><tr><th>Operator</th><th>Shapes</th><th>dtype</th>"
          "<th>GPU / step</th><th>GFLOP / call</th><th>FLOPs / byte</th><th>TFLOP/s</th><th>TB/s</th><th>Bound</th>"
          "<th>Share of roof</th></tr></thead><tbody>\n");
    for (const auto& row : e.operators) {
      h.raw("<tr><td><code>").text(row.name).raw("</code></td><td class=\"shapes\"><code>")
          .text(truncate_utf8(row.shapes.value_or(""), 160)).raw("</code></td><td>")
        .text(row.precision == "tf32" && row.dtype == "fp32" ? std::string("fp32 (TF32)") : row.dtype).raw("</td>");
      auto num = [&](std::optional<double> v, const std::string& shown) {
        h.raw("<td data-v=\"").raw(format_fixed(v.value_or(-1), 6)).raw("\">").text(shown).raw("</td>");
      };
      num(row.gpu_ms_per_step, fmt_ms(row.gpu_ms_per_step));
      num(row.gflop_per_call, format_fixed(row.gflop_per_call, row.gflop_per_call >= 1 ? 2 : 4));
      num(row.intensity, row.intensity ? format_fixed(*row.intensity, 1) : std::string(kDash));
      num(row.tflops, row.tflops ? format_fixed(*row.tflops, 2) : std::string(kDash));
      num(row.tbps, row.tbps ? format_fixed(*row.tbps, 3) : std::string(kDash));
      h.raw("<td>").text(row.bound.value_or(std::string(kDash))).raw("</td>");
      num(row.roof_share, fmt_pct(row.roof_share));
      h.raw("</tr>\n");
    }
    h.raw("</tbody></table>\n");
  } else if (!e.kernel_classes.empty()) {
    h.raw("<table id=\"efficiency-classes\"><thead><tr><th>Kernel class</th><th>GPU / step</th><th>Share</th></tr></thead><tbody>\n");
    for (const auto& k : e.kernel_classes)
      h.raw("<tr><td>").text(k.name).raw("</td><td>").text(fmt_ms(k.gpu_ms_per_step)).raw("</td><td>").text(fmt_pct(k.share))
          .raw("</td></tr>\n");
    h.raw("</tbody></table>\n");
  }
  if (e.gpu_spec_source) h.raw("<p class=\"hint\">Peaks: ").text(*e.gpu_spec_source).raw("</p>\n");
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
