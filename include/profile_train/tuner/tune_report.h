// tune.json (versioned) for a tuning session, plus the code change that makes the best configuration
// permanent. Pure functions over the session's result. Owner: tuner component.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"
#include "profile_train/model/tune.h"
#include "profile_train/tuner/process_runner.h"
#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {

// tune.json (typed: model/tune.h), format 1.x (minor versions only add keys; 1.1: status.partial, budget.confirm_repeats,
// noise.method, skipped_knobs, runs, trials[].pairs, confirmation, speedup{claimed} with a 95% interval from the
// head-to-head check in low/high):
//   schema_version, tool{name,version}, created_utc,
//   target{kind: workload|command, model/binary/args | argv/placeholders, applied_through},
//   strategy, metric{unit: samples/s|steps/s, note}, space{knob:{values[],auto}},
//   budget{max_trials,time_budget_s,trial_timeout_s,repeats,baseline_repeats,min_gain,noise_k[,max_memory_bytes]},
//   status{complete,partial,stop_reason,trials,measurements,elapsed_s,oom_trials,failed_trials,rerun_pairs,
//          unreliable_pairs} (the last two: the load rule, tuner.h),
//   noise{pooled_relative_sd,degrees_of_freedom,method},
//   skipped_knobs[{knob,values[],reason}] (values that cannot act on this machine, not tried),
//   runs[{trial,repeat,phase: baseline|search|confirm,role: alone|reference|candidate,status,throughput|null,
//         step_ms|null,metric,warmup_excluded,trimmed,excluded_ms[],load_1m|null,wall_s|null,cpu_time_s|null,
//         excluded ("" or why the run was left out: its pair saw different load)}] (every process run, in order),
//   trials[{index,config{knob:value},reason,status,throughput|null,stddev,relative_sd,values[],measurements,
//           early_stopped,accepted,is_baseline,is_best,duration_s,peak_memory_bytes,message,dirs[],
//           diagnosis{bottleneck,confidence,summary,recommendations[{id,title,knobs[]}]},
//           pairs[{reference,reference_value,value,phase}],vs_baseline,compile_s? (mean torch.compile seconds per run,
//           facts.compile.compile_time_s; outside the steady-state rate; absent when no run compiled),
//           loss{status: baseline|not recorded|not compared|same loss|changes the loss,compared_by: samples seen|step,
//                points,baseline_runs,trial_runs,non_finite,baseline_mean,trial_mean,difference,tolerance,spread,
//                spread_dof,note} (the quality guard, quality.h; numbers null when not compared)}],
//   per_knob{knob:[{value,trials,best_throughput,at_best_config}]},
//   baseline|best {trial,config,throughput,stddev,repeats} | null,
//   confirmation{candidate,ran,status,claimed,pairs,ratio,low,high,degrees_of_freedom,method,load_1m|null,
//                search_load_1m|null,cpus,repeated} | null (the load the claim was measured at),
//   speedup{value,low|null,high|null,claimed,interval} | null,
//   change{summary,changes[{knob,from,to}],python[{what,code}],command[]?,shim_overrides{}?} | null,
//   quality{allow_quality_change,method,winner|null,loss{...as trials[].loss}|null} (the best trial's loss against
//           the baseline's),
//   log[] (the search's decisions)
//   execution{...} (1.x additive; how and where the trials ran: see ray_report.h add_execution)
inline constexpr std::string_view kTuneSchemaVersion = "1.1";

struct TuneReportContext {
  TuneTarget target;                 // what was tuned (argv / workload flags)
  std::string strategy;
  TuneOptions options;               // budget figures shown in the report
  std::string tool_version;
  std::string metric_note;           // e.g. "samples/s = batch_size / steps.mean_ms over the measured window"
};

// Speedup of `best` over `baseline` with a 1-sigma uncertainty from the standard errors of both means
// (relative errors added in quadrature; the pooled relative noise stands in for a trial with one value).
struct Speedup {
  double value = 0;
  double sigma = 0;
  bool sigma_known = false;  // false when no trial was repeated (--repeats 1): the noise was not measured
};
Speedup speedup_of(const Trial& best, const Trial& baseline, double pooled_relative_sd);

// The change that keeps the best configuration: summary, changes (knob, from, to), python (edits for a
// PyTorch script), command (argv with the best values, for placeholder commands / the workload), shim overrides.
model::CodeChange code_change(const model::Config& baseline, const model::Config& best, const TuneTarget& target,
                              bool on_gpu);

// The whole tune report of a session (created_utc: now). Its `execution` is added by add_execution
// (ray_report.h); report::tune_html (profile_train/report/tune_html.h) presents it.
model::TuneReport tune_report(const TuneResult& result, const KnobSpace& space, const TuneReportContext& ctx);

// A finished trial's progress line (report::write_tune_trial_line) from the live session: its rate, the paired
// ratio against the baseline's rate once the baseline is measured, and whether its loss differs.
model::TrialProgress trial_progress(const Trial& trial, const Tuner& tuner, const KnobSpace& space);

// to_json(tune_report(...)).
inline nlohmann::json tune_json(const TuneResult& result, const KnobSpace& space, const TuneReportContext& ctx) {
  return to_json(tune_report(result, space, ctx));
}

}  // namespace profile_train::tuner
