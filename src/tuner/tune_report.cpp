#include "profile_train/tuner/tune_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "profile_train/common/format.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

constexpr const char* kIntervalMethod =
    "exp(mean +- t(dof) x sd / sqrt(n)) of ln(winner / baseline) over fresh interleaved pairs, the sd pooling "
    "their spread with the session's paired noise";

namespace {

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

TrialRef trial_ref(const Trial& t) {
  return {t.index, t.config, t.mean, t.stddev, static_cast<int64_t>(t.values.size())};
}

std::string py_bool(const std::string& v) { return v == "1" ? "True" : "False"; }

// Trial / baseline: exp(mean ln ratio) of its search pairs against the baseline, else the ratio of means.
constexpr const char* kLossMethod =
    "the training loss of each trial's measured steps (the scalar tensor backward() is called on, recorded by the "
    "Python shim) against the mean of the baseline's runs at the same samples seen (the same step when the batch "
    "size is unchanged); it changes the loss when non-finite or worse by more than max(3 x t95/1.96 x the "
    "baseline runs' spread x sqrt(1/n_trial + 1/n_baseline), 5% of the baseline's loss)";

LossRow loss_row(const LossComparison& l) {
  LossRow row;
  row.status = l.status;
  row.compared_by = l.compared_by;
  row.points = l.points;
  row.baseline_runs = l.baseline_runs;
  row.trial_runs = l.trial_runs;
  row.spread_dof = l.spread_dof;
  row.non_finite = l.non_finite;
  if (l.status == "same loss" || (l.status == "changes the loss" && !l.non_finite)) {
    row.baseline_mean = l.baseline_mean;
    row.trial_mean = l.trial_mean;
    row.difference = l.difference;
    row.tolerance = l.tolerance;
    row.spread = l.spread;
  }
  row.note = l.note;
  return row;
}

double vs_baseline(const Trial& t, const TuneResult& result) {
  const Trial& base = result.trials.at(result.baseline);
  if (&t == &base) return 1.0;
  double sum = 0;
  int n = 0;
  for (const Pair& p : t.pairs) {
    if (p.reference == result.baseline) {
      sum += p.log_ratio();
      ++n;
    }
  }
  return n > 0 ? std::exp(sum / n) : t.mean / base.mean;
}

std::string interval_text(const PairedEstimate& e) {
  return "x" + format_fixed(e.ratio, 2) + " (95% interval " + format_fixed(e.low, 2) + "-" + format_fixed(e.high, 2) +
         ", " + std::to_string(e.pairs) + " pairs)";
}

}  // namespace


Speedup speedup_of(const Trial& best, const Trial& baseline, double pooled_relative_sd) {
  Speedup s;
  if (!best.ok() || !baseline.ok() || baseline.mean <= 0) return s;
  s.value = best.mean / baseline.mean;
  // Relative standard error of each mean: its own spread when it has repeats, else the pooled noise.
  auto rel_se = [&](const Trial& t) {
    const double n = static_cast<double>(t.values.size());
    const double rel_sd = (t.values.size() >= 2 && t.mean > 0) ? t.stddev / t.mean : pooled_relative_sd;
    return rel_sd / std::sqrt(n);
  };
  const double a = rel_se(best), b = rel_se(baseline);
  s.sigma = s.value * std::sqrt(a * a + b * b);
  s.sigma_known = best.values.size() >= 2 || baseline.values.size() >= 2 || pooled_relative_sd > 0;
  return s;
}

CodeChange code_change(const Config& baseline, const Config& best, const TuneTarget& target, bool on_gpu) {
  CodeChange out;
  Config changed;
  for (const auto& [k, v] : best) {
    auto it = baseline.find(k);
    const std::string from = it == baseline.end() ? std::string() : it->second;
    if (from != v) {
      out.changes.push_back({k, from, v});
      changed[k] = v;
    }
  }
  if (changed.empty()) {
    out.summary = "keep the baseline configuration: no knob gave a gain above the measured noise";
    return out;
  }
  for (const KnobChange& c : out.changes) {
    out.summary += (out.summary.empty() ? "" : ", ") + c.knob + " " + c.from + " -> " + c.to;
  }

  // Python edits that make the best setting permanent in a PyTorch script.
  std::vector<PythonEdit>& py = out.python;
  using K = KnobName;
  // The DataLoader knobs are named as its keyword arguments.
  std::string dl_args;
  auto dl = [&](const char* knob, bool boolean) {
    const auto it = changed.find(knob);
    if (it != changed.end()) dl_args += std::string(", ") + knob + "=" + (boolean ? py_bool(it->second) : it->second);
  };
  dl(K::kBatchSize, false);
  dl(K::kNumWorkers, false);
  dl(K::kPinMemory, true);
  dl(K::kPrefetchFactor, false);
  dl(K::kPersistentWorkers, true);
  if (!dl_args.empty()) py.push_back({"DataLoader arguments", "DataLoader(..." + dl_args + ")"});
  const std::string dev = on_gpu ? "cuda" : "cpu";
  if (changed.count(K::kAmp)) {
    const std::string a = changed[K::kAmp];
    if (a == "bf16") {
      py.push_back({"mixed precision (bf16 autocast around forward + loss)",
                    "with torch.autocast(\"" + dev + "\", dtype=torch.bfloat16):\n"
                    "    loss = loss_fn(model(inputs), targets)"});
    } else if (a == "fp16") {
      py.push_back({"mixed precision (fp16 autocast + gradient scaler)",
                    "scaler = torch.amp.GradScaler(\"" + dev + "\")\n"
                    "with torch.autocast(\"" + dev + "\", dtype=torch.float16):\n"
                    "    loss = loss_fn(model(inputs), targets)\n"
                    "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()"});
    } else {
      py.push_back({"mixed precision off", "# remove the torch.autocast(...) context"});
    }
  }
  if (changed.count(K::kChannelsLast) && changed[K::kChannelsLast] == "1") {
    py.push_back({"channels-last memory format",
                  "model = model.to(memory_format=torch.channels_last)\n"
                  "inputs = inputs.to(memory_format=torch.channels_last)"});
  }
  if (changed.count(K::kCudnnBenchmark)) {
    py.push_back({"cuDNN autotuner", "torch.backends.cudnn.benchmark = " + py_bool(changed[K::kCudnnBenchmark])});
  }
  if (changed.count(K::kTf32)) {
    py.push_back({"TF32 matmul / convolution", "torch.backends.cuda.matmul.allow_tf32 = " + py_bool(changed[K::kTf32]) +
                                                   "\ntorch.backends.cudnn.allow_tf32 = " + py_bool(changed[K::kTf32])});
  }
  if (changed.count(K::kThreads) && changed[K::kThreads] != "0") {
    const std::string n = changed[K::kThreads];
    py.push_back({"CPU thread pools (right after import torch)",
                  "torch.set_num_threads(" + n + ")\ntorch.set_num_interop_threads(" + n + ")"});
  }
  if (changed.count(K::kOptimizerImpl) && changed[K::kOptimizerImpl] != "default") {
    const std::string impl = changed[K::kOptimizerImpl];
    py.push_back({impl == "fused" ? "fused optimizer step" : "multi-tensor (foreach) optimizer step",
                  "optimizer = torch.optim.AdamW(model.parameters(), ..., " + impl + "=True)"});
  }
  if (changed.count(K::kCompile) && changed[K::kCompile] != "off") {
    const std::string mode = changed[K::kCompile];
    py.push_back({"torch.compile of the model", mode == "default" ? std::string("model = torch.compile(model)")
                                                                  : "model = torch.compile(model, mode=\"" + mode + "\")"});
  }

  // The command line with the best values (what to run from now on).
  if (target.kind == TuneTarget::Kind::kWorkload) {
    std::vector<std::string> argv = {target.workload_binary.filename().string()};
    for (auto& a : workload_args(target, best, "result.json")) argv.push_back(a);
    argv.resize(argv.size() - 2);  // drop the tuner's --result FILE
    out.command = argv;
  } else {
    if (!placeholders_in(target.args).empty()) {
      auto sub = substitute_placeholders(target.args, best);
      if (sub.ok()) out.command = *sub;
    }
    nlohmann::json ov = overrides_for(best, placeholders_in(target.args));
    if (!ov.empty()) out.shim_overrides = std::move(ov);  // PROFILE_TRAIN_OVERRIDES reproduces it without an edit
  }
  return out;
}

TuneReport tune_report(const TuneResult& result, const KnobSpace& space, const TuneReportContext& ctx) {
  TuneReport doc;
  doc.schema_version = std::string(kTuneSchemaVersion);
  doc.tool.version = ctx.tool_version;
  doc.created_utc = utc_now();
  TuneTargetInfo& target = doc.target;
  target.args = ctx.target.args;
  if (ctx.target.kind == TuneTarget::Kind::kWorkload) {
    target.workload = true;
    target.model = ctx.target.model;
    target.binary = ctx.target.workload_binary.string();
    target.applied_through = "workload flags";
  } else {
    target.placeholders = placeholders_in(ctx.target.args);
    bool any_override = false;
    for (const KnobRange& r : space) {
      if (!target.placeholders.count(r.def->name)) any_override = true;
    }
    target.applied_through = target.placeholders.empty() ? "shim overrides (PROFILE_TRAIN_OVERRIDES)"
                             : any_override              ? "argv placeholders + shim overrides"
                                                         : "argv placeholders";
  }
  doc.strategy = ctx.strategy;
  bool per_sample = true;
  for (const Trial& t : result.trials) {
    if (t.ok() && !t.per_sample) per_sample = false;
  }
  doc.metric.unit = per_sample ? "samples/s" : "steps/s";
  doc.metric.note = ctx.metric_note.empty()
                        ? std::string("batch_size / steady-state step time of each run's report.json: the "
                                      "10%-trimmed mean of its steps after the leading warm-up steps "
                                      "(those above median + max(3 x 1.4826 MAD, 25%), at most half; "
                                      "runs[].warmup_excluded lists them); steps/s when the batch size "
                                      "is unknown")
                        : ctx.metric_note;
  for (const KnobRange& r : space) doc.space[r.def->name] = {r.values, r.is_auto};
  const TuneOptions& o = ctx.options;
  doc.budget = {o.max_trials, o.time_budget_s, o.trial_timeout_s, o.repeats, std::max(o.repeats, o.baseline_repeats),
                o.min_gain,   o.noise_k,       o.confirm_repeats, o.max_memory_bytes};
  int measurements = 0;
  for (const Trial& t : result.trials) measurements += t.measurements;
  doc.status = {result.complete,   result.partial,   result.stop_reason,   static_cast<int64_t>(result.trials.size()),
                measurements,      result.elapsed_s, result.oom_trials,    result.failed_trials,
                result.rerun_pairs, result.unreliable_pairs};
  doc.noise = {result.pooled_relative_sd, result.noise_samples,
               "spread of ln(candidate / reference) over interleaved pairs (around each pair group's mean) and of "
               "consecutive repeats of the baseline, divided by sqrt(2) for one run"};
  doc.skipped_knobs = result.skipped;
  for (const RunRecord& r : result.runs) {
    RunRow row;
    row.trial = r.trial;
    row.repeat = r.repeat;
    row.phase = r.phase;
    row.role = r.role;
    row.status = std::string(to_string(r.status));
    if (r.throughput > 0) row.throughput = r.throughput;
    if (r.step_ms > 0) row.step_ms = r.step_ms;
    row.metric = r.steady.method;
    row.warmup_excluded = r.steady.warmup_excluded;
    row.trimmed = r.steady.trimmed;
    row.excluded_ms = r.steady.excluded_ms;
    if (r.host_known) {
      row.load_1m = r.load_1m;
      row.wall_s = r.wall_s;
      row.cpu_time_s = r.cpu_time_s;
    }
    row.excluded = r.excluded;
    doc.runs.push_back(std::move(row));
  }

  const Trial* base = result.baseline >= 0 ? &result.trials[result.baseline] : nullptr;
  const Trial* best = result.best >= 0 ? &result.trials[result.best] : nullptr;
  for (size_t i = 0; i < result.trials.size(); ++i) {
    const Trial& t = result.trials[i];
    TrialRow j;
    j.index = t.index;
    j.config = t.config;
    j.reason = t.reason;
    j.status = std::string(to_string(t.status));
    if (t.ok()) {
      j.throughput = t.mean;
      j.stddev = t.stddev;
      if (t.values.size() > 1 && t.mean > 0) j.relative_sd = t.stddev / t.mean;
    }
    j.values = t.values;
    j.measurements = t.measurements;
    j.early_stopped = t.early_stopped;
    j.accepted = t.accepted;
    j.is_baseline = static_cast<int>(i) == result.baseline;
    j.is_best = static_cast<int>(i) == result.best;
    j.duration_s = t.duration_s;
    j.peak_memory_bytes = t.peak_memory_bytes;
    j.message = t.message;
    j.dirs = t.dirs;
    j.diagnosis = t.diagnosis;
    for (const Pair& p : t.pairs) {
      j.pairs.push_back({result.trials.at(p.reference).index, p.reference_value, p.value, p.confirm ? "confirm" : "search"});
    }
    if (base != nullptr && t.ok() && base->mean > 0) j.vs_baseline = vs_baseline(t, result);
    j.loss = loss_row(t.loss);
    j.compile_s = t.mean_compile_s();
    doc.trials.push_back(std::move(j));
  }

  // Throughput per knob value: the best trial with that value, and the trial that differs from the best
  // configuration only in this knob (the knob's marginal effect at the optimum) when it was measured.
  for (const KnobRange& r : space) {
    std::vector<PerKnobRow> rows;
    for (const std::string& v : r.values) {
      double best_tp = 0;
      int count = 0;
      std::optional<double> at_best;
      for (const Trial& t : result.trials) {
        auto it = t.config.find(r.def->name);
        if (it == t.config.end() || it->second != v) continue;
        ++count;
        if (t.ok()) best_tp = std::max(best_tp, t.mean);
        if (best != nullptr && t.ok()) {
          Config a = t.config, b = best->config;
          a.erase(r.def->name);
          b.erase(r.def->name);
          if (a == b) at_best = t.mean;
        }
      }
      if (count == 0) continue;
      rows.push_back({v, count, best_tp > 0 ? std::optional<double>(best_tp) : std::nullopt, at_best});
    }
    doc.per_knob[r.def->name] = std::move(rows);
  }
  if (base) doc.baseline = trial_ref(*base);
  if (best) doc.best = trial_ref(*best);
  const Confirmation& cf = result.confirmation;
  if (cf.candidate >= 0) {
    ConfirmationRow c;
    c.candidate = result.trials.at(cf.candidate).index;
    c.ran = cf.ran;
    c.status = cf.status;
    c.claimed = cf.claimed;
    c.pairs = cf.estimate.pairs;
    if (cf.ran) c.ratio = cf.estimate.ratio;
    if (cf.ran && cf.estimate.interval_known()) {
      c.low = cf.estimate.low;
      c.high = cf.estimate.high;
    }
    c.degrees_of_freedom = cf.estimate.dof;
    c.method = kIntervalMethod;
    c.load_1m = cf.load_1m;
    c.search_load_1m = result.search_load_1m;
    c.cpus = cf.cpus;
    c.repeated = cf.repeated;
    doc.confirmation = c;
  }
  if (base != nullptr && best != nullptr) {
    SpeedupRow sp;
    if (best == base) {
      sp = {1.0, std::nullopt, std::nullopt, false, "none: the baseline is kept"};
    } else if (cf.ran && cf.candidate == result.best) {
      sp = {cf.estimate.ratio, cf.estimate.low, cf.estimate.high, cf.claimed,
            "95%, head to head: " + std::string(kIntervalMethod)};
    } else {
      sp = {vs_baseline(*best, result), std::nullopt, std::nullopt, false,
            "not measured: the head-to-head check was " + (cf.status.empty() ? std::string("not run") : cf.status)};
    }
    CodeChange change = code_change(base->config, best->config, ctx.target, ran_on_gpu(best->report).value_or(false));
    if (best == base && cf.ran && !cf.claimed) {
      const Trial& c = result.trials.at(cf.candidate);
      change.summary = "keep the baseline configuration: trial #" + std::to_string(c.index) + " (" +
                       describe_config(c.config, space) + ") looked faster in the search, but the head-to-head "
                       "check did not confirm it: " + interval_text(cf.estimate);
    } else if (best != base && !cf.claimed) {
      change.summary = "unconfirmed (" + sp.interval + "): " + change.summary;
    }
    doc.speedup = std::move(sp);
    doc.change = std::move(change);
  }
  doc.quality.allow_quality_change = ctx.options.allow_quality_change;
  doc.quality.method = kLossMethod;
  if (best != nullptr) {
    doc.quality.winner = best->index;
    doc.quality.loss = loss_row(best->loss);
  }
  doc.log = result.log;
  return doc;
}

TrialProgress trial_progress(const Trial& trial, const Tuner& t, const KnobSpace& space) {
  TrialProgress p;
  p.index = trial.index;
  p.config = describe_config(trial.config, space);
  p.ok = trial.ok();
  p.mean = trial.mean;
  p.stddev = trial.stddev;
  p.per_sample = trial.per_sample;
  p.values = trial.values.size();
  if (p.ok && t.baseline() >= 0 && t.trial(t.baseline()).ok() && trial.index - 1 != t.baseline()) {
    p.paired_ratio = t.ratio(trial.index - 1, t.baseline());
    p.baseline_mean = t.trial(t.baseline()).mean;
    const LossComparison l = compare_loss(t.trial(t.baseline()).losses, trial.losses, t.options().loss_guard);
    p.changes_loss = l.changes;
    p.loss_non_finite = l.non_finite;
  }
  p.early_stopped = trial.early_stopped;
  if (!p.ok) {
    p.status = std::string(to_string(trial.status));
    p.message = trial.message;
  }
  p.measurements = trial.measurements;
  p.duration_s = trial.duration_s;
  p.reason = trial.reason;
  p.compile_s = trial.mean_compile_s();
  return p;
}

}  // namespace profile_train::tuner
