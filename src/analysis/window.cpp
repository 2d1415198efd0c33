// What the profiled window is (window.h): what the capture traced, training or inference, warm or cold.
#include "profile_train/analysis/window.h"

#include "profile_train/analysis/compilation.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/common/format.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/strings.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

namespace {

std::string share_text(double f) { return format_printf("%.1f%%", 100.0 * f); }
std::string ms_text(double ns) { return format_printf("%.2f ms", ns / 1e6); }
std::string us_text(double ns) { return format_printf("%.0f us", ns / 1e3); }

bool has_text(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// Operators that only run on the CPU: the model's tensors are there.
bool is_cpu_kernel_operator(std::string_view n) {
  return has_text(n, "mkldnn") || has_text(n, "_for_cpu") || has_text(n, "onednn") || n.rfind("cpp_fused", 0) == 0 ||
         has_text(n, "_nnpack_") || has_text(n, "_slow_conv2d");
}

bool is_backward_kernel(std::string_view name) {
  const std::string l = ascii_lower(name);
  return has_text(l, "backward") || has_text(l, "bwd") || has_text(l, "wgrad") || has_text(l, "dgrad") ||
         has_text(l, "_grad") || has_text(l, "cutlassb_");
}

// The model's forward compute (matrix products, convolutions, attention, embeddings, normalizations): what a
// forward pass runs, as opposed to the copies, allocations and collectives any trace may hold.
bool is_forward_compute_operator(std::string_view n) {
  if (n.rfind("aten::", 0) != 0) return false;
  n.remove_prefix(6);
  for (std::string_view w : {"linear", "matmul", "mm", "addmm", "bmm", "baddbmm", "conv", "convolution", "embedding",
                             "layer_norm", "group_norm", "batch_norm", "rms_norm", "scaled_dot_product", "_flash_attention",
                             "_efficient_attention", "einsum"})
    if (n == w || n.rfind(std::string(w) + "_", 0) == 0 || (w == "conv" && n.rfind("conv", 0) == 0)) return true;
  return false;
}

bool is_module_load_call(std::string_view n) {
  n = runtime_base_name(n);
  return n.rfind("cuModuleLoad", 0) == 0 || n.rfind("cuLibraryLoad", 0) == 0 || n.rfind("cuModuleGetFunction", 0) == 0 ||
         n.rfind("cuLibraryGetKernel", 0) == 0 || n.rfind("hipModuleLoad", 0) == 0 || n == "cudaGetFuncBySymbol";
}

bool is_context_call(std::string_view n) {
  n = runtime_base_name(n);
  return n.rfind("cuCtxCreate", 0) == 0 || n == "cuDevicePrimaryCtxRetain" || n == "cuInit" || n == "hipInit";
}

std::string recapture_for(const trace::Trace& t, bool gpu) {
  const std::string& f = t.meta.format;
  if (f == "nsys_sqlite")
    return gpu ? "nsys profile -t cuda,nvtx,osrt --trace-fork-before-exec=true --pytorch=autograd-nvtx -o capture "
                 "python train.py, then nsys export --type sqlite capture.nsys-rep"
               : "nsys profile -t cuda,nvtx,osrt --capture-range=cudaProfilerApi -o capture python train.py, with "
                 "torch.cuda.profiler.start() after a few warm-up iterations (or --delay SECONDS)";
  if (f == "native")
    return gpu ? "profile-train run -- CMD on the GPU machine, without --no-cupti (CUPTI needs the NVIDIA driver)"
               : "profile-train run --warmup-steps 3 --steps 5 -- CMD";
  return gpu ? "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
               "schedule=torch.profiler.schedule(wait=1, warmup=1, active=3), record_shapes=True), with prof.step() "
               "after each iteration"
             : "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=2, active=3), ...), with "
               "prof.step() after each iteration: the first iterations warm up unrecorded";
}

}  // namespace

model::Capture capture_section(const trace::Trace& t, const TraceIndex& idx, const model::Report& r) {
  using Traced = trace::TraceMeta::Traced;
  model::Capture c;
  c.gpu_activity = t.meta.gpu_traced == Traced::kYes ? "traced" : t.meta.gpu_traced == Traced::kNo ? "not_traced" : "unknown";
  if (!t.meta.traced.empty()) c.traced = t.meta.traced;

  // Positive evidence of training on the CPU, strongest first.
  if (auto dev = string_path(r.facts, {"params", "device"}); dev && dev->rfind("cpu", 0) == 0) {
    c.cpu_training = "the model's parameters are on the CPU (facts.params.device " + *dev + ")";
  } else if (!idx.has_gpu_activity) {
    for (size_t i : idx.cpu_ops) {
      const std::string& n = t.name(t.events[i]);
      if (is_cpu_kernel_operator(n)) {
        c.cpu_training = "CPU kernels in the model's operators (" + n + ")";
        break;
      }
    }
    // A traced GPU that ran nothing: no kernel launch anywhere (a capture that lost the GPU timeline still shows
    // the launches, e.g. CUPTI's range-profiler mode).
    const bool launches = std::any_of(idx.runtimes.begin(), idx.runtimes.end(),
                                      [&](size_t i) { return is_launch_call(t.name(t.events[i])); });
    const double mm = r.operators.cpu_matmul_conv_fraction.value_or(0);
    if (!c.cpu_training && t.meta.gpu_traced == Traced::kYes && !launches && mm >= 0.05)
      c.cpu_training = "the capture traced the GPU and no GPU work ran while matrix-multiply and convolution operators "
                       "took " + share_text(mm) + " of the step on the CPU";
  }

  // A GPU machine whose steps hold no GPU activity, with nothing showing CPU training: the capture lacks it.
  const bool gpu_machine = !t.devices.empty() || bool_path(r.facts, {"gpu", "available"}).value_or(false);
  if (gpu_machine && !idx.has_gpu_activity && !c.cpu_training) {
    std::string gpu = "a GPU";
    if (!t.devices.empty() && !t.devices.front().name.empty()) gpu = t.devices.front().name;
    else if (auto n = string_path(r.facts, {"gpu", "name"})) gpu = *n;
    const size_t runtime = idx.runtimes.size();
    std::string what;
    if (t.meta.gpu_traced == Traced::kNo)
      what = "the capture did not trace GPU activity";
    else if (t.meta.gpu_traced == Traced::kYes)
      what = "the capture traced the GPU but holds no GPU activity" +
             (runtime > 0 ? " and only " + std::to_string(runtime) + " runtime call" + (runtime == 1 ? "" : "s") : std::string()) +
             " (the window missed the GPU work, or the process that trained was not traced)";
    else
      what = "the capture holds no GPU activity and does not say whether it traced any";
    c.lacks = "The machine has " + gpu + " but " + what + (c.traced ? " [" + *c.traced + "]" : std::string());
    c.recapture = recapture_for(t, true);
  }
  return c;
}

model::Workload detect_workload(const trace::Trace& t, const TraceIndex& idx) {
  model::Workload w;
  int64_t backward_ops = 0, optimizer = 0, backward_kernels = 0, optimizer_kernels = 0, forward_ops = 0,
          matrix_kernels = 0;
  std::string backward_example, forward_example;
  // What a name says, decided once per distinct name (a trace repeats a few thousand names millions of times).
  enum : int8_t { kUnseen = -1, kNone, kOptimizerRange, kBackwardOp, kForwardOp };
  std::vector<int8_t> op_kind(t.strings.size(), kUnseen);
  auto kind_of_op = [&](trace::StringId id) {
    int8_t& k = op_kind[id];
    if (k != kUnseen) return k;
    const std::string& n = t.strings.get(id);
    if (is_optimizer_step_annotation(n) || n.rfind("Optimizer.zero_grad#", 0) == 0) k = kOptimizerRange;
    else if (n == "## backward ##" || n.rfind("autograd::engine::evaluate_function", 0) == 0 ||
             n == "torch::autograd::AccumulateGrad" || (n.size() > 9 && n.compare(n.size() - 9, 9, "Backward0") == 0))
      k = kBackwardOp;
    else if (is_forward_compute_operator(n)) k = kForwardOp;
    else k = kNone;
    return k;
  };
  for (const Event& e : t.events) {
    if (e.is_gpu || (e.cat != Category::kCpuOp && e.cat != Category::kUserAnnotation)) continue;
    const int8_t k = kind_of_op(e.name);
    if (k == kOptimizerRange) {
      ++optimizer;
    } else if (k == kBackwardOp) {
      if (backward_ops++ == 0) backward_example = t.name(e);
    } else if (k == kForwardOp && e.cat == Category::kCpuOp) {
      if (forward_ops++ == 0) forward_example = t.name(e);
    }
  }
  std::vector<int8_t> backward_name(t.strings.size(), kUnseen);
  for (size_t p = 0; p < idx.kernels.size(); ++p) {
    const KernelKind k = idx.kernel_class(p).kind;
    const trace::StringId id = t.events[idx.kernels[p]].name;
    if (backward_name[id] == kUnseen) backward_name[id] = is_backward_kernel(t.strings.get(id)) ? 1 : 0;
    if (k == KernelKind::kOptimizer) ++optimizer_kernels;
    else if (backward_name[id] == 1) ++backward_kernels;
    else if (k == KernelKind::kGemm || k == KernelKind::kConv || k == KernelKind::kAttention) ++matrix_kernels;
  }
  if (backward_ops > 0) w.evidence.push_back(std::to_string(backward_ops) + " backward ranges or autograd operators (" + backward_example + ")");
  if (optimizer > 0) w.evidence.push_back(std::to_string(optimizer) + " optimizer step / zero_grad ranges");
  if (backward_kernels > 0) w.evidence.push_back(std::to_string(backward_kernels) + " backward kernels");
  if (optimizer_kernels > 0) w.evidence.push_back(std::to_string(optimizer_kernels) + " optimizer kernels");
  if (!w.evidence.empty()) {
    w.kind = "training";
    return w;
  }
  // Inference needs a forward pass that ran without a backward one: a trace holding only collectives, copies or
  // a few allocations (a trimmed capture, a communication benchmark) tells nothing either way.
  if (forward_ops >= kForwardEvidence) {
    w.kind = "inference";
    w.evidence.push_back(std::to_string(forward_ops) + " forward operators (" + forward_example +
                         ") and no backward pass or optimizer step among the trace's operators and annotations");
  } else if (!idx.has_cpu_ops && matrix_kernels >= kForwardEvidence && idx.kernels.size() >= 50) {
    w.kind = "inference";
    w.evidence.push_back(std::to_string(matrix_kernels) + " matrix kernels and no backward or optimizer kernel among " +
                         std::to_string(idx.kernels.size()) + " kernels (the trace records no operators)");
  } else {
    w.evidence.push_back("no backward or optimizer evidence, and too little forward work to call it inference (" +
                         std::to_string(forward_ops) + " forward operators, " + std::to_string(matrix_kernels) +
                         " matrix kernels)");
  }
  return w;
}

std::optional<model::ColdWindow> cold_window(const trace::Trace& t, const TraceIndex& idx, const StepInfo& si,
                                             const Intervals& busy) {
  if (si.steps.size() > 1 || si.steps.empty()) return std::nullopt;
  const TimeNs w0 = si.steps.front().start, w1 = si.steps.back().end;
  const double window = static_cast<double>(w1 - w0);
  if (window <= 0) return std::nullopt;
  auto inside = [&](const Event& e) { return e.start_ns >= w0 && e.start_ns < w1; };

  // Launch calls and their steady cost.
  std::vector<const Event*> launches;
  std::vector<double> durs;
  Intervals first_call;
  TimeNs module_ns = 0, context_ns = 0, alloc_ns = 0;
  int64_t module_n = 0, context_n = 0, alloc_n = 0;
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (!inside(e) || e.is_gpu) continue;
    const std::string& n = t.name(e);
    if (is_launch_call(n)) {
      launches.push_back(&e);
      durs.push_back(static_cast<double>(e.dur_ns));
    } else if (is_module_load_call(n)) {
      module_ns += e.dur_ns, ++module_n;
      first_call.push_back({e.start_ns, e.end_ns()});
    } else if (is_context_call(n)) {
      context_ns += e.dur_ns, ++context_n;
      first_call.push_back({e.start_ns, e.end_ns()});
    } else if (is_allocator_call(n)) {
      alloc_ns += e.dur_ns, ++alloc_n;
      first_call.push_back({e.start_ns, e.end_ns()});
    }
  }
  double median = 0;
  if (!durs.empty()) {
    std::vector<double> d = durs;
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    median = d[d.size() / 2];
  }
  const double outlier_ns = std::max(kColdLaunchUs * 1e3, 10.0 * median);
  int64_t slow = 0;
  TimeNs slowest = 0;
  for (const Event* e : launches) {
    if (static_cast<double>(e->dur_ns) <= outlier_ns) continue;
    // A launch also waits when the device's queue is full: the GPU is then busy all along (back-pressure, a
    // GPU-bound steady state), while first-use loading leaves it idle. Only the idle kind is first-call work.
    const Interval extra{e->start_ns + static_cast<TimeNs>(median), e->end_ns()};
    if (extra.end <= extra.start) continue;
    const TimeNs busy_ns = total_length(clip_intervals(busy, extra.start, extra.end));
    if (2 * busy_ns >= extra.end - extra.start) continue;
    ++slow;
    slowest = std::max(slowest, e->dur_ns);
    first_call.push_back(extra);
  }
  TimeNs compile_ns = 0;
  {
    Intervals compile;
    for (const Event& e : t.events)
      if (!e.is_gpu && (e.cat == Category::kCpuOp || e.cat == Category::kUserAnnotation || e.cat == Category::kPythonFunction) &&
          inside(e) && is_compile_range(t.name(e)))
        compile.push_back({e.start_ns, e.end_ns()});
    compile = merge_intervals(std::move(compile));
    compile_ns = total_length(compile);
    first_call.insert(first_call.end(), compile.begin(), compile.end());
  }
  const double share =
      std::min(1.0, static_cast<double>(total_length(clip_intervals(merge_intervals(std::move(first_call)), w0, w1))) / window);
  if (share < kColdShare) return std::nullopt;

  model::ColdWindow c;
  c.first_call_share = std::round(share * 1e6) / 1e6;
  c.signs.push_back(std::string(si.steps.size() == 1 && si.source != StepSource::kWholeTrace ? "one step" : "no step") +
                    " in the window, " + share_text(share) + " of it in first-call work");
  if (slow > 0)
    c.signs.push_back(std::to_string(slow) + " of " + std::to_string(launches.size()) +
                      " launch calls far above their steady cost (slowest " + ms_text(double(slowest)) + ", median " +
                      us_text(median) + "): lazy module loading and library set-up on first use");
  if (module_n > 0) c.signs.push_back(std::to_string(module_n) + " module-loading calls, " + ms_text(double(module_ns)));
  if (context_n > 0) c.signs.push_back(std::to_string(context_n) + " context set-up calls, " + ms_text(double(context_ns)));
  if (alloc_n > 0)
    c.signs.push_back(std::to_string(alloc_n) + " device allocation calls, " + ms_text(double(alloc_ns)) +
                      " (the caching allocator's pools grow on first use)");
  if (compile_ns > 0) c.signs.push_back("compilation (torch.compile) " + ms_text(double(compile_ns)));
  c.recapture = recapture_for(t, false);
  return c;
}

}  // namespace profile_train::analysis
