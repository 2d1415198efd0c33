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

// "profile-train tune: guided over amp{off,bf16} threads{0,1} (4 combinations); results in OUT".
void print_space(std::ostream& err, const TuneSetup& s) {
  err << "profile-train tune: " << s.options.strategy << " over";
  size_t grid = 1;
  for (const auto& r : s.space) {
    err << " " << r.def->name << "{";
    for (size_t i = 0; i < r.values.size(); ++i) err << (i ? "," : "") << terminal_safe(r.values[i]);
    err << "}";
    grid *= r.values.size();
  }
  err << " (" << grid << " combinations); results in " << terminal_safe(s.out.string()) << "\n";
}

// One progress line per finished trial: its rate, the paired ratio next to the baseline's rate, flags.
void print_trial(std::ostream& err, const tn::Trial& trial, const tn::Tuner& t, const tn::KnobSpace& space) {
  err << "tune [" << trial.index << "] " << terminal_safe(tn::describe_config(trial.config, space)) << ": ";
  if (trial.ok()) {
    err << format_significant(trial.mean) << (trial.per_sample ? " samples/s" : " steps/s");
    if (trial.values.size() > 1 && trial.mean > 0) err << " ±" << format_fixed(100.0 * trial.stddev / trial.mean) << "%";
    if (t.baseline() >= 0 && t.trial(t.baseline()).ok() && trial.index - 1 != t.baseline()) {
      // The paired ratio next to both absolute figures: means of different runs and a ratio of interleaved
      // pairs need not agree, and must not read as a contradiction.
      err << " (x" << format_fixed(t.ratio(trial.index - 1, t.baseline()), 2) << " paired vs baseline's "
          << format_significant(t.trial(t.baseline()).mean) << ")";
      const tn::LossComparison l =
          tn::compare_loss(t.trial(t.baseline()).losses, trial.losses, t.options().loss_guard);
      if (l.changes) err << " [changes the loss" << (l.non_finite ? ": not finite" : "") << "]";
    }
    if (trial.early_stopped) err << " [early stop: clearly slower]";
  } else {
    err << tn::to_string(trial.status) << (trial.message.empty() ? "" : " (" + terminal_safe(trial.message) + ")");
  }
  err << " [" << trial.measurements << " run" << (trial.measurements == 1 ? "" : "s") << ", "
      << format_fixed(trial.duration_s) << " s]";
  if (!trial.reason.empty()) err << " <- " << terminal_safe(trial.reason);
  err << "\n";
}

// "head to head #2 vs #1: x1.35 (95% interval 0.96-1.89) over 2 interleaved pairs at a 1-minute load of ...".
void print_confirmation(std::ostream& err, const tn::TuneResult& result, const tn::Trial& base) {
  const tn::Confirmation& cf = result.confirmation;
  if (cf.candidate < 0) return;
  const tn::Trial& c = result.trials[cf.candidate];
  err << "  head to head #" << c.index << " vs #" << base.index << ": ";
  if (cf.ran) {
    err << "x" << format_fixed(cf.estimate.ratio, 2);
    if (cf.estimate.interval_known()) {
      err << " (95% interval " << format_fixed(cf.estimate.low, 2) << "-" << format_fixed(cf.estimate.high, 2) << ")";
    }
    err << " over " << cf.estimate.pairs << " interleaved pairs";
    if (cf.load_1m) {
      err << " at a 1-minute load of " << format_significant(*cf.load_1m, 2) << " on " << cf.cpus << " CPUs";
      if (result.search_load_1m) err << " (search: " << format_significant(*result.search_load_1m, 2) << ")";
    }
    err << ": ";
  }
  err << terminal_safe(cf.status) << "\n";
}

// apply.json: the winner's overrides for `run --apply` (or PROFILE_TRAIN_APPLY), with what it was measured at
// and the code change that makes it permanent.
void write_apply_file(std::ostream& err, const TuneSetup& s, const tn::Trial& best, const tn::SpeedupRow& sp,
                      const tn::CodeChange& change) {
  nlohmann::json apply = {{"overrides", *change.shim_overrides},
                          {"config", best.config},
                          {"speedup", {{"value", sp.value}, {"claimed", sp.claimed}}},
                          {"python", nlohmann::json::array()}};
  if (sp.low && sp.high) {
    apply["speedup"]["low"] = *sp.low;
    apply["speedup"]["high"] = *sp.high;
  }
  for (const auto& e : change.python) apply["python"].push_back({{"what", e.what}, {"code", e.code}});
  const fs::path file = s.out / "apply.json";
  Status w = write_file_atomic(file, apply.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!w.ok()) {
    err << "profile-train tune: " << terminal_safe(w.message()) << "\n";
  } else {
    err << "  keep it without editing the program: profile-train run --apply " << terminal_safe(file.string())
        << " -- " << terminal_safe(s.runner.target.args.empty() ? std::string("CMD") : s.runner.target.args[0])
        << " ... (or PROFILE_TRAIN_APPLY=" << terminal_safe(file.string()) << " in its environment)\n";
  }
}

// The final summary: trials and noise, skipped knobs, baseline, head to head, best, loss, the change (and
// apply.json); returns tune's exit code.
int print_summary(std::ostream& err, const TuneSetup& s, const tn::TuneResult& result, const tn::TuneReport& doc,
                  const tn::KnobSpace& space, bool ray) {
  err << "profile-train tune: " << result.trials.size() << " trials, " << terminal_safe(result.stop_reason);
  if (result.partial) err << " (partial results)";
  if (result.noise_samples > 0) err << "; measured noise ±" << format_fixed(100.0 * result.pooled_relative_sd) << "%";
  if (result.rerun_pairs > 0 || result.unreliable_pairs > 0) {
    err << "; " << result.rerun_pairs << " pair(s) re-run and " << result.unreliable_pairs
        << " left out as unreliable: their two runs saw different load";
  }
  err << "\n";
  for (const auto& k : result.skipped) {
    std::string values;
    for (const auto& v : k.values) values += (values.empty() ? "" : ",") + v;
    err << "  skipped " << terminal_safe(k.knob) << "=" << terminal_safe(values) << ": " << terminal_safe(k.reason) << "\n";
  }
  if (result.baseline < 0 || result.best < 0) {
    err << "profile-train tune: the baseline could not be measured";
    if (!result.trials.empty()) {
      err << " (" << tn::to_string(result.trials.front().status) << ": " << terminal_safe(result.trials.front().message) << ")";
      err << "; see " << terminal_safe((s.out / "trials").string());
    }
    err << "\n";
    return g_interrupted.load() ? exit_code_for_stop_signal(platform::StopSignals::last_signal()) : kExitChildFailed;
  }
  const tn::Trial& base = result.trials[result.baseline];
  const tn::Trial& best = result.trials[result.best];
  const std::string unit = best.per_sample ? " samples/s" : " steps/s";
  err << "  baseline #" << base.index << "  " << terminal_safe(tn::describe_config(base.config, space)) << ": " << format_significant(base.mean)
      << unit << "\n";
  print_confirmation(err, result, base);
  // Both are set when the baseline and the best trial are (tune_report).
  const tn::SpeedupRow& sp = *doc.speedup;
  const tn::CodeChange& change = *doc.change;
  err << "  best     #" << best.index << "  " << terminal_safe(tn::describe_config(best.config, space)) << ": " << format_significant(best.mean)
      << unit << "  (x" << format_fixed(sp.value, 2);
  if (sp.low && sp.high) err << ", 95% interval " << format_fixed(*sp.low, 2) << "-" << format_fixed(*sp.high, 2);
  err << (result.best == result.baseline ? "" : sp.claimed ? ", confirmed" : ", not confirmed") << ")\n";
  if (const auto& l = doc.quality.loss) {
    err << "  loss     #" << best.index << " vs #" << base.index << ": " << terminal_safe(l->status);
    if (l->trial_mean && l->baseline_mean && l->tolerance) {
      err << " (" << format_significant(*l->trial_mean) << " vs " << format_significant(*l->baseline_mean) << ", bar "
          << format_significant(*l->tolerance) << ", per " << (l->compared_by == "step" ? "step" : "sample seen") << ")";
    }
    err << "\n";
    if (l->compared_by == "samples seen" && !l->note.empty()) err << "    note: " << terminal_safe(l->note) << "\n";
  }
  for (const tn::Trial& t : result.trials) {
    if (t.loss.changes) {
      err << "  trial #" << t.index << " changes the loss ("
          << (t.loss.non_finite ? std::string("not finite")
                                : format_significant(t.loss.trial_mean) + " vs " + format_significant(t.loss.baseline_mean) +
                                      ", bar " + format_significant(t.loss.tolerance))
          << ")" << (s.options.allow_quality_change ? "" : ": not eligible as the winner") << "\n";
    }
  }
  err << "  change: " << terminal_safe(change.summary) << "\n";
  if (s.runner.target.kind == tn::TuneTarget::Kind::kCommand) {
    for (const auto& e : change.python) err << "    " << terminal_safe(e.code, true) << "\n";
  }
  if (change.shim_overrides && result.best != result.baseline) write_apply_file(err, s, best, sp, change);
  if (change.command) {
    err << "  command:";
    for (const auto& a : *change.command) err << " " << terminal_safe(a);
    err << "\n";
  }
  if (ray && doc.execution) {
    const tn::Execution& e = *doc.execution;
    err << "  parallelism: " << format_fixed(e.sum_measurement_s) << " s of measurements in "
        << format_fixed(e.wall_s) << " s wall time (" << format_fixed(e.saved_s) << " s saved)\n";
    if (e.ray && e.ray->note) err << "  note: " << terminal_safe(*e.ray->note) << "\n";
  }
  err << "  wrote " << terminal_safe((s.out / "tune.json").string()) << " and " << terminal_safe((s.out / "tune.html").string()) << "\n";
  return g_interrupted.load() ? exit_code_for_stop_signal(platform::StopSignals::last_signal()) : kExitOk;
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
  if (!s.quiet) {
    err << "profile-train tune: trials run as Ray jobs on " << terminal_safe(exec.address) << " (Ray "
        << terminal_safe(exec.ray_version) << "), " << exec.parallel << " at a time, "
        << format_fixed(exec.trial_gpus, 0) << " GPU / " << format_fixed(exec.trial_cpus, 0) << " CPU each\n";
  }
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
  if (!s.quiet) print_space(err, s);
  tn::ExecutionInfo exec = execution_info(err, s, ray_runner.get());
  auto with_execution = [&](const tn::TuneResult& r) {
    tn::TuneReport doc = tn::tune_report(r, space, ctx);
    if (ray_runner) exec.placements = ray_runner->placements();
    tn::add_execution(doc, r, exec);
    return doc;
  };
  auto write_outputs = [&](const tn::TuneResult& r) {
    const tn::TuneReport doc = with_execution(r);
    // Command arguments are not necessarily UTF-8: replaced (U+FFFD) rather than throwing.
    Status a = write_file_atomic(s.out / "tune.json",
                                 tn::to_json(doc).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
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
    if (!s.quiet) print_trial(err, trial, t, space);
  };

  auto stop_signals = std::make_unique<platform::StopSignals>(&g_interrupted);
  tn::ProcessTrialRunner local_runner(s.runner);
  tn::TrialRunner& runner = ray_runner ? static_cast<tn::TrialRunner&>(*ray_runner) : local_runner;
  tn::Tuner tuner(space, s.options, runner);
  const tn::TuneResult result = tuner.run();
  if (ray_runner) {
    ray_runner->stop_all();  // nothing submitted is left running (a no-op after a normal end)
    for (const std::string& id : ray_runner->abandoned()) {
      err << "profile-train tune: Ray job " << terminal_safe(id)
          << " was given up while PENDING; Ray applies its stop when it could start\n";
    }
  }
  stop_signals.reset();  // the previous handlers are back
  write_outputs(result);

  return print_summary(err, s, result, with_execution(result), space, ray_runner != nullptr);
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
