// The compilation section in one line (terminal summary, report.html): graphs, breaks with where they are,
// recompiles, compile time and the compiled share of the step. Private to the report component.
#pragma once

#include <string>

#include "profile_train/common/format.h"
#include "profile_train/model/report.h"

namespace profile_train::report {

inline std::string compilation_line(const model::Compilation& c) {
  auto num = [](double v) { return format_printf(v == static_cast<int64_t>(v) ? "%.0f" : "%.2f", v); };
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (c.unique_graphs) add(std::to_string(*c.unique_graphs) + (*c.unique_graphs == 1 ? " graph" : " graphs"));
  else if (c.distinct_graphs) add(std::to_string(*c.distinct_graphs) + " distinct graphs in the window");
  if (c.forward_graphs_per_step)
    add(num(*c.forward_graphs_per_step) + " forward + " + num(c.backward_graphs_per_step.value_or(0)) + " backward graph calls/step");
  if (c.graph_breaks) {
    // Distinct breaks (file:line, reason) when the shim recorded them: dynamo's counter counts a break again at
    // every compilation of its frame (a recompile meets the same breaks).
    const int64_t distinct = c.breaks.empty() ? *c.graph_breaks : static_cast<int64_t>(c.breaks.size());
    std::string b = std::to_string(distinct) + (distinct == 1 ? " graph break" : " graph breaks");
    if (!c.breaks.empty()) {
      b += " (";
      for (size_t i = 0; i < c.breaks.size() && i < 3; ++i)
        b += (i ? "; " : "") + (c.breaks[i].where ? *c.breaks[i].where + ": " : std::string()) + c.breaks[i].reason;
      if (c.breaks.size() > 3) b += "; ...";
      b += ")";
      if (*c.graph_breaks > distinct)
        b += ", met " + std::to_string(*c.graph_breaks) + " times while compiling";
    }
    add(b);
  } else if (c.graph_breaks_per_step) {
    add(num(*c.graph_breaks_per_step) + " graph breaks/step (seen in the trace)");
  }
  if (c.recompiles) add(std::to_string(*c.recompiles) + (*c.recompiles == 1 ? " recompile" : " recompiles"));
  if (c.compile_time_s) {
    std::string t = format_printf("%.1f s compiling", *c.compile_time_s);
    if (c.compile_in_window_ms) t += format_printf(" (%.1f ms of it in the steady steps)", *c.compile_in_window_ms);
    add(t);
  } else if (c.compile_in_window_ms && *c.compile_in_window_ms > 0) {
    add(format_printf("%.1f ms compiling in the steady steps", *c.compile_in_window_ms));
  }
  if (c.gpu_compiled_share) add(format_printf("%.0f%% of GPU time compiled", 100.0 * *c.gpu_compiled_share));
  else if (c.host_compiled_share) add(format_printf("%.0f%% of the step in compiled graphs", 100.0 * *c.host_compiled_share));
  if (c.cuda_graph_share) add(format_printf("%.0f%% of GPU time in CUDA-graph replays", 100.0 * *c.cuda_graph_share));
  if (s.empty()) s = c.compiled ? "compiled code ran" : "compilation seen, no compiled code ran in the window";
  return s;
}

}  // namespace profile_train::report
