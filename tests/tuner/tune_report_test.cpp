// tune.json, tune.html and tune's terminal summary of whole sessions, byte for byte against tests/golden/tune/ (written by the code
// before the tune report became typed; PT_UPDATE_GOLDEN=1 rewrites them after a change made on purpose).
// Sessions of the synthetic surface and a fake runner (no process, no GPU): guided with a confirmed winner,
// grid without a GPU (skipped values, crashes, OOM), the built-in workload as target, an interrupted session,
// Ray execution with placements, and a hand-made result with hostile strings.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "profile_train/report/tune_html.h"
#include "profile_train/report/tune_text.h"
#include "profile_train/tuner/ray_report.h"
#include "profile_train/tuner/tune_report.h"
#include "profile_train/tuner/tuner.h"
#include "synthetic_surface.h"

namespace model = profile_train::model;
namespace fs = std::filesystem;
namespace pt = profile_train::tuner;
using pt_test::FakeRunner;
using pt_test::Surface;

namespace {

using pt_test::range;

struct Output {
  std::string json, html, text;
};

// What cmd_tune writes for a result, with the creation time fixed, and the summary it prints (into the folder
// "/out/tune dir", with apply.json written when the winner has overrides).
Output render(const pt::TuneResult& result, const pt::KnobSpace& space, const pt::TuneReportContext& ctx,
              const pt::ExecutionInfo* exec) {
  model::TuneReport doc = pt::tune_report(result, space, ctx);
  doc.created_utc = "2026-01-01T00:00:00Z";
  if (exec != nullptr) pt::add_execution(doc, result, *exec);
  profile_train::report::TuneSummaryOptions text;
  text.knob_order = pt::space_knobs(space);
  text.out_dir = "/out/tune dir";
  text.ray = exec != nullptr && exec->executor == "ray";
  if (doc.change && doc.change->shim_overrides && result.best != result.baseline) text.apply_file = "/out/tune dir/apply.json";
  std::ostringstream summary;
  profile_train::report::write_tune_summary(summary, doc, text);
  return {model::to_json(doc).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
          profile_train::report::tune_html(doc), summary.str()};
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_golden(const std::string& name, const Output& out) {
  const fs::path dir = fs::path(PT_GOLDEN_DIR) / "tune";
  const bool update = std::getenv("PT_UPDATE_GOLDEN") != nullptr;
  for (const auto& [ext, text] : {std::pair<const char*, const std::string&>{".json", out.json},
                                  {".html", out.html},
                                  {".txt", out.text}}) {
    const fs::path file = dir / (name + ext);
    if (update) {
      fs::create_directories(dir);
      std::ofstream(file, std::ios::binary) << text;
      continue;
    }
    ASSERT_TRUE(fs::exists(file)) << file << " (PT_UPDATE_GOLDEN=1 writes it)";
    EXPECT_EQ(read_text(file), text) << file;
  }
}

pt::TuneResult run(const Surface& s, const pt::KnobSpace& space, pt::TuneOptions opt,
                   const std::atomic<bool>* stop = nullptr, int stop_after = 0) {
  FakeRunner runner(s);
  std::atomic<bool> flag{false};
  if (stop_after > 0) {
    runner.set_after_run([&](int n) {
      if (n == stop_after) flag = true;
    });
    opt.interrupted = &flag;
  } else {
    opt.interrupted = stop;
  }
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner(space, opt, runner);
  return tuner.run();
}

Surface input_bound() {
  Surface s;
  s.load_us_per_sample = 400;
  s.compute_us_per_sample = 100;
  s.overhead_ms = 4;
  s.cores = 4;
  s.noise_rel_sd = 0.02;
  s.first_step_ms = 3000;
  s.seed = 7;
  return s;
}

}  // namespace

TEST(TuneReportGolden, GuidedCommandWithPlaceholdersAndRayPlacements) {
  const pt::KnobSpace space = {range("num_workers=0,1,2,4"), range("pin_memory=0,1"), range("amp=off,bf16"),
                               range("batch_size=32,64")};
  pt::TuneOptions opt;
  opt.strategy = "guided";
  opt.repeats = 2;
  const pt::TuneResult r = run(input_bound(), space, opt);
  pt::TuneReportContext ctx;
  ctx.strategy = "guided";
  ctx.options = opt;
  ctx.tool_version = "0.0.test";
  ctx.target.kind = pt::TuneTarget::Kind::kCommand;
  ctx.target.args = {"python", "train.py", "--batch-size", "{batch_size}"};
  expect_golden("guided_command", render(r, space, ctx, nullptr));

  pt::ExecutionInfo exec;
  exec.executor = "ray";
  exec.address = "http://10.0.0.1:8265";
  exec.ray_version = "2.40.0";
  exec.parallel = 2;
  exec.trial_gpus = 1;
  exec.trial_cpus = 4;
  for (const pt::Trial& t : r.trials) {
    for (int i = 0; i < t.measurements; ++i) {
      model::RayPlacement p;
      p.trial_index = t.index;
      p.repeat = i;
      p.dir = "/out/trial-" + std::to_string(t.index);
      p.submission_id = "pt-" + std::to_string(t.index) + "-" + std::to_string(i);
      p.node_id = t.index % 2 ? "node-a0123456789abcdef" : "node-b0123456789abcdef";
      p.host = t.index % 2 ? "gpu-a" : "gpu-b";
      p.cuda_visible_devices = "0";
      p.gpu_name = t.index % 2 ? "NVIDIA H100" : "NVIDIA A100 <80GB>";
      p.final_state = "SUCCEEDED";
      p.submit_s = 0.01 * t.index;
      p.queued_s = 1.5;
      p.running_s = 20 + i;
      p.log_fetch_s = 0.02;
      p.polls = 3;
      exec.placements.push_back(p);
    }
  }
  expect_golden("guided_ray", render(r, space, ctx, &exec));
  pt::ExecutionInfo local;
  expect_golden("guided_local", render(r, space, ctx, &local));
}

TEST(TuneReportGolden, GridWithoutAGpuSkippedValuesCrashesAndOom) {
  Surface s = input_bound();
  s.no_gpu = true;
  s.bf16_native = 0;
  s.oom_batch = 128;
  s.crashes = [](const model::Config& c) { return c.count("num_workers") && c.at("num_workers") == "1"; };
  const pt::KnobSpace space = {range("num_workers=0,1,2"), range("pin_memory=0,1"), range("amp=off,bf16,fp16"),
                               range("batch_size=64,128")};
  pt::TuneOptions opt;
  opt.strategy = "grid";
  opt.max_memory_bytes = 1e9;
  const pt::TuneResult r = run(s, space, opt);
  pt::TuneReportContext ctx;
  ctx.strategy = "grid";
  ctx.options = opt;
  ctx.target.kind = pt::TuneTarget::Kind::kCommand;
  ctx.target.args = {"python", "train.py"};
  ctx.metric_note = "samples/s of the synthetic surface";
  expect_golden("grid_no_gpu", render(r, space, ctx, nullptr));
}

TEST(TuneReportGolden, WorkloadTargetAndAnInterruptedSession) {
  const pt::KnobSpace space = {range("num_workers=0,2,4"), range("amp=off,bf16"), range("channels_last=0,1")};
  pt::TuneOptions opt;
  opt.strategy = "guided";
  pt::TuneReportContext ctx;
  ctx.strategy = "guided";
  ctx.options = opt;
  ctx.target.kind = pt::TuneTarget::Kind::kWorkload;
  ctx.target.workload_binary = "/opt/pt/bin/profile-train-workload";
  ctx.target.model = "cnn";
  ctx.target.args = {"--steps", "30"};
  expect_golden("workload", render(run(input_bound(), space, opt), space, ctx, nullptr));
  pt::TuneResult cut = run(input_bound(), space, opt, nullptr, 5);
  ASSERT_TRUE(cut.partial);
  expect_golden("workload_interrupted", render(cut, space, ctx, nullptr));
  // What on_update writes while the session runs.
  cut.stop_reason = "in progress";
  cut.complete = false;
  expect_golden("workload_in_progress", render(cut, space, ctx, nullptr));
}

TEST(TuneReportGolden, HandMadeResultWithHostileStringsAndNoBaseline) {
  pt::TuneResult r;
  pt::Trial base = pt_test::hand_made_baseline();
  base.message = "bad \xff byte & <b>";
  base.dirs = {"/out/1", "/out/1b"};
  base.peak_memory_bytes = 123456789;
  pt::Trial best = base;
  best.index = 2;
  best.config = {{"num_workers", "4"}, {"pin_memory", "1"}, {"amp", "bf16"}};
  best.values = {200, 204};
  best.mean = 202;
  best.stddev = 2.83;
  best.measurements = 2;
  best.reason = "recommendation dataloader-workers";
  best.early_stopped = true;
  best.accepted = true;
  pt::Trial failed = base;
  failed.index = 3;
  failed.config = {{"num_workers", "8"}, {"pin_memory", "1"}, {"amp", "bf16"}};
  failed.status = pt::RunStatus::kOom;
  failed.values = {};
  failed.mean = 0;
  failed.message = "torch.OutOfMemoryError: CUDA out of memory.";
  r.trials = {base, best, failed};
  r.baseline = 0;
  r.best = 1;
  r.complete = true;
  r.stop_reason = "search finished";
  r.pooled_relative_sd = 0.015;
  r.noise_samples = 4;
  r.elapsed_s = 123.5;
  r.oom_trials = 1;
  r.log = {"round 1: <i>", "done"};
  r.skipped = {{"tf32", {"1"}, "TF32 acts on the GPU only & more"}};
  pt::RunRecord rec;
  rec.trial = 1;
  rec.phase = "baseline";
  rec.role = "alone";
  rec.status = pt::RunStatus::kOk;
  rec.throughput = 100;
  rec.step_ms = 320;
  rec.steady.method = "trimmed mean of post-warm-up steps";
  rec.steady.warmup_excluded = 1;
  rec.steady.trimmed = 2;
  rec.steady.excluded_ms = {5000.5};
  r.runs = {rec};
  r.confirmation.ran = true;
  r.confirmation.candidate = 1;
  r.confirmation.claimed = true;
  r.confirmation.status = "confirmed";
  r.confirmation.estimate = pt::paired_ratio({std::log(2.0), std::log(2.04), std::log(2.02)}, {});
  r.trials[1].pairs = {{0, 100, 200, false}, {0, 101, 203, true}};
  const pt::KnobSpace space = {range("num_workers=0,4,8"), range("pin_memory=0,1"), range("amp=off,bf16")};
  pt::TuneReportContext ctx;
  ctx.strategy = "guided";
  ctx.target.kind = pt::TuneTarget::Kind::kCommand;
  ctx.target.args = {"python", "train.py", "--name", "<img src=x onerror=alert(1)>", "{num_workers}"};
  expect_golden("hand_made", render(r, space, ctx, nullptr));

  // Not confirmed head to head: the baseline is kept and the change says why.
  r.confirmation.claimed = false;
  r.confirmation.status = "not confirmed";
  r.best = 0;
  expect_golden("hand_made_unconfirmed", render(r, space, ctx, nullptr));

  // The loss guard's lines (a winner that changes the loss, allowed; a trial that went non-finite), pairs left
  // out under a changed load, the loads of the head-to-head check.
  pt::TuneResult q = r;
  q.best = 1;
  q.confirmation.claimed = true;
  q.confirmation.status = "confirmed";
  q.rerun_pairs = 2;
  q.unreliable_pairs = 1;
  q.confirmation.load_1m = 1.234;
  q.confirmation.cpus = 2;
  q.search_load_1m = 0.5;
  pt::LossComparison worse;
  worse.status = "changes the loss";
  worse.changes = true;
  worse.compared_by = "samples seen";
  worse.baseline_mean = 2.5;
  worse.trial_mean = 2.9;
  worse.difference = 0.4;
  worse.tolerance = 0.1;
  worse.note = "batch size changed: the learning rate <may> need scaling";
  q.trials[1].loss = worse;
  pt::LossComparison non_finite;
  non_finite.status = "changes the loss";
  non_finite.changes = true;
  non_finite.non_finite = true;
  q.trials[2].loss = non_finite;
  pt::TuneReportContext allowed = ctx;
  allowed.options.allow_quality_change = true;
  expect_golden("hand_made_loss", render(q, space, allowed, nullptr));

  // No baseline measured: speedup, change, baseline and best are null.
  pt::TuneResult none;
  none.trials = {failed};
  none.trials[0].index = 1;
  none.stop_reason = "the baseline failed";
  none.failed_trials = 1;
  expect_golden("no_baseline", render(none, space, ctx, nullptr));
}

// One progress line per finished trial (report::write_tune_trial_line): rate, spread, the paired ratio beside
// both absolute rates, the loss flag, a failure with its message, terminal-safe strings.
TEST(TuneText, TrialLines) {
  model::TrialProgress ok;
  ok.index = 3;
  ok.config = "num_workers=4 amp=bf16";
  ok.ok = true;
  ok.mean = 412.4;
  ok.stddev = 4.9;
  ok.per_sample = true;
  ok.values = 2;
  ok.paired_ratio = 1.104;
  ok.baseline_mean = 375;
  ok.changes_loss = true;
  ok.measurements = 2;
  ok.duration_s = 8.14;
  ok.reason = "recommendation dataloader-workers";
  std::ostringstream a;
  profile_train::report::write_tune_trial_line(a, ok);
  EXPECT_EQ(a.str(),
            "tune [3] num_workers=4 amp=bf16: 412 samples/s ±1.2% (x1.10 paired vs baseline's 375) [changes the loss] "
            "[2 runs, 8.1 s] <- recommendation dataloader-workers\n");
  model::TrialProgress failed;
  failed.index = 4;
  failed.config = "batch_size=512";
  failed.status = "oom";
  failed.message = "CUDA out of memory\x1b[2J";
  failed.measurements = 1;
  failed.duration_s = 3;
  std::ostringstream b;
  profile_train::report::write_tune_trial_line(b, failed);
  EXPECT_EQ(b.str().rfind("tune [4] batch_size=512: oom (CUDA out of memory", 0), 0u) << b.str();
  EXPECT_EQ(b.str().find('\x1b'), std::string::npos) << b.str();
  EXPECT_NE(b.str().find(") [1 run, 3.0 s]\n"), std::string::npos) << b.str();
}

// A compile mode that wins per step but compiles for 30 s each run: tune.json, the trial line and the summary say
// both, and after how much work the faster rate pays the compile time back.
TEST(TuneText, CompileTimeIsReportedApartFromTheRate) {
  Surface s;
  s.load_us_per_sample = 0;  // 4 ms overhead + 3.2 ms compute per step of 32 samples
  s.compile_speed = 2.0;     // compiled: 4 + 1.6 ms
  s.compile_s = 30;
  s.noise_rel_sd = 0.01;
  s.seed = 3;
  const pt::KnobSpace space = {range("compile=off,default")};
  pt::TuneOptions opt;
  opt.strategy = "grid";
  const pt::TuneResult r = run(s, space, opt);
  pt::TuneReportContext ctx;
  const Output out = render(r, space, ctx, nullptr);
  const nlohmann::json doc = nlohmann::json::parse(out.json);
  bool seen = false;
  for (const auto& t : doc["trials"]) {
    if (t["config"]["compile"] == "default") {
      seen = true;
      EXPECT_DOUBLE_EQ(t["compile_s"].get<double>(), 30.0);
    } else {
      EXPECT_FALSE(t.contains("compile_s")) << t.dump();
    }
  }
  EXPECT_TRUE(seen) << out.json.substr(0, 2000);
  EXPECT_NE(out.text.find("spends 30.0 s compiling per run, not counted in its rate; it pays back after about"),
            std::string::npos) << out.text;
  // 30 s / (1/4444 - 1/5714 s per sample) = 600,000 samples, 1.75 min at 5714 samples/s (noise aside).
  EXPECT_NE(out.text.find(" samples ("), std::string::npos) << out.text;
  EXPECT_NE(out.html.find("s compiling per run)"), std::string::npos);
  model::TrialProgress p;
  p.index = 2;
  p.config = "compile=default";
  p.ok = true;
  p.mean = 5714;
  p.values = 1;
  p.per_sample = true;
  p.compile_s = 30;
  p.measurements = 1;
  p.duration_s = 40;
  std::ostringstream line;
  profile_train::report::write_tune_trial_line(line, p);
  EXPECT_NE(line.str().find("[+30.0 s compiling per run, not in the rate]"), std::string::npos) << line.str();
}
