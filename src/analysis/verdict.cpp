// The verdict: which class from PRODUCT.md limits the training step, with a confidence and evidence.
//
// Decision logic (also in reports/REPORT_FORMAT.md, "verdict"). All shares are of the mean step time and come
// from the tb_plugin-compatible carving, so a stall only counts when the GPU was not busy at that moment.
//  1. No step window or no events            -> unknown (the summary says so when every event was malformed;
//                                               the rules engine recommends nothing on such a report).
//  2. No GPU activity in the trace:
//       data_loading >= 0.30 and >= cpu       -> input_pipeline (the run mostly waits on data)
//       the job used the GPU (facts.gpu.used: CUDA API calls, nccl:* / cuDNN / record_stream operators,
//       or the nccl backend)                  -> unknown (trimmed trace / failed GPU capture)
//       CPU collectives >= 0.30 and >= cpu    -> communication
//       no CPU operators or phase ranges      -> unknown (nothing to judge)
//       otherwise                             -> cpu_only
//  3. GPU activity present. Stall scores:
//       input_pipeline  = breakdown.data_loading                      (threshold 0.15)
//       host_to_device  = breakdown.memcpy x H2D share of copy time   (threshold 0.15)
//       synchronization = min(host.sync.fraction, gpu.idle.fraction)  (threshold 0.15)
//       communication   = communication.exposed_fraction              (threshold 0.15)
//       cpu_overhead    = breakdown.runtime + breakdown.cpu           (threshold 0.30: some host time is normal)
//     The highest score at or above its threshold wins. Otherwise, if the GPU is busy (kernel + memcpy +
//     memset + communication >= 0.5) -> gpu_compute, or gpu_memory when peak memory >= 90% of the device or
//     the allocator retried (gpu.memory.alloc_retries > 0). An OOM in the run (gpu.memory.ooms > 0) is
//     gpu_memory before any stall is scored.
//     Otherwise the highest stall score >= kMaterialShare (0.10 of the step) wins; else cpu_overhead when
//     the GPU idles >= 0.5 of the step and host_wait dominates its idle gaps or, in a step that ran GPU work,
//     at least half the idle time has no GPU work queued (gpu.idle.unqueued_fraction); else unknown. A smaller stall never names the verdict: 7% of exposed
//     communication on a half-idle GPU does not make the step communication-bound (issue 23: an MI300X
//     serving trace read "communication, 7.3%" where the same configuration on H100 read gpu_compute).
//  Close calls: when the runner-up's score is within kCloseMargin (10 points of the step) of the winner's,
//  verdict.runner_up names it, verdict.close is true and the summary says "close call: A x% vs B y%". Without
//  GPU activity, a data wait of at least 0.30 within the margin of CPU compute is input_pipeline (the wait is
//  removable; the compute is the work itself), so runs either side of the 50/50 line get the same verdict.
//  Confidence starts at 0.55 and grows with the margin over the threshold (max 0.95); it drops when the
//  runner-up is close, when steps come from a fallback, and when the data-quality counters are high.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "profile_train/common/format.h"
#include "profile_train/analysis/analyzers.h"
#include "profile_train/common/json_path.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}
std::string fmt(double v, const char* f = "%.1f") { return format_printf(f, v); }

struct Candidate {
  Bottleneck cls;
  double score;
  double threshold;
};

// Two causes closer than this (share of the step) are a close call: named both, decided by the rules above.
constexpr double kCloseMargin = 0.10;
// The least share of the step a stall needs to become the verdict when none reaches its own threshold (the
// fallback for a GPU busy under half the step). 10% follows the established tools' line for exposed
// communication (PRODUCT.md "Thresholds"); below it the stall is within what a step's other costs hide.
constexpr double kMaterialShare = 0.10;

std::string label(Bottleneck cls) {
  switch (cls) {
    case Bottleneck::kInputPipeline: return "input pipeline";
    case Bottleneck::kHostToDevice: return "host-to-device copies";
    case Bottleneck::kCpuOverhead: return "CPU overhead";
    case Bottleneck::kCpuOnly: return "CPU compute";
    case Bottleneck::kGpuCompute: return "GPU compute";
    case Bottleneck::kGpuMemory: return "GPU memory";
    default: return std::string(name_of(cls));
  }
}

}  // namespace

Verdict decide_verdict(const Report& r) {
  using B = Bottleneck;
  Verdict v;  // unknown, confidence 0, until decided below
  auto& ev = v.evidence;
  const double steps = static_cast<double>(r.steps.count);
  const double mean_ms = r.steps.mean_ms.value_or(0.0);
  const std::string& step_src = r.source.step_detection;
  const bool has_gpu = r.source.has_gpu_activity;
  // Phase ranges (forward/backward/optimizer) of a native capture stand for the CPU work inside them.
  const bool has_cpu_ops = r.source.has_cpu_ops || r.source.has_phase_ranges;
  const auto share = [&](Role role) { return r.breakdown.value_or_zero(role); };

  double penalty = 0.0;
  if (step_src == "whole_trace") penalty += 0.15;
  else if (step_src != "profiler_step" && step_src != "nvtx_step" && step_src != "optimizer_annotation") penalty += 0.05;
  const double total = static_cast<double>(r.data_quality.events_total);
  const double bad = static_cast<double>(r.data_quality.malformed_events + r.data_quality.clock_anomalies);
  if (total > 0 && bad / total > 0.01) penalty += 0.1;

  if (steps <= 0 || mean_ms <= 0) {
    const double imported = static_cast<double>(r.data_quality.events_imported);
    const double malformed = static_cast<double>(r.data_quality.malformed_events);
    if (imported <= 0 && malformed > 0) {
      v.summary = "Cannot tell: every event of the trace is malformed (" + fmt(malformed, "%.0f") +
                     " malformed, none imported); nothing can be diagnosed from it.";
      ev.push_back("malformed events: " + fmt(malformed, "%.0f") + " of " + fmt(std::max(total, malformed), "%.0f"));
    } else {
      v.summary = "Cannot tell: the trace has no events to form a step window.";
    }
    ev.push_back("step windows: 0");
    return v;
  }
  const double steady = static_cast<double>(r.steps.steady_state.count);
  const std::string step_ev = "mean step " + fmt(mean_ms, "%.2f") + " ms over " +
                              (steady < steps ? fmt(steady, "%.0f") + " steady-state of " : std::string()) +
                              fmt(steps, "%.0f") + " step(s) (" + step_src + ")";
  const double dl = share(Role::kDataLoading);
  double cpu = share(Role::kCpu);  // less the shim-timed collectives on a CPU job (below)
  const double rt = share(Role::kRuntime);

  std::string context_ev;  // a general line appended after the class-specific evidence
  // The second most likely cause, when there is one: named always, called close within kCloseMargin.
  std::optional<Candidate> runner_up;
  double best_score = -1;
  auto finish = [&](Bottleneck cls, double conf, std::string summary) {
    if (!context_ev.empty()) ev.push_back(context_ev);
    v.bottleneck = cls;
    if (runner_up && best_score >= 0) {
      const bool close = std::abs(best_score - runner_up->score) < kCloseMargin;
      v.runner_up = RunnerUp{runner_up->cls, std::round(runner_up->score * 1e6) / 1e6};
      v.close = close;
      if (close) {
        conf -= 0.15;
        summary += " Close call: " + label(cls) + " " + pct(best_score) + " vs " + label(runner_up->cls) + " " +
                   pct(runner_up->score) + " of the step.";
      }
    }
    v.confidence = std::round(std::clamp(conf - penalty, 0.1, 0.95) * 100.0) / 100.0;
    v.summary = std::move(summary);
    ev.push_back(step_ev);
    return v;
  };

  // A warm-up window (steps.cold_window): what it shows is first-call cost, not what limits a training step.
  if (const auto& cold = r.steps.cold_window) {
    for (const auto& sign : cold->signs) ev.push_back(sign);
    ev.push_back("re-capture past the warm-up: " + cold->recapture);
    v.summary = "Warm-up window: " + pct(cold->first_call_share) +
                " of it is first-call work (module loading, set-up, compilation); it says nothing yet about the "
                "steady step. Profile steps after the first ones.";
    ev.push_back(step_ev);
    return v;
  }

  // A GPU machine whose capture holds no GPU activity, with nothing showing CPU training (source.capture.lacks).
  if (!has_gpu && r.source.capture.lacks) {
    ev.push_back(*r.source.capture.lacks);
    if (dl > 0 || cpu > 0)
      ev.push_back("host side only: data loading " + pct(dl) + ", CPU operators " + pct(cpu) +
                   " of the step (what the GPU did meanwhile is not in the capture)");
    if (r.source.capture.recapture) ev.push_back("re-capture with: " + *r.source.capture.recapture);
    v.summary = "Cannot tell: " + *r.source.capture.lacks + ".";
    ev.push_back(step_ev);
    return v;
  }

  if (!has_gpu) {
    const std::string cap = r.source.gpu_capture_status.value_or("");
    // facts stay JSON (report.h): facts.gpu.used is read by path.
    const bool gpu_job = bool_path(r.facts, {"gpu", "used"}).value_or(false) ||
                         (r.source.distributed && r.source.distributed->backend == "nccl") || rt > 0;
    ev.push_back("no GPU activity in the trace");
    if (dl >= 0.30 && dl >= cpu - kCloseMargin) {
      runner_up = Candidate{B::kCpuOnly, cpu, 0.0};
      best_score = dl;
      ev.push_back("data loading " + pct(dl) + " of the step, CPU compute " + pct(cpu));
      return finish(B::kInputPipeline, 0.55 + 0.4 * std::min(1.0, (dl - 0.3) / 0.3),
                    "Input pipeline: " + pct(dl) + " of each step waits on the DataLoader.");
    }
    if (!cap.empty()) ev.push_back("GPU capture: " + cap);
    if (gpu_job) {
      ev.push_back("the job used the GPU (CUDA/NCCL calls or operators) but no GPU work was recorded");
      v.summary = "Cannot tell: the trace has no GPU activity although the job used the GPU (trimmed trace or "
                     "failed GPU capture).";
      ev.push_back(step_ev);
      return v;
    }
    double ccomm = share(Role::kCommunication);
    if (ccomm <= 0 && r.collectives && r.collectives->timing == "shim" && r.communication.exposed_fraction) {
      // The shim timed the collectives (`run` of a CPU job: gloo's work is in no range the capture records): the
      // training thread's wait in them lies inside the phase ranges that the breakdown counts as CPU time.
      ccomm = *r.communication.exposed_fraction;
      cpu = std::max(0.0, cpu - ccomm);
    }
    if (ccomm >= 0.30 && ccomm >= cpu) {
      ev.push_back("CPU collectives (gloo) " + pct(ccomm) + " of the step, CPU compute " + pct(cpu));
      if (r.collectives && r.collectives->summary) ev.push_back("top collective: " + *r.collectives->summary);
      return finish(B::kCommunication, 0.5 + 0.4 * std::min(1.0, (ccomm - 0.3) / 0.3),
                    "Communication: " + pct(ccomm) + " of each step is spent in CPU collectives.");
    }
    if (!has_cpu_ops || cpu + dl + ccomm < 0.05) {
      v.summary = "Cannot tell: the trace has neither GPU activity nor CPU operators (trimmed trace?).";
      ev.push_back("CPU operators cover " + pct(cpu) + " of the window");
      ev.push_back(step_ev);
      return v;
    }
    const bool comm_measured = r.communication.measured || ccomm > 0;
    ev.push_back("CPU operators " + pct(cpu) + ", data loading " + pct(dl) +
                 (comm_measured ? ", communication " + pct(ccomm) + " of the step" : " of the step (communication not measured)"));
    if (dl > 0) {
      runner_up = Candidate{B::kInputPipeline, dl, 0.30};
      best_score = cpu;
    }
    return finish(B::kCpuOnly, 0.6 + 0.3 * std::min(1.0, cpu),
                  "CPU only: no GPU was used; the step is " + pct(cpu) + " CPU compute.");
  }

  // GPU activity present. An out-of-memory error in the run (the shim's allocator counters) decides it.
  if (const int64_t ooms = r.gpu.memory.ooms.value_or(0); ooms > 0) {
    ev.push_back(std::to_string(ooms) + " CUDA out-of-memory errors in the run");
    if (r.gpu.memory.peak_fraction) ev.push_back("peak GPU memory " + pct(*r.gpu.memory.peak_fraction) + " of the device");
    return finish(B::kGpuMemory, 0.85, "GPU memory: the run ran out of GPU memory.");
  }
  const double memcpy = share(Role::kMemcpy);
  const auto& copies = r.gpu.memcpy;
  const double h2d_t = copies ? copies->h2d.time_ms_per_step : 0.0;
  const double d2h_t = copies ? copies->d2h.time_ms_per_step : 0.0;
  const double d2d_t = copies ? copies->d2d.time_ms_per_step : 0.0;
  const double copy_t = h2d_t + d2h_t + d2d_t;
  const double h2d = copy_t > 0 ? memcpy * h2d_t / copy_t : 0.0;
  const double sync_f = r.host.sync.fraction.value_or(0.0);
  const double idle_f = r.gpu.idle ? r.gpu.idle->fraction : 0.0;
  const double comm = r.communication.exposed_fraction.value_or(0.0);
  const double util = r.gpu.utilization.value_or(0.0);
  const double busy = share(Role::kKernel) + memcpy + share(Role::kMemset) + share(Role::kCommunication);
  // The GPU idle while the host runs code the trace does not record (no operator, runtime call, annotation or
  // DataLoader range covers it): the host has not launched the work yet, so it is host time, never communication.
  // Only for a step that did run GPU work (as below): one with none (a JIT compile, a trimmed capture) says nothing.
  const double untraced = r.host.idle_activity && busy > 0.005 ? r.host.idle_activity->other : 0.0;

  std::vector<Candidate> c = {{B::kInputPipeline, dl, 0.15},
                              {B::kHostToDevice, h2d, 0.15},
                              {B::kSynchronization, std::min(sync_f, idle_f), 0.15},
                              {B::kCommunication, comm, 0.15},
                              {B::kCpuOverhead, rt + cpu, 0.30}};
  context_ev = "GPU kernel utilization " + pct(util) + ", GPU busy (kernel+copy+comm) " + pct(busy) +
               ", idle " + pct(idle_f);
  const Candidate* best = nullptr;
  const Candidate* runner = nullptr;
  for (const auto& k : c) {
    if (k.score < k.threshold) continue;
    if (best == nullptr || k.score > best->score) { runner = best; best = &k; }
    else if (runner == nullptr || k.score > runner->score) runner = &k;
  }
  auto stall_evidence = [&](const Candidate& k) {
    const Bottleneck cls = k.cls;
    if (cls == B::kInputPipeline)
      ev.push_back("data loading " + pct(dl) + " of the step (" + fmt(dl * mean_ms) + " ms) while the GPU waits");
    else if (cls == B::kHostToDevice)
      ev.push_back("host-to-device copies not overlapped by kernels: " + pct(h2d) + " of the step (" +
                   fmt(h2d_t, "%.2f") + " ms copy time per step)");
    else if (cls == B::kSynchronization)
      ev.push_back("host blocked in synchronizing calls " + pct(sync_f) + " of the step, " +
                   fmt(r.host.sync.count_per_step.value_or(0.0)) + " calls per step");
    else if (cls == B::kCommunication)
      ev.push_back("communication not overlapped by compute: " + pct(comm) + " of the step");
    else if (cls == B::kCpuOverhead)
      ev.push_back("CPU work with the GPU idle: runtime API " + pct(rt) + " + CPU ops " + pct(cpu) +
                   " of the step; " + fmt(r.host.launches_per_step.value_or(0.0), "%.0f") + " launches per step");
  };
  auto summary_for = [&](Bottleneck cls, double score) {
    if (cls == B::kInputPipeline) return "Input pipeline: " + pct(score) + " of each step waits on the DataLoader.";
    if (cls == B::kHostToDevice) return "Host-to-device copies: " + pct(score) + " of each step is spent copying inputs.";
    if (cls == B::kSynchronization) return "Synchronization: the host blocks on the GPU for " + pct(score) + " of each step.";
    if (cls == B::kCommunication)
      return "Communication: " + pct(score) + " of each step is exposed collective time" +
             (r.source.workload.kind == "inference" ? std::string(" (the serving forward pass's tensor-parallel collectives).")
                                                    : std::string("."));
    return "CPU overhead: the GPU idles while the host runs Python/operators/launches (" + pct(score) + " of the step).";
  };
  // Exposed communication on a GPU that idles longer while the host runs untraced code: the collectives wait for
  // work the host has not launched yet; the step is host-bound, and the evidence says so.
  auto host_outweighs_comm = [&](const Candidate& k) {
    return k.cls == B::kCommunication && untraced > 0 && rt + cpu + untraced > k.score;
  };
  if (const Candidate* winner = best != nullptr ? best : nullptr; winner != nullptr && host_outweighs_comm(*winner)) {
    ev.push_back("GPU idle " + pct(idle_f) + " of the step while the host runs code the trace does not record (" +
                 pct(untraced) + " of the step): the host had not launched the work");
    ev.push_back("communication not overlapped by compute: " + pct(comm) + " of the step, less than the host time");
    runner_up = *winner;
    best_score = rt + cpu + untraced;
    return finish(B::kCpuOverhead, 0.5 + 0.4 * std::min(1.0, best_score - comm),
                  summary_for(B::kCpuOverhead, best_score));
  }
  if (best != nullptr) {
    double conf = 0.55 + 0.4 * std::min(1.0, (best->score - best->threshold) / best->threshold);
    if (runner != nullptr && runner->score > 0.8 * best->score) conf -= 0.15;
    stall_evidence(*best);
    if (runner != nullptr) {
      stall_evidence(*runner);
      runner_up = *runner;
      best_score = best->score;
      if (std::abs(best->score - runner->score) < kCloseMargin) conf += 0.15;  // one penalty for a close runner-up
    }
    return finish(best->cls, conf, summary_for(best->cls, best->score));
  }
  if (busy >= 0.5) {
    const auto peak = r.gpu.memory.peak_fraction;
    const int64_t retries = r.gpu.memory.alloc_retries.value_or(0);
    if ((peak && *peak >= 0.9) || retries > 0) {
      if (peak) ev.push_back("peak GPU memory " + pct(*peak) + " of the device");
      if (retries > 0)
        ev.push_back(std::to_string(retries) + " allocator retries (cudaMalloc failed, the cache was freed and retried)");
      const double conf = retries > 0 ? 0.8 : 0.6 + 0.3 * std::min(1.0, (*peak - 0.9) / 0.1);
      return finish(B::kGpuMemory, conf,
                    "GPU memory: the GPU is busy " + pct(busy) + " of the step and " +
                        (retries > 0 ? "the allocator had to free its cache and retry" : "memory is " + pct(*peak) + " full") + ".");
    }
    const auto largest = std::max_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.score < b.score; });
    ev.push_back("largest stall: " + std::string(name_of(largest->cls)) + " at " + pct(largest->score));
    return finish(B::kGpuCompute, 0.5 + std::min(0.4, busy - 0.5),
                  "GPU compute: kernels keep the GPU busy " + pct(busy) + " of the step; no stall dominates.");
  }
  const auto top = std::max_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.score < b.score; });
  if (top->score >= kMaterialShare && host_outweighs_comm(*top)) {
    ev.push_back("GPU idle " + pct(idle_f) + " of the step while the host runs code the trace does not record (" +
                 pct(untraced) + " of the step): the host had not launched the work");
    ev.push_back("communication not overlapped by compute: " + pct(comm) + " of the step, less than the host time");
    runner_up = *top;
    best_score = rt + cpu + untraced;
    return finish(B::kCpuOverhead, 0.45, summary_for(B::kCpuOverhead, best_score));
  }
  if (top->score >= kMaterialShare) {
    stall_evidence(*top);
    return finish(top->cls, 0.4 + top->score, summary_for(top->cls, top->score));
  }
  const double hw = r.gpu.idle ? r.gpu.idle->host_wait.value_or(0.0) : 0.0;
  // The GPU idle with nothing queued waits on the host whatever the host does (Python outside operators, I/O):
  // judged on gpu.idle.unqueued_fraction too, as HTA's between-kernel classes miss a step's leading idle.
  const double unqueued = r.gpu.idle ? r.gpu.idle->unqueued_fraction.value_or(0.0) : 0.0;
  // Only for a step that did run GPU work (late): a step with none (a JIT compile, a trimmed capture) stays unknown.
  if (idle_f >= 0.5 && (hw >= 0.5 || (busy > 0.005 && unqueued >= 0.5 * idle_f))) {
    ev.push_back("GPU idle " + pct(idle_f) + " of the step, " +
                 (hw >= 0.5 ? pct(hw) + " of it waiting for the host to launch"
                            : pct(unqueued) + " of the step with no GPU work queued (the host had not launched it)"));
    return finish(B::kCpuOverhead, 0.45, summary_for(B::kCpuOverhead, std::max(idle_f * hw, unqueued)));
  }
  v.summary = "Cannot tell: the GPU is busy only " + pct(busy) + " of the step and no stall explains the rest.";
  ev.push_back(context_ev);
  ev.push_back(step_ev);
  return v;
}

}  // namespace profile_train::analysis
