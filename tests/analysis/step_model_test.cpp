// The step model: training steps bounded by optimizer steps (not by DataLoader fetches), backward-bounded
// steps without an optimizer, evaluation left out, repeating ranges, steady state and the phase split.
// Traces are synthetic training loops laid out the way the Python shim records them (times in microseconds).
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "report_view.h"
#include "mini_schema.h"
#include "trace_builder.h"

using namespace profile_train;
using profile_train::testing::TraceBuilder;

namespace {

constexpr const char* kFetch = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// A training loop on one thread, laid out in time. `shim_steps` adds the ProfilerStep# ranges the shim used to
// place (one per fetch), which the analysis must not take as step boundaries.
class Loop {
 public:
  explicit Loop(bool native_shim = true) {
    if (native_shim) b_.format("native").fact("capture", "shim", true);
  }
  Loop& fetch(double us = 100) {
    if (shim_) {
      if (step_open_) close_step();
      step_start_ = t_;
      step_open_ = true;
    }
    return range(kFetch, us);
  }
  Loop& fwd(double us = 300) { return range("## forward ##", us); }
  Loop& bwd(double us = 600) { return range("## backward ##", us); }
  Loop& opt(double us = 200) { return range("Optimizer.step#AdamW.step", us); }
  Loop& zero(double us = 20) { return range("Optimizer.zero_grad#AdamW.zero_grad", us); }
  Loop& idle(double us) {  // host work without a range (an update loop, logging, checkpointing)
    t_ += us;
    return *this;
  }
  Loop& range(const std::string& name, double us) {
    b_.annotation(name, t_, us);
    t_ += us + 5;
    return *this;
  }
  Loop& shim_steps(bool on) {
    shim_ = on;
    return *this;
  }
  double now() const { return t_; }
  trace::Trace build() {
    if (step_open_) close_step();
    return b_.build();
  }

 private:
  void close_step() {
    b_.annotation("ProfilerStep#" + std::to_string(steps_++), step_start_, t_ - step_start_);
    step_open_ = false;
  }
  TraceBuilder b_;
  double t_ = 1000;
  bool shim_ = false, step_open_ = false;
  double step_start_ = 0;
  int steps_ = 0;
};

// The report of `t`, checked against reports/report.schema.json.
nlohmann::json step_report(const trace::Trace& t) {
  static const profile_train::testing::MiniSchema schema([] {
    std::ifstream in(std::string(PT_SOURCE_DIR) + "/reports/report.schema.json");
    return nlohmann::json::parse(in);
  }());
  auto r = analysis::build_report(t);
  const auto errors = schema.validate(r);
  EXPECT_TRUE(errors.empty()) << errors.front();
  return r;
}

// Backward ranges starting inside each step window of the report.
std::vector<int> backwards_per_step(const trace::Trace& t, const nlohmann::json& r) {
  std::vector<int> out;
  for (const auto& s : r["steps"]["per_step"]) {
    const int64_t a = s["start_ns"].get<int64_t>();
    const int64_t b = a + static_cast<int64_t>(s["duration_ms"].get<double>() * 1e6 + 0.5);
    int n = 0;
    for (const auto& e : t.events)
      if (t.name(e) == "## backward ##" && e.start_ns >= a && e.start_ns < b) ++n;
    out.push_back(n);
  }
  return out;
}

// HF Trainer / accelerate style: the loader fetches batch k+1 before step k runs (and one more when max_steps
// ends the loop), `accum` backward passes per optimizer step.
trace::Trace prefetching_trainer(int optimizer_steps, int accum) {
  Loop l;
  l.shim_steps(true).fetch(400);
  for (int s = 0; s < optimizer_steps; ++s) {
    for (int m = 0; m < accum; ++m) {
      l.fetch(400).fwd().bwd();
    }
    l.opt().zero();
  }
  return l.build();
}

}  // namespace

TEST(StepModel, PrefetchIsNotAccumulation) {
  const auto t = prefetching_trainer(12, 1);
  const auto r = step_report(t);
  EXPECT_EQ(r["source"]["step_detection"], "optimizer_annotation");
  EXPECT_EQ(r["steps"]["count"], 12);
  EXPECT_EQ(r["facts"]["training"]["gradient_accumulation_steps"], 1) << r["facts"].dump();
  // No spurious short step 0 made of the first fetch alone: every step holds a forward, a backward and an
  // optimizer step, so none is shorter than their 1.1 ms.
  for (const auto& s : r["steps"]["per_step"]) EXPECT_GE(s["duration_ms"].get<double>(), 1.1) << s.dump();
  EXPECT_EQ(backwards_per_step(t, r), std::vector<int>(12, 1));
}

TEST(StepModel, PrefetchWithAccumulationCountsBackwardsPerOptimizerStep) {
  const auto t = prefetching_trainer(12, 4);
  const auto r = step_report(t);
  EXPECT_EQ(r["steps"]["count"], 12);
  EXPECT_EQ(r["facts"]["training"]["gradient_accumulation_steps"], 4) << r["facts"].dump();
  EXPECT_EQ(backwards_per_step(t, r), std::vector<int>(12, 4));
  // Steps tile the loop from the first fetch to the last optimizer step: the mean is not diluted by fetch-only
  // steps (4 x (fetch + fwd + bwd) + opt + zero_grad ~ 5.4 ms).
  EXPECT_NEAR(r["steps"]["median_ms"].get<double>(), 5.3, 0.2);
}

TEST(StepModel, AllBatchesFetchedUpFrontStayInTheirStep) {
  // Newer HF Trainer: the accumulation window's batches are fetched first, then the micro-batches run.
  Loop l;
  for (int s = 0; s < 6; ++s) {
    for (int m = 0; m < 3; ++m) l.fetch();
    for (int m = 0; m < 3; ++m) l.fwd().bwd();
    l.opt();
  }
  const auto t = l.build();
  const auto r = step_report(t);
  EXPECT_EQ(r["steps"]["count"], 6);
  EXPECT_EQ(r["facts"]["training"]["gradient_accumulation_steps"], 3);
  EXPECT_EQ(backwards_per_step(t, r), std::vector<int>(6, 3));
  EXPECT_EQ(r["steps"]["per_step"][0]["start_ns"], 1'000'000);  // from the first fetch
}

TEST(StepModel, EvaluationBetweenEpochsIsNoStep) {
  // mnist style: train an epoch, evaluate (fetch + forward, no backward), train the next epoch.
  Loop l;
  l.shim_steps(true);
  double eval_start = 0, eval_end = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int s = 0; s < 5; ++s) l.fetch().zero().fwd().bwd().opt();
    l.fetch(50);  // StopIteration
    if (epoch == 0) eval_start = l.now();
    for (int s = 0; s < 4; ++s) l.fetch().fwd(2000);
    l.fetch(50);
    if (epoch == 0) eval_end = l.now();
  }
  const auto t = l.build();
  const auto r = step_report(t);
  EXPECT_EQ(r["source"]["step_detection"], "optimizer_annotation");
  ASSERT_EQ(r["steps"]["count"], 10);
  for (const auto& s : r["steps"]["per_step"]) {
    const double a = s["start_ns"].get<double>() / 1e3, b = a + s["duration_ms"].get<double>() * 1e3;
    EXPECT_TRUE(b <= eval_start + 1 || a >= eval_end - 200) << s.dump();  // no step overlaps the evaluation
    EXPECT_LT(s["duration_ms"].get<double>(), 2.0) << s.dump();
  }
  EXPECT_EQ(r["steps"]["steady_state"]["excluded_count"], 0);
}

TEST(StepModel, LastOptimizerStepAtMaxStepsIsKept) {
  // Lightning / HF at max_steps: 40 optimizer steps, then the loop stops with the next batch prefetched.
  const auto t = prefetching_trainer(40, 1);
  const auto r = step_report(t);
  EXPECT_EQ(r["steps"]["count"], 40);
}

TEST(StepModel, TwoOptimizersOnOneBatchAreOneStep) {
  // dcgan style: the discriminator's and the generator's optimizer step on the same batch.
  Loop l;
  for (int s = 0; s < 5; ++s) l.fetch().fwd().bwd().fwd().bwd().opt().fwd().bwd().opt();
  const auto r = step_report(l.build());
  EXPECT_EQ(r["steps"]["count"], 5);
  EXPECT_FALSE(r["facts"].contains("training")) << "three backward passes per step are no accumulation here";
}

TEST(StepModel, ManualSgdWithoutOptimizerOrLoaderStepsAtBackwards) {
  // word_language_model style: forward, backward, a manual parameter update (no range), 8 batches; then an
  // evaluation pass (forwards only) and a checkpoint save.
  Loop l(true);
  for (int s = 0; s < 8; ++s) l.idle(50).fwd(400).bwd(800).idle(300);
  const double train_end = l.now();
  for (int s = 0; s < 5; ++s) l.fwd(300);
  l.idle(20000);  // torch.save
  const auto t = l.build();
  const auto r = step_report(t);
  EXPECT_EQ(r["source"]["step_detection"], "backward_annotation");
  ASSERT_EQ(r["steps"]["count"], 8);
  EXPECT_EQ(backwards_per_step(t, r), std::vector<int>(8, 1));
  const auto& last = r["steps"]["per_step"][7];
  const double last_end = last["start_ns"].get<double>() / 1e3 + last["duration_ms"].get<double>() * 1e3;
  EXPECT_LE(last_end, train_end + 60);  // the evaluation and the checkpoint are no part of it
  // Every step is fwd + bwd + update + the next batch's preparation, 1.56 ms; the last one ends where the
  // evaluation's first forward starts, right after its update (1.51 ms).
  for (const auto& s : r["steps"]["per_step"]) {
    EXPECT_GE(s["duration_ms"].get<double>(), 1.51 - 1e-9) << s.dump();
    EXPECT_LE(s["duration_ms"].get<double>(), 1.56 + 1e-9) << s.dump();
  }
  EXPECT_EQ(r["phases"]["ms_per_step"]["optimizer"], nullptr);  // no optimizer ranges: unknown, not 0
}

TEST(StepModel, RepeatingTopLevelRangesWithoutTrainingRanges) {
  TraceBuilder b;
  for (int i = 0; i < 5; ++i) {
    b.annotation("train_batch", 1000 + i * 1000, 900);
    b.annotation("log", 1000 + i * 1000 + 100, 10);  // nested
  }
  b.annotation("setup", 0, 50);
  const auto r = step_report(b.build());
  EXPECT_EQ(r["source"]["step_detection"], "repeating_range");
  EXPECT_EQ(r["steps"]["count"], 5);
  EXPECT_NEAR(r["steps"]["median_ms"].get<double>(), 1.0, 1e-9);
}

TEST(StepModel, ProfilerStepsWithoutTrainingAreEvaluationAndLeftOut) {
  // A Kineto trace whose prof.step() also runs in the evaluation loop.
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.annotation("ProfilerStep#" + std::to_string(i), i * 1000, 1000);
    b.annotation("## forward ##", i * 1000 + 10, 300);
    b.annotation("## backward ##", i * 1000 + 320, 500);
    b.annotation("Optimizer.step#SGD.step", i * 1000 + 830, 100);
  }
  for (int i = 4; i < 7; ++i) {
    b.annotation("ProfilerStep#" + std::to_string(i), i * 1000, 1000);
    b.annotation("## forward ##", i * 1000 + 10, 300);
  }
  const auto r = step_report(b.build());
  EXPECT_EQ(r["source"]["step_detection"], "profiler_step");
  EXPECT_EQ(r["steps"]["count"], 4);
}

TEST(SteadyState, CompileLikeFirstStepIsWarmUp) {
  std::vector<double> d = {8900, 60, 55, 57, 56, 58, 54, 56, 57, 55};
  const auto st = analysis::steady_state(d);
  ASSERT_EQ(st.excluded.size(), 1u);
  EXPECT_EQ(st.excluded[0].index, 0u);
  EXPECT_STREQ(st.excluded[0].reason, "warm-up");
  EXPECT_EQ(st.kept.size(), 9u);
}

TEST(SteadyState, RareSeparateSlowStepsAreOutliers) {
  // dcgan style: ~200 ms steps, and one 2.5 s step in ten.
  std::vector<double> d;
  for (int i = 0; i < 50; ++i) d.push_back(i % 10 == 5 ? 2500 + i : 200 + (i % 7) * 4);
  const auto st = analysis::steady_state(d);
  EXPECT_EQ(st.excluded.size(), 5u);
  for (const auto& x : st.excluded) EXPECT_STREQ(x.reason, "outlier");
}

// The dcgan test program on a loaded CI machine (a run of 2026-12-02): two 400 ms image dumps among ~4.7 ms steps,
// plus a stall just above 3x the median (a lesser spike) and a 13 ms one below it. The dumps are the rare second
// kind of step and go out; the stalls stay. (The rule before took every spike or none: the 20 ms stall is not
// 2x the 13 ms one, so the dumps stayed in and the mean was 46 ms.)
TEST(SteadyState, ALesserSpikeDoesNotKeepTheRareSlowStepsIn) {
  std::vector<double> d = {9.0, 4.6, 4.8, 4.7, 4.5, 4.9, 400, 4.7, 4.6, 20.0, 4.8, 13.0, 4.7, 4.6, 4.8, 4.5, 402,
                           4.7, 4.6, 4.8};
  const auto st = analysis::steady_state(d);
  std::vector<size_t> outliers;
  for (const auto& x : st.excluded)
    if (std::string(x.reason) == "outlier") outliers.push_back(x.index);
  EXPECT_EQ(outliers, (std::vector<size_t>{6, 16}));
}

// The same program on a loaded machine (a run of 2026-12-03): the first six steps all slow (28 -> 11 ms against a
// 6 ms median), so the warm-up run reached the first dump, which was then called warm-up. A step 2x slower than
// the one before it ends the warm-up run: the dumps are outliers, the slow start is warm-up.
TEST(SteadyState, ADumpRightAfterASlowStartIsAnOutlierNotWarmUp) {
  std::vector<double> d = {28.0, 14.1, 13.1, 11.2, 11.2, 11.3, 408.2, 6.1, 6.0, 6.2, 6.1, 5.9, 6.0, 6.3, 6.1, 6.0,
                           407.0, 6.1, 6.0, 6.2};
  const auto st = analysis::steady_state(d);
  std::vector<size_t> warm, outliers;
  for (const auto& x : st.excluded) (std::string(x.reason) == "outlier" ? outliers : warm).push_back(x.index);
  EXPECT_EQ(outliers, (std::vector<size_t>{6, 16}));
  EXPECT_EQ(warm, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
}

TEST(SteadyState, VariableRunsLoseNoStep) {
  // Uniformly spread step times, a bursty loader's long tail, a slow-but-not-apart first step, two steps.
  std::vector<double> uniform, tail;
  for (int i = 0; i < 40; ++i) uniform.push_back(50 + (i * 37 % 100));
  for (int i = 0; i < 30; ++i) tail.push_back(i % 4 == 1 ? 500 + 90 * (i % 3) : 160 + i % 5);  // 500..680 vs 160
  for (const auto* d : {&uniform, &tail}) EXPECT_TRUE(analysis::steady_state(*d).excluded.empty());
  EXPECT_TRUE(analysis::steady_state({120, 100, 101, 99, 100}).excluded.empty());  // 1.2x: not a warm-up
  EXPECT_TRUE(analysis::steady_state({9000, 50}).excluded.empty());                // too few steps to tell
}

TEST(SteadyState, ReportFiguresCoverSteadyStepsAndListTheExcluded) {
  Loop l;
  l.fetch().fwd(500000).bwd().opt();  // a 0.5 s first forward (compilation)
  for (int s = 0; s < 9; ++s) l.fetch().fwd().bwd().opt();
  const auto r = step_report(l.build());
  EXPECT_EQ(r["steps"]["count"], 10);
  const auto& ss = r["steps"]["steady_state"];
  EXPECT_EQ(ss["count"], 9);
  ASSERT_EQ(ss["excluded"].size(), 1u);
  EXPECT_EQ(ss["excluded"][0]["index"], 0);
  EXPECT_EQ(ss["excluded"][0]["reason"], "warm-up");
  EXPECT_GT(ss["excluded_ms"].get<double>(), 500);
  EXPECT_LT(r["steps"]["mean_ms"].get<double>(), 1.5);  // steady state, not pulled up by step 0
  EXPECT_GT(ss["mean_all_ms"].get<double>(), 50);
  EXPECT_EQ(r["steps"]["per_step"][0]["excluded"], "warm-up");
  EXPECT_EQ(r["steps"]["per_step"][1]["excluded"], nullptr);
  // The breakdown and the phases are over the steady steps: the compile forward does not dominate them.
  EXPECT_LT(r["phases"]["fraction"]["forward"].get<double>(), 0.5);
}

TEST(Phases, SplitSumsToTheStepAndFollowsTheRanges) {
  Loop l;
  for (int s = 0; s < 6; ++s) l.fetch(100).zero(20).fwd(300).bwd(600).opt(200);
  const auto r = step_report(l.build());
  const auto& p = r["phases"]["ms_per_step"];
  EXPECT_NEAR(p["data_wait"].get<double>(), 0.100, 1e-6);
  EXPECT_NEAR(p["forward"].get<double>(), 0.300, 1e-6);
  EXPECT_NEAR(p["backward"].get<double>(), 0.600, 1e-6);
  EXPECT_NEAR(p["optimizer"].get<double>(), 0.220, 1e-6);  // step + zero_grad
  double sum = 0, frac = 0;
  for (std::string_view name : kPhaseNames) {
    const std::string k(name);
    sum += p[k].get<double>();
    frac += r["phases"]["fraction"][k].get<double>();
  }
  EXPECT_NEAR(sum, r["steps"]["mean_ms"].get<double>(), 1e-5);
  EXPECT_NEAR(frac, 1.0, 1e-5);
  EXPECT_EQ(r["phases"]["backward_from"], "## backward ##");
  for (const auto& s : r["steps"]["per_step"]) {
    double ps = 0;
    for (std::string_view k : kPhaseNames) ps += s["phases_ms"][std::string(k)].get<double>();
    EXPECT_NEAR(ps, s["duration_ms"].get<double>(), 1e-5);
  }
}

// Lightning runs forward and backward inside optimizer.step(closure) (issue 29, item 20): the nested ranges are
// forward and backward; the optimizer phase is what its range holds besides them.
TEST(Phases, ForwardAndBackwardInsideTheOptimizersClosureAreForwardAndBackward) {
  TraceBuilder b;
  b.format("native").fact("capture", "shim", true);
  for (int i = 0; i < 6; ++i) {
    const double t = 1000 + i * 1500;
    b.annotation(kFetch, t, 100);
    b.annotation("Optimizer.step#AdamW.step", t + 105, 1000);
    b.annotation("## forward ##", t + 115, 300);
    b.annotation("## backward ##", t + 420, 600);
  }
  const auto r = step_report(b.build());
  EXPECT_EQ(r["steps"]["count"], 6) << r["steps"].dump();
  const auto& p = r["phases"]["ms_per_step"];
  EXPECT_NEAR(p["forward"].get<double>(), 0.300, 1e-6) << p.dump();
  EXPECT_NEAR(p["backward"].get<double>(), 0.600, 1e-6) << p.dump();
  EXPECT_NEAR(p["optimizer"].get<double>(), 0.100, 1e-6) << p.dump();  // 1000 - 300 - 600
  EXPECT_NEAR(p["data_wait"].get<double>(), 0.100, 1e-6) << p.dump();
}

TEST(Phases, KinetoBackwardFromAutogradOperatorsAndNoPhasesWithoutRanges) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.annotation("ProfilerStep#" + std::to_string(i), i * 1000, 1000);
    b.cpu_op("autograd::engine::evaluate_function: AddmmBackward0", i * 1000 + 400, 300, /*tid=*/2);
    b.annotation("Optimizer.step#SGD.step", i * 1000 + 800, 100);
  }
  const auto r = step_report(b.build());
  EXPECT_EQ(r["phases"]["backward_from"], "autograd::engine::evaluate_function");
  EXPECT_NEAR(r["phases"]["ms_per_step"]["backward"].get<double>(), 0.3, 1e-6);
  EXPECT_EQ(r["phases"]["ms_per_step"]["forward"], nullptr);
  TraceBuilder none;
  none.annotation("ProfilerStep#0", 0, 1000).annotation("ProfilerStep#1", 1000, 1000);
  EXPECT_TRUE(step_report(none.build())["phases"].is_null());
}

TEST(StepModel, FirstStepCutByTheCaptureWindowIsDropped) {
  // The capture began between the micro-batches of an accumulation of 4: the first step holds 2 of them.
  Loop l;
  l.fetch().fwd().bwd().fetch().fwd().bwd().opt();
  for (int s = 0; s < 3; ++s) {
    for (int m = 0; m < 4; ++m) l.fetch().fwd().bwd();
    l.opt();
  }
  const auto t = l.build();
  const auto r = step_report(t);
  EXPECT_EQ(r["steps"]["count"], 3);
  EXPECT_EQ(backwards_per_step(t, r), std::vector<int>(3, 4));
}
