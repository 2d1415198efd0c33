// A deterministic synthetic response surface and a fake TrialRunner over it: throughput as a function of
// (batch_size, num_workers, amp, pin_memory) with an input-bound plateau, out-of-memory above a batch
// size, optional crashing configs and seeded multiplicative noise. It produces report.json-like documents
// (steps, facts, verdict, recommendations) so that the guided strategy's diagnosis path is exercised.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile_train/model/report_json.h"
#include "profile_train/tuner/knobs.h"
#include "profile_train/tuner/trial.h"

namespace model = profile_train::model;

namespace pt_test {

// A --knob argument ("batch_size=16,32") as the tuner parses it (a test failure when it does not parse).
inline profile_train::tuner::KnobRange range(const char* arg) {
  auto r = profile_train::tuner::parse_knob_arg(arg);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : profile_train::tuner::KnobRange{};
}

// A report.json-like document as the typed report the tuner reads (a test failure when it is not one).
// A measured baseline trial of a hand-made tune result (num_workers 0, no pinned memory, no AMP; 100 samples/s
// over three measurements) whose reason carries markup, for the writers' escaping.
inline profile_train::tuner::Trial hand_made_baseline() {
  profile_train::tuner::Trial base;
  base.index = 1;
  base.config = {{"num_workers", "0"}, {"pin_memory", "0"}, {"amp", "off"}};
  base.status = profile_train::tuner::RunStatus::kOk;
  base.values = {100, 102, 98};
  base.mean = 100;
  base.stddev = 2;
  base.per_sample = true;
  base.measurements = 3;
  base.reason = "baseline <script>alert(1)</script>";
  return base;
}

inline model::Report typed(const nlohmann::json& doc) {
  auto r = model::report_from_json(doc);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().message();
    return {};
  }
  return *r;
}

using model::Config;
using profile_train::tuner::Measurement;
using profile_train::tuner::RunContext;
using profile_train::tuner::RunStatus;

struct Surface {
  double overhead_ms = 4.0;          // fixed per-step cost (launches, optimizer): bigger batches amortize it
  double compute_us_per_sample = 100;  // forward+backward per sample at fp32
  double amp_bf16_speed = 1.0;       // compute speed-up factor with bf16 autocast
  double amp_fp16_speed = 1.0;
  double load_us_per_sample = 400;   // data loading per sample (one worker / the main process)
  int cores = 4;                     // workers beyond this do not help
  double worker_overhead = 0.03;     // each worker beyond the cores costs this fraction (contention)
  double pin_gain = 1.0;             // step time divided by this with pin_memory=1
  double one_worker_eff = 1.0;       // loading speed of a single worker (< 1: one worker does not pay yet)
  long long oom_batch = 1 << 30;     // batch sizes >= this run out of memory (at fp32)
  double amp_memory_factor = 1.0;    // bf16/fp16 allow oom_batch * this
  std::function<bool(const Config&)> crashes;  // configs that crash
  std::function<void(nlohmann::json&)> edit_report;  // changes every report (e.g. a foreign recommendation)
  double noise_rel_sd = 0.0;         // multiplicative noise of each measurement
  unsigned seed = 1;
  // Per-step times in the report (20 steps) with a compile-like first step of about this many ms (x 0.5..1.5,
  // drawn per run); 0: the report has steps.mean_ms only.
  double first_step_ms = 0;
  std::function<double(int)> load;   // step-time factor of the n-th run (1-based): a loaded period of the machine
  bool no_gpu = false;               // facts.gpu.available = false
  int bf16_native = -1;              // facts.cpu.bf16_native: -1 absent, 0 false, 1 true
  double compile_speed = 1.0;        // compute speed-up factor with compile != off
  double compile_s = 0;              // compilation.compile_time_s of a run with compile != off (0: none)

  static long long get(const Config& c, const char* k, long long d) {
    return profile_train::tuner::config_int(c, k, d);
  }
  static std::string amp_of(const Config& c) { return c.count("amp") ? c.at("amp") : "off"; }

  // Mean step time (ms) and the fraction of it spent waiting for data.
  std::pair<double, double> step(const Config& c) const {
    const double batch = static_cast<double>(get(c, "batch_size", 32));
    const long long workers = get(c, "num_workers", 0);
    const std::string amp = amp_of(c);
    const double speed = amp == "bf16" ? amp_bf16_speed : amp == "fp16" ? amp_fp16_speed : 1.0;
    const bool compiled = c.count("compile") && c.at("compile") != "off";
    double compute = overhead_ms + batch * compute_us_per_sample / 1000.0 / speed / (compiled ? compile_speed : 1.0);
    if (get(c, "pin_memory", 0) == 1) compute /= pin_gain;
    const double load_one = batch * load_us_per_sample / 1000.0;
    double step_ms, wait_ms;
    if (workers == 0) {
      step_ms = compute + load_one;
      wait_ms = load_one;
    } else {
      double eff = static_cast<double>(std::min<long long>(workers, cores)) /
                   (1.0 + worker_overhead * static_cast<double>(std::max<long long>(0, workers - cores)));
      if (workers == 1) eff *= one_worker_eff;
      const double load = load_one / eff;
      step_ms = std::max(compute, load);
      wait_ms = std::max(0.0, load - compute);
    }
    return {step_ms, wait_ms / step_ms};
  }
  double true_throughput(const Config& c) const {
    if (oom(c) || (crashes && crashes(c))) return 0;
    return static_cast<double>(get(c, "batch_size", 32)) * 1000.0 / step(c).first;
  }
  bool oom(const Config& c) const {
    const double limit = static_cast<double>(oom_batch) * (amp_of(c) == "off" ? 1.0 : amp_memory_factor);
    return static_cast<double>(get(c, "batch_size", 32)) >= limit;
  }
  nlohmann::json report(const Config& c, double step_ms, double wait_frac) const {
    nlohmann::json recs = nlohmann::json::array();
    const long long workers = get(c, "num_workers", 0);
    const std::string bottleneck = wait_frac > 0.05 ? "input_pipeline" : "cpu_only";
    if (wait_frac > 0.05 && workers < cores) {
      recs.push_back({{"id", "dataloader-workers"},
                      {"title", "more workers"},
                      {"knobs", {"num_workers", "prefetch_factor", "persistent_workers"}}});
    }
    if (amp_of(c) == "off" && amp_bf16_speed > 1.2 && wait_frac < 0.05) {
      recs.push_back({{"id", "amp"}, {"title", "bf16 autocast"}, {"knobs", {"amp"}}});
    }
    const double batch = static_cast<double>(get(c, "batch_size", 32));
    if (overhead_ms / step_ms > 0.3) recs.push_back({{"id", "batch-size"}, {"title", "bigger batch"}, {"knobs", {"batch_size"}}});
    (void)batch;
    nlohmann::json facts = {{"dataloader", {{"batch_size", get(c, "batch_size", 32)}, {"num_workers", workers}}}};
    if (no_gpu) facts["gpu"] = {{"available", false}};
    if (bf16_native >= 0) facts["cpu"] = {{"cores", cores}, {"bf16_native", bf16_native == 1}};
    nlohmann::json doc = {{"schema_version", "1.0"},
                          {"steps", {{"count", 20}, {"mean_ms", step_ms}}},
                          {"verdict", {{"bottleneck", bottleneck}, {"confidence", 0.8}, {"summary", "synthetic"}}},
                          {"recommendations", recs},
                          {"facts", facts}};
    if (compile_s > 0 && c.count("compile") && c.at("compile") != "off")
      doc["compilation"] = {{"compiled", true}, {"compile_time_s", compile_s}};
    return doc;
  }
  // steps.per_step with the first step `first` ms and the other 19 `step_ms`; mean_ms as a report has it.
  static void add_per_step(nlohmann::json& report, double first, double step_ms) {
    nlohmann::json per = nlohmann::json::array();
    double sum = 0;
    for (int i = 0; i < 20; ++i) {
      const double d = i == 0 ? first : step_ms;
      per.push_back({{"index", i}, {"duration_ms", d}});
      sum += d;
    }
    report["steps"]["per_step"] = per;
    report["steps"]["per_step_complete"] = true;
    report["steps"]["mean_ms"] = sum / 20;
  }
};

class FakeRunner : public profile_train::tuner::TrialRunner {
 public:
  explicit FakeRunner(Surface s) : surface_(std::move(s)), rng_(surface_.seed) {}
  Measurement run(const Config& config, const RunContext& ctx) override {
    ++runs_;
    contexts_.push_back(ctx);
    Measurement m;
    m.duration_s = 10;  // simulated wall time of one measurement
    now_ += m.duration_s;
    if (after_run_) after_run_(runs_);
    if (surface_.oom(config)) {
      m.status = RunStatus::kOom;
      m.message = "torch.OutOfMemoryError: CUDA out of memory.";
      return m;
    }
    if (surface_.crashes && surface_.crashes(config)) {
      m.status = RunStatus::kCrashed;
      m.message = "exit code 1: Segmentation fault";
      return m;
    }
    auto [step_ms, wait] = surface_.step(config);
    if (surface_.noise_rel_sd > 0) {
      std::normal_distribution<double> n(1.0, surface_.noise_rel_sd);
      step_ms /= std::max(0.5, n(rng_));
    }
    if (surface_.load) step_ms *= surface_.load(runs_);
    nlohmann::json doc = surface_.report(config, step_ms, wait);
    if (surface_.edit_report) surface_.edit_report(doc);
    if (surface_.first_step_ms > 0) {
      std::uniform_real_distribution<double> jitter(0.5, 1.5);
      Surface::add_per_step(doc, surface_.first_step_ms * jitter(rng_), step_ms);
    }
    m.report = typed(doc);
    const profile_train::Status st = profile_train::tuner::metric_from_report(m.report, config, 0, &m);
    m.status = st.ok() ? RunStatus::kOk : RunStatus::kNoMetric;
    return m;
  }
  int runs() const { return runs_; }
  double now() const { return now_; }
  void set_after_run(std::function<void(int)> f) { after_run_ = std::move(f); }
  const std::vector<RunContext>& contexts() const { return contexts_; }

 private:
  Surface surface_;
  std::mt19937 rng_;
  int runs_ = 0;
  double now_ = 0;
  std::function<void(int)> after_run_;
  std::vector<RunContext> contexts_;
};

}  // namespace pt_test
