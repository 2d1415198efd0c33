// `profile-train tune`: a diagnosis-guided sweep (or a grid) over training knobs that re-measures every
// trial through `profile-train run`, and reports the best configuration with the change that keeps it.
// Parsing (options -> TuneSetup, tune_setup.cpp) is separate from running (TuneSetup -> trials -> tune.json /
// tune.html, here).
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.h"
#include "pipeline.h"
#include "tune_setup.h"
#include "profile_train/platform/process.h"
#include "profile_train/platform/signals.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/common/folder_lock.h"
#include "profile_train/common/format.h"
#include "profile_train/common/knobs.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/version.h"
#include "profile_train/report/tune_html.h"
#include "profile_train/report/tune_text.h"
#include "profile_train/tuner/process_runner.h"
#include "profile_train/tuner/ray_report.h"
#include "profile_train/tuner/ray_runner.h"
#include "profile_train/tuner/tune_report.h"
#include "profile_train/tuner/tuner.h"

namespace profile_train::cli {
namespace {

namespace fs = std::filesystem;
namespace tn = profile_train::tuner;

// Set by SIGINT / SIGTERM while the sweep runs (platform::StopSignals, which also records which: exit 130 / 143);
// the sweep stops after writing its results.
std::atomic<bool> g_interrupted{false};

// apply.json: the winner's overrides for `run --apply` (or PROFILE_TRAIN_APPLY), with what it was measured at
// and the code change that makes it permanent. Written when the winner is not the baseline and has overrides;
// the summary says where, or why it could not be written.
void write_apply_file(const TuneSetup& s, const model::TuneReport& doc, report::TuneSummaryOptions& text) {
  if (!doc.best || !doc.baseline || !doc.change || !doc.speedup) return;
  const model::CodeChange& change = *doc.change;
  if (!change.shim_overrides || doc.best->trial == doc.baseline->trial) return;
  const model::SpeedupRow& sp = *doc.speedup;
  nlohmann::json apply = {{"overrides", *change.shim_overrides},
                          {"config", doc.best->config},
                          {"speedup", {{"value", sp.value}, {"claimed", sp.claimed}}},
                          {"python", nlohmann::json::array()}};
  if (sp.low && sp.high) {
    apply["speedup"]["low"] = *sp.low;
    apply["speedup"]["high"] = *sp.high;
  }
  for (const auto& e : change.python) apply["python"].push_back({{"what", e.what}, {"code", e.code}});
  const fs::path file = s.out / "apply.json";
  Status w = write_file_atomic(file, apply.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (w.ok()) text.apply_file = file.string();
  else text.apply_error = w.message();
}

// The final summary (report::write_tune_summary, after apply.json is written); returns tune's exit code.
int print_summary(std::ostream& err, const TuneSetup& s, const model::TuneReport& doc, bool ray) {
  report::TuneSummaryOptions text;
  text.knob_order = tn::space_knobs(s.space);
  text.out_dir = s.out.string();
  text.ray = ray;
  write_apply_file(s, doc, text);
  report::write_tune_summary(err, doc, text);
  if (g_interrupted.load()) return exit_code_for_stop_signal(platform::StopSignals::last_signal());
  return doc.baseline && doc.best ? kExitOk : kExitChildFailed;
}

// Where the trials run (tune.json "execution"), said once on the terminal when they run as Ray jobs.
tn::ExecutionInfo execution_info(std::ostream& err, const TuneSetup& s, const tn::RayTrialRunner* ray_runner) {
  tn::ExecutionInfo exec;
  if (ray_runner == nullptr) return exec;
  exec.executor = "ray";
  exec.address = ray_runner->address();
  exec.ray_version = ray_runner->ray_version();
  exec.parallel = s.ray_options.parallel;
  exec.trial_gpus = s.ray_options.trial_gpus;
  exec.trial_cpus = s.ray_options.trial_cpus;
  if (!s.quiet) report::write_tune_executor(err, tn::planned_execution(exec));
  return exec;
}

int run_tune(const Io& io, const TuneArgs& args, const std::vector<std::string>& workload_flags) {
  std::ostream& err = *io.err;
  auto setup = make_setup(args, workload_flags, &g_interrupted);
  if (!setup.ok()) return print_failure(err, "profile-train tune", setup.status());
  TuneSetup& s = *setup;
  std::unique_ptr<tn::RayTrialRunner> ray_runner;
  if (s.ray) {
    // The cluster is checked before any trial: reachable, a Ray with the Jobs API, a node that fits one trial.
    s.ray_options.process = s.runner;
    auto r = tn::RayTrialRunner::create(s.ray_options, s.ray_address);
    if (!r.ok()) return print_failure(err, "profile-train tune", Status(r.status().code(), r.status().message() + " (no trial was run)"));
    ray_runner = std::move(*r);
  }
  if (Status st = validate_before_trials(s); !st.ok())
    return print_failure(err, "profile-train tune", Status(st.code(), st.message() + " (no trial was run)"));
  auto lock = lock_output_folder(s.out, "tune");
  if (!lock.ok()) {
    err << "profile-train tune: " << terminal_safe(lock.status().message()) << "\n";
    return lock.status().exit_code();
  }
  tn::TuneReportContext ctx;
  ctx.target = s.runner.target;
  ctx.strategy = s.options.strategy;
  ctx.options = s.options;
  ctx.tool_version = kVersion;

  const tn::KnobSpace space = s.space;
  if (!s.quiet) {
    std::vector<std::pair<std::string, std::vector<std::string>>> shown;
    for (const auto& r : space) shown.emplace_back(r.def->name, r.values);
    report::write_tune_space(err, s.options.strategy, shown, s.out.string());
  }
  tn::ExecutionInfo exec = execution_info(err, s, ray_runner.get());
  auto with_execution = [&](const tn::TuneResult& r) {
    model::TuneReport doc = tn::tune_report(r, space, ctx);
    if (ray_runner) exec.placements = ray_runner->placements();
    tn::add_execution(doc, r, exec);
    return doc;
  };
  auto write_outputs = [&](const tn::TuneResult& r) {
    const model::TuneReport doc = with_execution(r);
    // Command arguments are not necessarily UTF-8: replaced (U+FFFD) rather than throwing.
    Status a = write_file_atomic(
        s.out / "tune.json", model::to_json(doc).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    Status b = write_file_atomic(s.out / "tune.html", report::tune_html(doc));
    if (!a.ok()) err << "profile-train tune: " << terminal_safe(a.message()) << "\n";
    if (!b.ok()) err << "profile-train tune: " << terminal_safe(b.message()) << "\n";
  };
  s.options.on_update = [&](const tn::Tuner& t) {
    tn::TuneResult partial = t.result();
    if (partial.stop_reason.empty()) partial.stop_reason = "in progress";
    auto [sd, dof] = t.pooled_noise();
    partial.pooled_relative_sd = sd;
    partial.noise_samples = dof;
    partial.elapsed_s = t.elapsed_s();
    write_outputs(partial);
  };
  s.options.on_trial = [&](const tn::Trial& trial, const tn::Tuner& t) {
    if (!s.quiet) report::write_tune_trial_line(err, tn::trial_progress(trial, t, space));
  };

  auto stop_signals = std::make_unique<platform::StopSignals>(&g_interrupted);
  tn::ProcessTrialRunner local_runner(s.runner);
  tn::TrialRunner& runner = ray_runner ? static_cast<tn::TrialRunner&>(*ray_runner) : local_runner;
  tn::Tuner tuner(space, s.options, runner);
  const tn::TuneResult result = tuner.run();
  if (ray_runner) {
    ray_runner->stop_all();  // nothing submitted is left running (a no-op after a normal end)
    for (const std::string& id : ray_runner->abandoned()) report::write_tune_abandoned_job(err, id);
  }
  stop_signals.reset();  // the previous handlers are back
  write_outputs(result);

  return print_summary(err, s, with_execution(result), ray_runner != nullptr);
}

// The options of `tune` (README "Commands" lists them; `tune --help` prints these texts).
void add_tune_options(CLI::App& sub, TuneArgs& args) {
  sub.add_option("--strategy", args.strategy, "guided (diagnosis-guided, default) or grid (every combination)");
  sub.add_option("--knob", args.knobs,
                  "NAME=V1,V2,... or NAME=auto (repeatable; the first value is the baseline). When given, only these "
                  "knobs (and the command's {placeholders}) are searched. Names: " + knob_names())
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_option("--max-trials", args.max_trials, "stop after this many trials (0 = no limit)");
  sub.add_option("--time-budget", args.time_budget_s, "stop after this many seconds (0 = no limit)");
  sub.add_option("--trial-timeout", args.trial_timeout_s, "kill one measurement after this many seconds");
  sub.add_option("--repeats", args.repeats, "measurements per trial (noise estimate), default 2");
  sub.add_option("--baseline-repeats", args.baseline_repeats, "measurements of the baseline, default 3");
  sub.add_option("--confirm-repeats", args.confirm_repeats,
                  "fresh interleaved (baseline, winner) pairs of the final head-to-head check, default 3 (0: no check, "
                  "no gain claimed)");
  sub.add_flag("--allow-quality-change", args.allow_quality_change,
               "let a trial whose training loss is worse than the baseline's (beyond the baseline's own spread) or "
               "non-finite be the winner; by default it is marked \"changes the loss\" and not kept");
  sub.add_option("--min-gain", args.min_gain, "smallest relative gain worth keeping, default 0.02");
  sub.add_option("--max-memory", args.max_memory, "peak-memory cap, e.g. 40G: batch sizes predicted above it are skipped (from the baseline's memory budget) and trials measured above it count as OOM");
  sub.add_option("--out", args.out, "output folder (tune.json, tune.html, trials/)");
  sub.add_option("--run-arg", args.run_args, "extra option for `profile-train run`, e.g. --run-arg=--steps=20")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_flag("--quiet", args.quiet, "no progress lines");
  sub.add_option("--executor", args.executor,
                  "local (default: trials one after the other here) or ray (each trial a Ray job, see README)");
  sub.add_option("--ray-address", args.ray_address,
                  "the Ray dashboard's address for --executor ray, e.g. http://head:8265 (default: RAY_ADDRESS)");
  sub.add_option("--parallel", args.parallel, "ray: trials (measurements) in flight at once, default 1");
  sub.add_option("--trial-gpus", args.trial_gpus,
                  "ray: GPUs per trial (entrypoint_num_gpus); default 1, 0 for the workload with --device cpu");
  sub.add_option("--trial-cpus", args.trial_cpus, "ray: CPUs per trial (entrypoint_num_cpus), default 1");
  sub.add_option("--ray-pending-timeout", args.ray_pending_timeout_s,
                  "ray: give a trial up when its job waits this many seconds for resources, default 600");
  sub.add_flag("--ray-no-resource-check", args.ray_no_resource_check,
                "ray: do not refuse trial resources that no live node has (autoscaling clusters)");
  sub.add_option("--ray-runtime-env", args.ray_runtime_env,
                  "ray: runtime_env JSON for every job, e.g. '{\"working_dir\": \".\"}'");
  sub.add_option("--workload", args.workload,
                  "tune the built-in workload (cnn, mlp, transformer); every argument after MODEL is a workload flag");
  sub.add_option("--workload-binary", args.workload_binary,
                  "the profile-train-workload executable (default: next to profile-train)");
  sub.add_option("command", args.command, "the command to tune, after --");
}

// After parsing: the workload's flags (the raw tail after --workload MODEL) or the command after --, checked for
// options in the wrong place; then the sweep.
int dispatch_tune(const Io& io, TuneArgs& args, CLI::App& sub, const std::vector<std::string>& after_dashes) {
  std::ostream& err = *io.err;
  std::vector<std::string> workload_flags;
  if (!args.workload.empty()) {
    auto tail = workload_tail();
    if (!tail.ok()) {
      err << "profile-train tune: " << terminal_safe(tail.status().message()) << "\n";
      return kExitFailure;
    }
    // Every token CLI11 did not consume must be in the tail, and nothing else: a tune option written after
    // --workload would otherwise be silently taken by tune.
    size_t unconsumed = sub.remaining().size() + args.command.size() + after_dashes.size();
    for (const auto& r : sub.remaining()) {
      if (r == "--") --unconsumed;
    }
    if (unconsumed != tail->size()) {
      err << "profile-train tune: put tune's own options before --workload MODEL; everything after it is "
                   "passed to the workload\n";
      return kExitBadInput;
    }
    workload_flags = *tail;
  } else if (!after_dashes.empty() && !args.command.empty()) {
    err << "profile-train tune: unexpected argument '" << terminal_safe(args.command[0])
              << "' before --: the command goes after --\n";
    return kExitBadInput;
  } else if (!sub.remaining().empty()) {
    std::string extra;
    for (const auto& r : sub.remaining()) extra += " " + r;
    if (extra != " --") {
      err << "profile-train tune: unknown option(s):" << terminal_safe(extra) << " (the command goes after --)\n";
      return kExitBadInput;
    }
  }
  if (args.workload.empty() && !after_dashes.empty()) args.command = after_dashes;
  return run_tune(io, args, workload_flags);
}

}  // namespace

Runner add_tune(CLI::App& app, std::vector<std::string> command, Io io) {
  auto args = std::make_shared<TuneArgs>();
  auto after_dashes = std::make_shared<std::vector<std::string>>(std::move(command));
  auto* sub = app.add_subcommand(
      "tune",
      "Sweep batch size, DataLoader workers, pin_memory, AMP (...) re-measuring every trial through `run`.\n"
      "  profile-train tune [options] --workload cnn [workload flags...]\n"
      "  profile-train tune [options] -- python train.py --bs {batch_size} --workers {num_workers}\n"
      "  profile-train tune [options] -- python train.py     (knobs applied by the Python shim)");
  add_tune_options(*sub, *args);
  sub->allow_extras();  // workload flags; their order is recovered from the raw command line
  return [args, sub, after_dashes, io]() -> int { return dispatch_tune(io, *args, *sub, *after_dashes); };
}

}  // namespace profile_train::cli
