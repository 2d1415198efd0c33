// The compilation section (compilation.h): compiled frames, graphs, Inductor kernels and CUDA-graph replays of
// the steady-state steps, and the shim's dynamo counters.
#include "profile_train/analysis/compilation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "profile_train/analysis/classify.h"
#include "profile_train/common/strings.h"
#include "report_context.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains_text(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

bool is_host_range(const Event& e) {
  return !e.is_gpu && (e.cat == Category::kCpuOp || e.cat == Category::kUserAnnotation || e.cat == Category::kPythonFunction);
}

// Inductor's kernel-kind prefixes (torch/_inductor/codegen/triton.py, prefix_is_reduction / kernel_name).
struct KindPrefix {
  const char* prefix;
  const char* kind;
};
constexpr KindPrefix kTritonKinds[] = {
    {"poi", "pointwise"}, {"red", "reduction"}, {"per", "persistent_reduction"},
    {"tem", "template"},  {"for", "foreach"},   {"spl", "split_scan"},
};

// "add_cos_sin_0" -> "add_cos_sin" (the trailing _<n> is the kernel's index in its graph).
std::optional<std::string> ops_of(std::string_view rest) {
  if (starts_with(rest, "fused_")) rest.remove_prefix(6);
  size_t end = rest.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(rest[end - 1]))) --end;
  if (end == 0) return std::nullopt;  // only the index: no op names
  if (end < rest.size() && rest[end - 1] == '_') rest = rest.substr(0, end - 1);
  if (rest.empty()) return std::nullopt;
  return std::string(rest);
}

}  // namespace

CompiledRange compiled_range_of(std::string_view n) {
  if (starts_with(n, "Torch-Compiled Region")) return CompiledRange::kFrame;
  if (n == "CompiledFunction") return CompiledRange::kForwardGraph;
  if (n == "CompiledFunctionBackward") return CompiledRange::kBackwardGraph;
  if (starts_with(n, "## Call CompiledFxGraph")) return CompiledRange::kInductorGraph;
  return CompiledRange::kNone;
}

bool is_compile_range(std::string_view n) {
  return contains_text(n, "(dynamo_timed)") || starts_with(n, "compile_fx") || contains_text(n, "compile_inner");
}

std::optional<InductorName> parse_inductor_kernel(std::string_view n) {
  if (starts_with(n, "cpp_fused_")) return InductorName{"cpp", ops_of(n.substr(4))};
  if (!starts_with(n, "triton_")) return std::nullopt;
  std::string_view rest = n.substr(7);
  if (starts_with(rest, "_")) return InductorName{"other", std::nullopt};  // triton__0d1d2d: no descriptive name
  for (const auto& k : kTritonKinds) {
    const std::string_view p = k.prefix;
    if (starts_with(rest, p) && rest.size() > p.size() && rest[p.size()] == '_')
      return InductorName{k.kind, ops_of(rest.substr(p.size() + 1))};
  }
  return InductorName{"other", ops_of(rest)};
}

namespace {

struct Range {
  TimeNs start, end;
  CompiledRange kind;
};

// Per thread, the compiled frames and forward graphs in the windows: a frame not inside another frame of its
// thread runs its forward graphs; k graphs in it are k - 1 breaks (a break with no graph on one side is not seen).
int64_t breaks_in(std::vector<Range>& r, CompiledRange graph_kind) {
  std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  int64_t breaks = 0, graphs = 0;
  TimeNs frame_end = -1;
  for (const Range& x : r) {
    if (x.kind == CompiledRange::kFrame) {
      if (x.start < frame_end) continue;  // nested: a resume function of the same outermost frame
      breaks += std::max<int64_t>(0, graphs - 1);
      graphs = 0;
      frame_end = x.end;
    } else if (x.kind == graph_kind && x.start < frame_end) {
      ++graphs;
    }
  }
  return breaks + std::max<int64_t>(0, graphs - 1);
}

std::optional<std::string> text_at(const nlohmann::json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty())
    return j[key].get<std::string>();
  return std::nullopt;
}
std::optional<int64_t> int_at(const nlohmann::json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 0)
    return j[key].get<int64_t>();
  return std::nullopt;
}
std::optional<double> number_at(const nlohmann::json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number() && j[key].get<double>() >= 0) return j[key].get<double>();
  return std::nullopt;
}

constexpr size_t kMaxEvents = 20;

std::vector<model::CompileEvent> events_at(const nlohmann::json& j, const char* key) {
  std::vector<model::CompileEvent> out;
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return out;
  for (const auto& e : j[key]) {
    auto reason = text_at(e, "reason");
    if (!reason) continue;
    model::CompileEvent ev;
    ev.reason = *reason;
    ev.where = text_at(e, "where");
    ev.count = std::max<int64_t>(1, int_at(e, "count").value_or(1));
    out.push_back(std::move(ev));
    if (out.size() == kMaxEvents) break;
  }
  return out;
}

std::string plural(int64_t k, const char* one, const char* many) { return std::to_string(k) + " " + (k == 1 ? one : many); }

constexpr size_t kMaxKernels = 10;

}  // namespace

std::optional<model::Compilation> compilation_section(const Ctx& c, const nlohmann::json& facts) {
  const trace::Trace& t = c.t;
  const TraceIndex& idx = c.idx;
  model::Compilation s;
  const double n = c.nsteps > 0 ? c.nsteps : 1;

  // Host ranges in the steady steps.
  std::unordered_map<int64_t, std::vector<Range>> by_thread;  // frames and forward graphs, for the breaks
  std::unordered_map<int64_t, Intervals> graphs_by_thread;    // every graph call, for the kernels they launch
  Intervals frames, graphs, compile;
  int64_t n_frames = 0, n_fwd = 0, n_bwd = 0, n_inductor = 0;
  std::set<std::string> fx_keys, frame_ids;
  std::map<std::string, std::pair<int64_t, TimeNs>> host_kernels;  // cpp_fused_* / triton_* host ranges
  auto thread_key = [](const Event& e) { return e.pid * 1000003 + e.tid; };
  // What a name says, decided once per distinct name (a trace repeats a few thousand names millions of times).
  // Bits: the name is torch.compile work, a compiled range, an Inductor kernel's (kSeen: decided).
  enum : uint8_t { kCompileWork = 1, kCompiled = 2, kInductorKernel = 4, kSeen = 8 };
  std::vector<uint8_t> name_kind(t.strings.size(), 0);
  auto kind_of = [&](trace::StringId id) {
    uint8_t& k = name_kind[id];
    if (k == 0) {
      const std::string_view name = t.strings.get(id);
      k = kSeen | (is_compile_range(name) ? kCompileWork : 0) |
          (compiled_range_of(name) != CompiledRange::kNone ? kCompiled : 0) |
          (parse_inductor_kernel(name) ? kInductorKernel : 0);
    }
    return k;
  };
  for (const Event& e : t.events) {
    if (!is_host_range(e)) continue;
    const uint8_t kind = kind_of(e.name);
    if (kind == kSeen || !c.in_window(e.start_ns)) continue;
    const std::string_view name = t.name(e);
    if (kind & kCompileWork) {
      compile.push_back({e.start_ns, e.end_ns()});
      continue;
    }
    const CompiledRange k = compiled_range_of(name);
    if (k == CompiledRange::kNone) {
      if (e.cat == Category::kCpuOp) {  // kInductorKernel
        auto& row = host_kernels[std::string(name)];
        ++row.first;
        row.second += e.dur_ns;
      }
      continue;
    }
    const int64_t key = thread_key(e);
    by_thread[key].push_back({e.start_ns, e.end_ns(), k});
    if (k == CompiledRange::kFrame) {
      ++n_frames;
      frames.push_back({e.start_ns, e.end_ns()});
      const size_t colon = name.find(':');
      if (colon != std::string_view::npos) {
        std::string_view id = name.substr(colon + 1);
        while (!id.empty() && id.front() == ' ') id.remove_prefix(1);
        frame_ids.insert(std::string(id));
      }
      continue;
    }
    graphs.push_back({e.start_ns, e.end_ns()});
    graphs_by_thread[key].push_back({e.start_ns, e.end_ns()});
    if (k == CompiledRange::kForwardGraph) {
      ++n_fwd;
    } else if (k == CompiledRange::kBackwardGraph) {
      ++n_bwd;
    } else {
      ++n_inductor;
      std::string_view rest = name.substr(std::string_view("## Call CompiledFxGraph").size());
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      fx_keys.insert(std::string(rest.substr(0, rest.find(' '))));
    }
  }
  frames = merge_intervals(std::move(frames));
  graphs = merge_intervals(std::move(graphs));
  compile = merge_intervals(std::move(compile));
  for (auto& [key, v] : graphs_by_thread) v = merge_intervals(std::move(v));

  // GPU kernels of the main device in the steady steps: from compiled graph calls, Inductor's, graph replays.
  TimeNs kernel_ns = 0, compiled_ns = 0, inductor_ns = 0, replay_ns = 0;
  std::map<std::string, std::pair<int64_t, TimeNs>> gpu_kernels;
  std::vector<int8_t> replay_name(t.strings.size(), -1);  // by StringId: is the launch a graph launch
  auto is_graph_launch = [&](const Event& launch) {
    int8_t& replay = replay_name[launch.name];
    if (replay < 0) {
      const std::string_view base = runtime_base_name(t.name(launch));
      replay = (starts_with(base, "cudaGraphLaunch") || starts_with(base, "hipGraphLaunch") ||
                starts_with(base, "cuGraphLaunch")) ? 1 : 0;
    }
    return replay == 1;
  };
  // A kernel's launch is looked up only when it can tell something: a graph launch somewhere in the trace, or
  // compiled graph calls on a thread.
  bool any_graph_launch = false;
  for (size_t i : idx.runtimes)
    if (is_graph_launch(t.events[i])) {
      any_graph_launch = true;
      break;
    }
  const bool need_launch = any_graph_launch || !graphs_by_thread.empty();
  for (size_t i : idx.kernels) {
    const Event& k = t.events[i];
    if (device_of(k) != idx.main_device || !c.in_window(k.start_ns)) continue;
    kernel_ns += k.dur_ns;
    if (kind_of(k.name) & kInductorKernel) {
      const std::string_view name = t.name(k);
      if (!starts_with(name, "cpp_fused_")) {
        inductor_ns += k.dur_ns;
        auto& row = gpu_kernels[std::string(name)];
        ++row.first;
        row.second += k.dur_ns;
      }
    }
    if (!need_launch) continue;
    const size_t r = k.correlation >= 0 ? idx.runtime_of(k.correlation) : TraceIndex::Correlation::kNone;
    if (r == TraceIndex::Correlation::kNone) continue;
    const Event& launch = t.events[r];
    if (is_graph_launch(launch)) replay_ns += k.dur_ns;
    auto g = graphs_by_thread.find(thread_key(launch));
    if (g != graphs_by_thread.end()) {
      const Intervals& v = g->second;
      auto it = std::upper_bound(v.begin(), v.end(), launch.start_ns, [](TimeNs x, const Interval& w) { return x < w.end; });
      if (it != v.end() && it->start <= launch.start_ns) compiled_ns += k.dur_ns;
    }
  }
  int64_t graph_launches = 0;
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (any_graph_launch && c.in_window(e.start_ns) && is_graph_launch(e)) ++graph_launches;
  }

  const nlohmann::json* cf = facts.is_object() && facts.contains("compile") && facts["compile"].is_object()
                                 ? &facts["compile"] : nullptr;
  const bool any_trace = n_frames + n_fwd + n_bwd + n_inductor > 0 || inductor_ns > 0 || !host_kernels.empty() ||
                         graph_launches > 0 || !compile.empty();
  if (!any_trace && cf == nullptr) return std::nullopt;

  if (n_frames > 0) s.evidence.push_back(plural(n_frames, "Torch-Compiled Region range (a dynamo frame)", "Torch-Compiled Region ranges (dynamo frames)"));
  if (n_fwd + n_bwd > 0)
    s.evidence.push_back(plural(n_fwd + n_bwd, "CompiledFunction / CompiledFunctionBackward call (AOTAutograd graphs)",
                                "CompiledFunction / CompiledFunctionBackward calls (AOTAutograd graphs)"));
  if (n_inductor > 0) s.evidence.push_back(plural(n_inductor, "CompiledFxGraph call (Inductor graphs)", "CompiledFxGraph calls (Inductor graphs)"));
  int64_t inductor_calls = 0;  // the GPU's kernels when it ran any (the host range of a launch is not a second kernel)
  for (const auto& [name, row] : gpu_kernels.empty() ? host_kernels : gpu_kernels) inductor_calls += row.first;
  if (inductor_calls > 0) s.evidence.push_back(plural(inductor_calls, "Inductor kernel (triton_* / cpp_fused_* name)", "Inductor kernels (triton_* / cpp_fused_* names)"));
  if (graph_launches > 0) s.evidence.push_back(plural(graph_launches, "CUDA-graph launch", "CUDA-graph launches"));
  if (!compile.empty()) s.evidence.push_back("torch.compile work (dynamo_timed ranges) inside the steady steps");
  if (cf != nullptr) s.evidence.push_back("dynamo's counters, recorded by the shim (facts.compile)");

  s.compiled = n_frames + n_fwd + n_bwd + n_inductor > 0 || inductor_ns > 0 || !host_kernels.empty() || graph_launches > 0;
  if (n_frames > 0) s.frames_per_step = r6(double(n_frames) / n);
  if (n_fwd + n_bwd + n_inductor > 0) {
    s.forward_graphs_per_step = r6(double(n_fwd > 0 ? n_fwd : n_inductor) / n);
    s.backward_graphs_per_step = r6(double(n_bwd) / n);
  }
  if (!fx_keys.empty()) s.distinct_graphs = static_cast<int64_t>(fx_keys.size());
  else if (!frame_ids.empty()) s.distinct_graphs = static_cast<int64_t>(frame_ids.size());
  if (n_frames > 0 && n_fwd + n_inductor > 0) {
    const CompiledRange graph_kind = n_fwd > 0 ? CompiledRange::kForwardGraph : CompiledRange::kInductorGraph;
    int64_t breaks = 0;
    for (auto& [key, v] : by_thread) breaks += breaks_in(v, graph_kind);
    s.graph_breaks_per_step = r6(double(breaks) / n);
  }
  if (!graphs.empty()) s.host_compiled_share = frac_or_null(double(c.clipped(graphs)), double(c.total_ns));
  if (!frames.empty())
    s.eager_in_frames_share = frac_or_null(double(c.clipped(subtract_intervals(frames, graphs))), double(c.total_ns));
  if (kernel_ns > 0 && !graphs.empty() && !idx.runtimes.empty()) s.gpu_compiled_share = frac_or_null(double(compiled_ns), double(kernel_ns));
  if (kernel_ns > 0 && s.compiled) s.inductor_kernel_share = frac_or_null(double(inductor_ns), double(kernel_ns));
  // The Inductor kernels by time: the GPU's when it ran any, else the host's (CPU kernels with their ranges).
  const bool on_gpu = !gpu_kernels.empty();
  const auto& rows = on_gpu ? gpu_kernels : host_kernels;
  const double denom = on_gpu ? double(kernel_ns) : double(c.total_ns);
  std::vector<std::pair<std::string, std::pair<int64_t, TimeNs>>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.second != b.second.second ? a.second.second > b.second.second : a.first < b.first;
  });
  for (const auto& [name, row] : sorted) {
    if (s.inductor_kernels.size() == kMaxKernels) break;
    const auto parsed = parse_inductor_kernel(name);
    model::InductorKernel k;
    k.name = name;
    k.kind = parsed ? parsed->kind : "other";
    k.fused_ops = parsed ? parsed->fused_ops : std::nullopt;
    k.on = on_gpu ? "gpu" : "cpu";
    k.calls_per_step = r6(double(row.first) / n);
    k.ms_per_step = r6(ms(row.second) / n);
    k.share = denom > 0 ? r6(double(row.second) / denom) : 0;
    s.inductor_kernels.push_back(std::move(k));
  }
  if (graph_launches > 0) {
    s.cuda_graph_launches_per_step = r6(double(graph_launches) / n);
    s.cuda_graph_share = frac_or_null(double(replay_ns), double(kernel_ns));
  }
  s.compile_in_window_ms = r6(ms(c.clipped(compile)));
  s.compile_in_window_share = frac_or_null(double(c.clipped(compile)), double(c.total_ns));

  if (cf != nullptr) {
    s.unique_graphs = int_at(*cf, "unique_graphs");
    s.graph_breaks = int_at(*cf, "graph_breaks");
    s.recompiles = int_at(*cf, "recompiles");
    if (auto secs = number_at(*cf, "compile_time_s")) s.compile_time_s = r6(*secs);
    s.breaks = events_at(*cf, "breaks");
    if (!s.breaks.empty()) {
      std::string text;
      for (size_t i = 0; i < s.breaks.size() && i < 3; ++i)
        text += (i ? "; " : "") + (s.breaks[i].where ? *s.breaks[i].where + ": " : std::string()) + s.breaks[i].reason;
      if (s.breaks.size() > 3) text += "; ...";
      s.breaks_summary = text;
    }
    // torch.compile's modes as the program called it (facts.compile.calls[].mode; "default" when not given).
    if (auto calls = cf->find("calls"); calls != cf->end() && calls->is_array()) {
      for (const auto& call : *calls) {
        if (!call.is_object()) continue;
        const auto m = call.find("mode");
        const std::string mode = m != call.end() && m->is_string() ? m->get<std::string>() : "default";
        if (std::find(s.modes.begin(), s.modes.end(), mode) == s.modes.end() && s.modes.size() < 8) s.modes.push_back(mode);
      }
    }
    s.recompile_reasons = events_at(*cf, "recompile_reasons");
    if (!s.recompile_reasons.empty()) {
      std::string text;
      for (size_t i = 0; i < s.recompile_reasons.size() && i < 2; ++i) {
        const auto& e = s.recompile_reasons[i];
        text += (i ? "; " : "") + (e.where ? *e.where + ": " : std::string()) + e.reason;
      }
      if (s.recompile_reasons.size() > 2) text += "; ...";
      s.recompiles_summary = text;
    }
    if (!s.compiled && s.unique_graphs.value_or(0) > 0) {
      // Compiled graphs exist; a trace without torch's ranges (a native capture records its own) cannot place
      // them in the window, so their shares stay null.
      s.compiled = true;
      s.evidence.push_back("the trace records none of torch.compile's ranges: the compiled share of the step is not known");
    }
  }
  return s;
}

}  // namespace profile_train::analysis
