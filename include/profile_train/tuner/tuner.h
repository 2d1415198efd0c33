// The tuning session (budget, repeats, noise, significance, early stop, the final head-to-head check) and the
// search strategies:
//  - guided (default): baseline with repeats -> diagnose (the report's recommendations and verdict) -> try the
//    knob the top applicable recommendation maps to -> keep a change only when its gain beats the measured
//    noise -> re-diagnose from the new best -> ... until no knob helps or the budget is spent.
//  - grid: the full cartesian product, for comparison.
// Every candidate run immediately follows a fresh run of the configuration it is compared with (ABAB), and
// the winner is confirmed against the baseline with fresh interleaved pairs before it is reported
// (statistics.h). Knobs that cannot act on the machine the baseline ran on are skipped (skipped_values).
// Owner: tuner component. Single-threaded; the runner is called synchronously (a parallel runner
// runs a batch of independent measurements inside one call).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/tuner/knobs.h"
#include "profile_train/tuner/trial.h"

namespace profile_train::tuner {

struct TuneOptions {
  std::string strategy = "guided";
  int max_trials = 0;            // configurations measured (repeats count as one trial); 0 = no limit
  double time_budget_s = 0;      // wall time for the whole sweep; 0 = no limit
  double trial_timeout_s = 0;    // per measurement; 0 = no limit
  int repeats = 2;               // measurements per trial
  int baseline_repeats = 3;      // measurements of the baseline (noise estimate); at least `repeats`
  int confirm_repeats = 3;       // fresh (baseline, winner) pairs of the head-to-head check; 0 = no check
  double min_gain = 0.02;        // a change must gain more than this fraction ...
  double noise_k = 2.0;          // ... and more than noise_k standard errors of the difference
  // Load rule (a pair is re-run, not averaged, when its two runs saw different load): the runs' 1-minute load
  // averages differ by more than max(load_delta_min, load_delta_cpu_fraction x CPUs), or a run's CPUs used
  // (CPU time / wall time) is off its configuration's earlier runs' median by more than cpu_ratio_tolerance
  // (a ratio; the configuration's own value is compared, so a knob that changes parallelism is not flagged).
  double load_delta_min = 1.0;
  double load_delta_cpu_fraction = 0.25;
  double cpu_ratio_tolerance = 1.3;
  int max_pair_reruns = 2;       // then the pair is reported as unreliable and not used
  double early_stop_fraction = 0.15;  // first measurement this much below the best -> skip the repeats
  double slow_kill_factor = 4.0; // kill a measurement running > this x the best trial's (batch-scaled) time
  std::optional<double> max_memory_bytes;  // peak memory cap (trials above it count as over-memory)
  std::optional<bool> host_bf16_native;    // this CPU computes bf16 natively (for reports without facts.cpu)
  std::set<std::string> placeholders;      // knobs set through {placeholders} in the command, not by the shim
  bool allow_quality_change = false;       // a trial that changes the loss (quality.h) may still be the winner
  LossGuardOptions loss_guard;
  std::function<double()> now_s;           // clock in seconds (default: steady clock); injectable for tests
  const std::atomic<bool>* interrupted = nullptr;  // set by a SIGINT handler: stop after the current trial
  std::function<void(const Trial&, const class Tuner&)> on_trial;  // after every trial (progress line)
  std::function<void(const class Tuner&)> on_update;  // after every trial and every new best (tune.json)
};

// One process run, in the order they ran.
struct RunRecord {
  int trial = 0;                 // 1-based trial index
  int repeat = 0;                // 0-based measurement of that trial
  std::string phase;             // "baseline" (alone), "search" (a pair of the search), "confirm" (head to head)
  std::string role;              // "alone", "reference" (first of a pair), "candidate" (second of a pair)
  RunStatus status = RunStatus::kCrashed;
  double throughput = 0;         // 0 when the run failed
  double step_ms = 0;            // steady-state step time
  SteadyState steady;
  // How busy the machine was (the run's report, source.host_load; unknown without one): the 1-minute load
  // average at the start and the end, and the training process's CPU time (with the descendants it waited for)
  // against its wall time.
  bool host_known = false;
  double load_1m = 0;            // mean of the start and end readings
  double wall_s = 0, cpu_time_s = 0;
  int cpus = 0;
  double cpus_used() const { return wall_s > 0 ? cpu_time_s / wall_s : 0; }
  std::string excluded;          // "" or why this run was left out (a pair re-run under a changed load)
};

// SkippedKnob (values of a knob not tried on this machine) is part of the tune document: model/tune.h.

// The memory a batch size is predicted to need (memory_fit.cpp): peak = static + batch x activations per
// sample, from the baseline's memory_budget, against --max-memory or the device's capacity, the smaller.
struct MemoryFit {
  double static_bytes = 0, per_sample_bytes = 0, limit_bytes = 0;
  long long measured_batch = 0;  // the batch the budget was measured at (0: unknown)
  std::string device, limit_source;
  double predicted_bytes(long long batch) const { return static_bytes + static_cast<double>(batch) * per_sample_bytes; }
  bool fits(long long batch) const { return predicted_bytes(batch) <= limit_bytes; }
};

// The final head-to-head check of the search's winner against the baseline.
struct Confirmation {
  bool ran = false;              // false: no winner other than the baseline, or skipped (see status)
  int candidate = -1;            // trial index of the winner that was checked
  PairedEstimate estimate;       // over the check's fresh pairs, pooled with the session's paired noise
  bool claimed = false;          // interval above 1.0 and the ratio above 1 + min_gain: the gain is reported
  std::optional<double> load_1m; // median 1-minute load average over the check's runs (the claim's conditions)
  int cpus = 0;                  // CPUs online during the check
  bool repeated = false;         // repeated because the load changed since the search
  std::string status;            // "confirmed", "not confirmed", "skipped: ...", "" when there was no winner
};

struct TuneResult {
  std::vector<Trial> trials;
  int baseline = -1;             // index into trials, -1 when no baseline could be measured
  int best = -1;                 // index into trials
  std::string stop_reason;       // "search finished", "max trials reached", "time budget spent", "interrupted", ...
  bool complete = false;         // false when the budget or Ctrl-C cut the search short
  bool partial = false;          // true only when Ctrl-C (or a failed baseline) cut it short: not after a budget
  std::vector<std::string> log;  // the search's decisions, in order
  double pooled_relative_sd = 0; // relative noise of one run: paired sd / sqrt(2) (0 when not measured)
  int noise_samples = 0;         // degrees of freedom behind pooled_relative_sd
  std::vector<RunRecord> runs;   // every process run, in order
  std::vector<model::SkippedKnob> skipped;
  Confirmation confirmation;
  double elapsed_s = 0;          // wall time of the search
  int rerun_pairs = 0;           // pairs re-run because their two runs saw different load
  int unreliable_pairs = 0;      // pairs still disagreeing after the re-runs: not used
  std::optional<double> search_load_1m;   // median load of the search's runs (none without host facts)
  int oom_trials = 0;            // trials that ran out of memory or went over --max-memory
  int failed_trials = 0;         // trials that crashed, timed out or gave no metric
};

class Tuner {
 public:
  Tuner(KnobSpace space, TuneOptions options, TrialRunner& runner);

  // Runs the configured strategy to the end (or until the budget / Ctrl-C stops it).
  TuneResult run();

  // ---- used by strategies -----------------------------------------------------------------------------
  // Measures `config` (repeats as configured; `repeats_override` > 0 forces a count): alone while there is
  // no baseline, else each run right after a fresh run of `reference` (default: the best trial). Returns the
  // trial index, or -1 when the budget is spent / interrupted. A config already measured returns its old
  // index without a new trial.
  int evaluate(const model::Config& config, const std::string& reason, int repeats_override = 0, int reference = -1);
  // Configurations whose measurements are independent (the candidate values of one knob, the next grid
  // points). When the runner runs several measurements at once (parallelism() > 1), every repeat of every new
  // configuration is measured in one TrialRunner::run_batch; the results are then recorded exactly as
  // evaluate() would, in order (repeats an early stop skips are measured but dropped). Returns the indices as
  // evaluate() does. With parallelism() == 1 this is evaluate() in a loop.
  struct BatchItem {
    model::Config config;
    std::string reason;
    int repeats_override = 0;
    int reference = -1;  // as evaluate(): each run paired with a run of this trial (default: the best)
  };
  std::vector<int> evaluate_batch(const std::vector<BatchItem>& items);
  int parallelism() const { return runner_.parallelism(); }
  // The already-measured trial for `config`, or -1.
  int find(const model::Config& config) const;
  bool budget_left() const;  // false once max trials / time budget / Ctrl-C stop the search (reason kept)
  bool interrupted() const;
  // True when trial `candidate` beats trial `reference` by more than threshold(): on their pairs when
  // `candidate` was measured against `reference`, else on the two means.
  bool significantly_better(int candidate, int reference) const;
  // significantly_better after measuring fresh pairs when the two were never run side by side; a marginal
  // win is first confirmed with two more pairs.
  bool better(int candidate, int reference);
  // The relative gain `candidate` must exceed over `reference`: max(min_gain, noise_k x t(dof)/1.96 x the
  // standard error of the mean paired log-ratio (of the difference of the means without pairs)).
  double threshold(int candidate, int reference) const;
  // candidate / reference: exp(mean log-ratio) of their pairs (either way round), else the ratio of means.
  double ratio(int candidate, int reference) const;
  // ln(candidate / reference) of the pairs of `candidate` measured right after `reference` (search phase).
  std::vector<double> log_ratios(int candidate, int reference) const;
  // The session's paired noise, leaving out the pairs of `skip_candidate` against `skip_reference`.
  PairedNoise paired_noise(int skip_candidate = -1, int skip_reference = -1) const;
  // Marks the baseline; the first time, also drops the knob values its report shows cannot act here.
  void set_baseline(int index);
  // The quality guard: compares trial `index`'s loss with the baseline's runs so far (trial.loss), and says
  // whether that keeps it from being the winner (it changes the loss and --allow-quality-change is not set).
  const LossComparison& update_loss(int index);
  bool quality_blocks(int index);
  // A config that is at least as large as a batch size that ran out of memory with the same other knobs.
  bool known_to_oom(const model::Config& config) const;
  void note(std::string line);   // appended to the decision log
  void set_best(int index);      // marks a trial accepted and makes it the best
  int best() const { return result_.best; }
  int baseline() const { return result_.baseline; }
  const Trial& trial(int index) const { return result_.trials.at(index); }
  const std::vector<Trial>& trials() const { return result_.trials; }
  const KnobSpace& space() const { return space_; }
  const KnobRange* range(const std::string& knob) const;
  const TuneOptions& options() const { return options_; }
  const TuneResult& result() const { return result_; }
  double elapsed_s() const;
  // Relative noise of one run (the paired noise / sqrt 2), and its d.o.f.
  std::pair<double, int> pooled_noise() const;

 private:
  double timeout_for(const model::Config& config) const;
  bool time_spent() const;
  // Runs up to `n` more measurements of `t` alone (stops at a failure).
  void measure(Trial& t, int n, const std::string& phase);
  // Runs up to `n` pairs: `reference` then `t` (stops at a failure; early stop when the first pair is clearly
  // slower and `early_stop`).
  void measure_pairs(Trial& t, int reference, int n, bool confirm, bool early_stop);
  // One run of `t`; false when it failed (t's status set unless `keep_status`) or nothing ran.
  bool run_once(Trial& t, const std::string& phase, const std::string& role, bool keep_status, double* value);
  void finish_trial(Trial& t);
  void confirm_winner();
  // Why runs `a` and `b` (indices into result_.runs) of a pair saw different load (the load rule), "" if not.
  std::string load_disagreement(size_t a, size_t b) const;
  double load_threshold(int cpus) const;
  std::optional<double> median_load(const std::string& phase, size_t from = 0) const;
  // The measurement evaluate_batch already made for (config, repeat), else runner_.run.
  Measurement next_measurement(const model::Config& config, const RunContext& context);

  KnobSpace space_;
  TuneOptions options_;
  TrialRunner& runner_;
  TuneResult result_;
  double start_s_ = 0;
  bool space_adapted_ = false;    // skipped_values applied (once, at the first baseline)
  std::optional<MemoryFit> memory_fit_;  // from the baseline's memory budget; known_to_oom consults it
  mutable std::string stop_;      // set (by budget_left) when the budget / interrupt ends the search
  std::map<std::string, Measurement> prefetched_;  // config_key + "#" + repeat, filled by evaluate_batch
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual void search(Tuner& tuner) = 0;
};
// What the strategies hand to evaluate_batch when the runner is parallel (tuner_batch.cpp):
// the next up-to-parallelism() grid points from `pos` (mixed radix, the last knob fastest; the first one with
// the baseline's repeats when `first`), skipping those known to run out of memory;
std::vector<Tuner::BatchItem> grid_lookahead(const Tuner& t, const std::vector<size_t>& pos, bool first);
// the values of `knob` that guided's explore() tries first from `start` (the next larger integers, or the
// other values of a bool / choice knob), up to parallelism() of them.
std::vector<Tuner::BatchItem> explore_lookahead(const Tuner& t, const model::Config& start, const std::string& knob,
                                                const std::string& why);

// "guided" or "grid"; nullptr for an unknown name.
std::unique_ptr<Strategy> make_strategy(std::string_view name);

// ---- diagnosis -> knobs (exposed for tests and for the report) ------------------------------------------
// Knobs a recommendation maps to: its `knobs` list, as the rule engine writes it from the rule's data
// (canonical knob names, common/knobs.h); other entries are not knobs (unknown_knobs lists them).
std::vector<std::string> knobs_for_recommendation(const model::Recommendation& recommendation);
// The entries of a recommendation's `knobs` that name no knob (a report of another profile-train version).
std::vector<std::string> unknown_knobs(const model::Recommendation& recommendation);
// Knobs that address a verdict.bottleneck value (input_pipeline -> num_workers, prefetch_factor, ...).
std::vector<std::string> knobs_for_bottleneck(Bottleneck bottleneck);
// A knob the diagnosis points to, and what points to it ("recommendation amp", "verdict input_pipeline").
struct DiagnosedKnob {
  std::string knob;
  std::string source;
};
enum class DiagnosisScope {
  kRecommendations,            // the recommendations' knobs only
  kRecommendationsThenVerdict  // then the verdict's broader list
};
// The knobs a report points to, without duplicates: its recommendations' in order, then (by scope) the
// verdict's; each with the first thing that pointed to it. None without a report.
std::vector<DiagnosedKnob> diagnosed_knobs(const std::optional<model::Report>& report,
                                           DiagnosisScope scope = DiagnosisScope::kRecommendationsThenVerdict);
// Compact diagnosis kept per trial in tune.json (not from_report without a report).
model::Diagnosis summarize_diagnosis(const std::optional<model::Report>& report);
// The values of `space` (other than each knob's baseline value) that cannot act on the machine `report` ran
// on: pin_memory, fp16 autocast, cudnn_benchmark and tf32 without a GPU; bf16 autocast without a GPU on a
// CPU without native bf16 (facts.cpu.bf16_native, else `host_bf16_native`); and, from the shim's facts, the
// override values that cannot act on this program (KnobProgramNeeds: the DataLoader knobs without a DataLoader,
// channels_last without a convolution, optimizer_impl without an optimizer that takes it, compile without a
// model), except knobs given as a {placeholder} in `placeholders`. Unknown facts skip nothing.
std::vector<model::SkippedKnob> skipped_values(const KnobSpace& space, const std::optional<model::Report>& report,
                                        std::optional<bool> host_bf16_native,
                                        const std::set<std::string>& placeholders = {});
// The memory prediction from `report`'s memory_budget (nullopt without activations per sample, static bytes or
// a limit: --max-memory or the budget's capacity).
std::optional<MemoryFit> memory_fit(const std::optional<model::Report>& report, std::optional<double> max_memory_bytes);
// The batch_size values of `space` (other than the baseline's, the first) predicted not to fit, with the reason.
std::optional<model::SkippedKnob> batch_values_that_do_not_fit(const KnobSpace& space, const MemoryFit& fit);

}  // namespace profile_train::tuner
