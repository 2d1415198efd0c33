// Knob parsing, placeholder substitution, shim overrides, metric extraction, OOM detection, the child
// process handling, and the process runner against a stand-in `profile-train run` script.
#include <gtest/gtest.h>

#include <cmath>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "profile_train/report/escape.h"
#include "profile_train/tuner/process_runner.h"
#include "profile_train/report/tune_html.h"
#include "profile_train/tuner/tune_report.h"
#include "synthetic_surface.h"
#include "profile_train/tuner/tuner.h"

namespace model = profile_train::model;
namespace pt = profile_train::tuner;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("pt_tuner_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST(Knobs, ParseListsAutoAliasesAndErrors) {
  auto r = pt::parse_knob_arg("batch_size=16,32,32,64");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->def->name, "batch_size");
  EXPECT_EQ(r->values, (std::vector<std::string>{"16", "32", "64"}));
  auto w = pt::parse_knob_arg("workers=auto");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->def->name, "num_workers");
  EXPECT_TRUE(w->is_auto);
  EXPECT_EQ(pt::auto_values_for(*w->def, 2), (std::vector<std::string>{"0", "1", "2", "4"}));
  auto p = pt::parse_knob_arg("pin_memory=true,false");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->values, (std::vector<std::string>{"1", "0"}));
  auto a = pt::parse_knob_arg("amp=none,bfloat16,fp16");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->values, (std::vector<std::string>{"off", "bf16", "fp16"}));
  EXPECT_FALSE(pt::parse_knob_arg("amp=int8").ok());
  EXPECT_FALSE(pt::parse_knob_arg("batch_size=0").ok());
  EXPECT_FALSE(pt::parse_knob_arg("batch_size=-4").ok());
  EXPECT_FALSE(pt::parse_knob_arg("warp_speed=9").ok());
  EXPECT_FALSE(pt::parse_knob_arg("batch_size").ok());
  EXPECT_FALSE(pt::parse_knob_arg("batch_size=").ok());
}

TEST(Placeholders, SubstitutedInsideArgvElementsOnlyForKnownKnobs) {
  const std::vector<std::string> argv = {"python", "train.py", "--bs", "{batch_size}", "--workers={num_workers}",
                                         "--amp", "{amp}", "-c", "print(f'{x}')", "{bs}"};
  EXPECT_EQ(pt::placeholders_in(argv), (std::set<std::string>{"batch_size", "num_workers", "amp"}));
  const model::Config c = {{"batch_size", "64"}, {"num_workers", "4"}, {"amp", "bf16"}};
  auto out = pt::substitute_placeholders(argv, c);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, (std::vector<std::string>{"python", "train.py", "--bs", "64", "--workers=4", "--amp", "bf16", "-c",
                                            "print(f'{x}')", "64"}));
  // Values never pass through a shell: an argument with spaces / quotes stays one element.
  auto one = pt::substitute_placeholders({"a b '{amp}' ;rm -rf"}, c);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0], "a b 'bf16' ;rm -rf");
  EXPECT_FALSE(pt::substitute_placeholders({"{pin_memory}"}, c).ok());
}

TEST(Overrides, TypedJsonForTheShimSkippingPlaceholders) {
  const model::Config c = {{"batch_size", "64"}, {"num_workers", "4"}, {"pin_memory", "1"}, {"amp", "bf16"},
                        {"channels_last", "1"}, {"threads", "2"}, {"optimizer_impl", "fused"},
                        {"compile", "reduce-overhead"}, {"tf32", "0"}, {"cudnn_benchmark", "1"}};
  const auto o = pt::overrides_for(c, {"batch_size"});
  EXPECT_EQ(o.size(), 9u);
  EXPECT_EQ(o["dataloader.num_workers"], 4);
  EXPECT_EQ(o["dataloader.pin_memory"], true);
  EXPECT_EQ(o["amp.dtype"], "bf16");
  EXPECT_EQ(o["model.channels_last"], true);
  EXPECT_EQ(o["torch.threads"], 2);
  EXPECT_EQ(o["optimizer.impl"], "fused");
  EXPECT_EQ(o["model.compile"], "reduce-overhead");
  EXPECT_EQ(o["backends.tf32"], false);
  EXPECT_EQ(o["backends.cudnn_benchmark"], true);
  EXPECT_FALSE(o.contains("dataloader.batch_size"));
}

TEST(Workload, KnobFlagsReplaceTheUsersFlags) {
  pt::TuneTarget t;
  t.kind = pt::TuneTarget::Kind::kWorkload;
  t.model = "cnn";
  t.args = {"--batch-size", "8", "--slow-preprocess-us=300", "--workers=3", "--steps", "10"};
  const auto args = pt::workload_args(t, {{"batch_size", "32"}, {"num_workers", "2"}}, "/tmp/r.json");
  EXPECT_EQ(args, (std::vector<std::string>{"--model", "cnn", "--slow-preprocess-us=300", "--steps", "10",
                                            "--batch-size", "32", "--workers", "2", "--result", "/tmp/r.json"}));
}

TEST(Metric, SamplesPerSecondFromStepsAndBatch) {
  std::optional<model::Report> report = pt_test::typed(
      {{"steps", {{"count", 10}, {"mean_ms", 50.0}}}, {"facts", {{"dataloader", {{"batch_size", 16}}}}}});
  pt::Measurement m;
  ASSERT_TRUE(pt::metric_from_report(report, {{"batch_size", "64"}}, 0, &m).ok());
  EXPECT_DOUBLE_EQ(m.throughput, 64 * 1000.0 / 50.0);  // the config's batch wins over facts
  EXPECT_TRUE(m.per_sample);
  ASSERT_TRUE(pt::metric_from_report(report, {}, 0, &m).ok());
  EXPECT_DOUBLE_EQ(m.throughput, 16 * 1000.0 / 50.0);
  report->facts = nlohmann::json::object();
  ASSERT_TRUE(pt::metric_from_report(report, {}, 0, &m).ok());
  EXPECT_DOUBLE_EQ(m.throughput, 20.0);  // steps/s
  EXPECT_FALSE(m.per_sample);
  ASSERT_TRUE(pt::metric_from_report(report, {}, 8, &m).ok());
  EXPECT_DOUBLE_EQ(m.throughput, 160.0);
  EXPECT_FALSE(pt::metric_from_report(pt_test::typed({{"steps", {{"count", 0}, {"mean_ms", nullptr}}}}), {}, 0, &m).ok());
  const profile_train::Status none = pt::metric_from_report(std::nullopt, {}, 0, &m);
  EXPECT_EQ(none.message(), "no report.json");
  m.report_error = "report.json: not valid JSON";
  EXPECT_EQ(pt::metric_from_report(std::nullopt, {}, 0, &m).message(), "report.json: not valid JSON");
}

TEST(Oom, MessagesAreDetected) {
  EXPECT_TRUE(pt::looks_like_oom("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"));
  EXPECT_TRUE(pt::looks_like_oom("torch.OutOfMemoryError: CUDA out of memory."));
  EXPECT_TRUE(pt::looks_like_oom("torch.cuda.OutOfMemoryError: ..."));
  EXPECT_TRUE(pt::looks_like_oom("RuntimeError: CUDA error: out of memory"));
  EXPECT_TRUE(pt::looks_like_oom("[enforce fail at alloc_cpu.cpp:117] . DefaultCPUAllocator: can't allocate memory"));
  EXPECT_FALSE(pt::looks_like_oom("RuntimeError: shape mismatch"));
  EXPECT_FALSE(pt::looks_like_oom(""));
}

TEST(Child, TimeoutKillsTheWholeProcessGroup) {
  const fs::path d = temp_dir("timeout");
  // The shell starts a grandchild that would outlive a kill of the shell alone.
  const auto r = pt::run_child({"/bin/sh", "-c", "sleep 30 & echo started; wait"}, {}, d / "log", 0.5, nullptr, 1);
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.duration_s, 5);
  EXPECT_NE(r.exit_code, 0);
  std::ifstream in(d / "log");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "started");
  fs::remove_all(d);
}

TEST(Child, ExitCodeEnvAndExecFailure) {
  const fs::path d = temp_dir("exit");
  const auto r = pt::run_child({"/bin/sh", "-c", "echo \"$PT_TEST_VAR\"; exit 3"}, {"PT_TEST_VAR=hello"}, d / "log", 10,
                               nullptr, 1);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(pt::read_tail(d / "log", 100), "hello\n");
  const auto bad = pt::run_child({"/nonexistent/binary"}, {}, d / "log2", 10, nullptr, 1);
  EXPECT_FALSE(bad.started);
  EXPECT_NE(bad.start_error.find("/nonexistent/binary"), std::string::npos);
  fs::remove_all(d);
}

TEST(Child, InterruptStopsTheChild) {
  const fs::path d = temp_dir("interrupt");
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  const auto r = pt::run_child({"/bin/sleep", "30"}, {}, d / "log", 0, &stop, 1);
  t.join();
  EXPECT_TRUE(r.interrupted);
  EXPECT_LT(r.duration_s, 5);
  fs::remove_all(d);
}

// The process runner against a stand-in for `profile-train run` (a shell script that runs the command with
// OUT set and lets it write report.json): argv placeholders, shim overrides, OOM, crash, metric.
TEST(ProcessRunner, RunsTrialsThroughRunAndReadsTheReport) {
  const fs::path data = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data";
  const fs::path out = temp_dir("runner");
  pt::ProcessRunnerOptions o;
  o.self_exe = data / "fake_profile_train.sh";
  o.out_dir = out;
  o.target.kind = pt::TuneTarget::Kind::kCommand;
  o.target.args = {"/bin/sh", (data / "fake_train.sh").string(), "{batch_size}"};
  pt::ProcessTrialRunner runner(o);
  pt::RunContext ctx;
  ctx.trial_index = 1;
  ctx.timeout_s = 20;

  const model::Config ok = {{"batch_size", "32"}, {"num_workers", "2"}, {"amp", "bf16"}};
  std::vector<std::string> env;
  auto argv = runner.command_for(ok, out / "x", &env);
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ((*argv)[1], "run");
  EXPECT_EQ((*argv)[4], "--kill-after=3");  // run's grace to stop the command = ours
  EXPECT_EQ((*argv)[5], "--");
  EXPECT_EQ(argv->back(), "32");
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0], R"(PROFILE_TRAIN_OVERRIDES={"amp.dtype":"bf16","dataloader.num_workers":2})");

  pt::Measurement m = runner.run(ok, ctx);
  ASSERT_EQ(m.status, pt::RunStatus::kOk) << m.message;
  // fake_train.sh: step time 10 ms + 1 ms per sample / (1 + workers from the overrides).
  EXPECT_NEAR(m.throughput, 32 * 1000.0 / (10 + 32 / 3.0), 0.01);
  EXPECT_TRUE(fs::exists(fs::path(m.dir) / "trial.log"));
  EXPECT_TRUE(fs::exists(fs::path(m.dir) / "command.json"));

  ctx.trial_index = 2;
  m = runner.run({{"batch_size", "512"}}, ctx);  // fake_train.sh prints a CUDA OOM above 256
  EXPECT_EQ(m.status, pt::RunStatus::kOom) << m.message;
  ctx.trial_index = 3;
  m = runner.run({{"batch_size", "13"}}, ctx);  // crashes on odd batches
  EXPECT_EQ(m.status, pt::RunStatus::kCrashed);
  EXPECT_NE(m.message.find("odd batch"), std::string::npos) << m.message;
  ctx.trial_index = 4;
  ctx.timeout_s = 1;
  m = runner.run({{"batch_size", "7"}}, ctx);  // 7 hangs
  EXPECT_EQ(m.status, pt::RunStatus::kTimedOut);
  fs::remove_all(out);
}

// A report.json that cannot be read as a report is a trial without a metric, with one line saying why (not
// "no report.json"; not a metric taken from a report of the wrong shape).
TEST(ProcessRunner, AnUnreadableReportIsNoMetricWithTheReason) {
  const fs::path data = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data";
  const fs::path out = temp_dir("runner_bad_report");
  pt::ProcessRunnerOptions o;
  o.self_exe = data / "fake_profile_train.sh";
  o.out_dir = out;
  o.target.kind = pt::TuneTarget::Kind::kCommand;
  o.target.args = {"/bin/sh", (data / "fake_train.sh").string(), "{batch_size}"};
  pt::ProcessTrialRunner runner(o);
  pt::RunContext ctx;
  ctx.trial_index = 1;
  ctx.timeout_s = 20;
  pt::Measurement m = runner.run({{"batch_size", "254"}}, ctx);  // report.json is cut short
  EXPECT_EQ(m.status, pt::RunStatus::kNoMetric);
  EXPECT_EQ(m.message, "report.json: not valid JSON");
  ctx.trial_index = 2;
  m = runner.run({{"batch_size", "252"}}, ctx);  // steps.count is a string
  EXPECT_EQ(m.status, pt::RunStatus::kNoMetric) << m.throughput;
  EXPECT_EQ(m.message, "report.json: report.steps.count: expected an integer, got string");
  EXPECT_EQ(m.message.find('\n'), std::string::npos);
  fs::remove_all(out);
}

// A failing trial through the real `profile-train run` (issue 29, item 19): the command's own exit code and its
// last error line (the Python exception), not run's exit 4 and its closing summary.
TEST(ProcessRunner, AFailedTrialShowsTheCommandsExitCodeAndItsLastErrorLine) {
  const fs::path exe = fs::path(PT_BINARY_DIR) / "profile-train";
  if (!fs::exists(exe)) GTEST_SKIP() << "profile-train binary not built at " << exe;
  const fs::path out = temp_dir("runner_failed");
  pt::ProcessRunnerOptions o;
  o.self_exe = exe;
  o.out_dir = out;
  o.target.kind = pt::TuneTarget::Kind::kCommand;
  o.target.args = {"/bin/sh", "-c",
                   "echo 'Traceback (most recent call last):' >&2; echo '  File \"train.py\", line 9' >&2; "
                   "echo 'ValueError: boom in forward' >&2; exit 3",
                   "{batch_size}"};
  pt::ProcessTrialRunner runner(o);
  pt::RunContext ctx;
  ctx.trial_index = 1;
  ctx.timeout_s = 60;
  const pt::Measurement m = runner.run({{"batch_size", "32"}}, ctx);
  EXPECT_EQ(m.status, pt::RunStatus::kCrashed) << m.message;
  EXPECT_EQ(m.message, "exit code 3: ValueError: boom in forward") << pt::read_tail(fs::path(m.dir) / "trial.log", 4096);
  EXPECT_EQ(m.exit_code, 3);
  // Without run's line (an older run, or run itself failed): its exit code and the log's last line, as before.
  int code = 4;
  EXPECT_EQ(pt::failed_command_message(4, "some output\nrun: verdict unknown\n", &code), "exit code 4: run: verdict unknown");
  EXPECT_EQ(code, 4);
  EXPECT_EQ(pt::failed_command_message(4, "x\nprofile-train run: the command was killed by SIGSEGV (crash); analyzing\n", &code),
            "killed by SIGSEGV: x");
  fs::remove_all(out);
}

TEST(Report, JsonAndHtmlWithEscapingAndTheChange) {
  pt::TuneResult r;
  pt::Trial base = pt_test::hand_made_baseline();
  pt::Trial best = base;
  best.index = 2;
  best.config = {{"num_workers", "4"}, {"pin_memory", "1"}, {"amp", "bf16"}};
  best.values = {200, 204};
  best.mean = 202;
  best.stddev = 2.83;
  best.measurements = 2;
  best.reason = "recommendation dataloader-workers";
  r.trials = {base, best};
  r.baseline = 0;
  r.best = 1;
  r.complete = true;
  r.stop_reason = "search finished";
  r.pooled_relative_sd = 0.015;
  r.confirmation.ran = true;
  r.confirmation.candidate = 1;
  r.confirmation.claimed = true;
  r.confirmation.status = "confirmed";
  r.confirmation.estimate = pt::paired_ratio({std::log(2.0), std::log(2.04), std::log(2.02)}, {});
  pt::KnobSpace space = {*pt::parse_knob_arg("num_workers=0,4"), *pt::parse_knob_arg("pin_memory=0,1"),
                         *pt::parse_knob_arg("amp=off,bf16")};
  pt::TuneReportContext ctx;
  ctx.strategy = "guided";
  ctx.target.kind = pt::TuneTarget::Kind::kCommand;
  ctx.target.args = {"python", "train.py", "--name", "<img src=x onerror=alert(1)>"};
  const nlohmann::json doc = pt::tune_json(r, space, ctx);
  EXPECT_EQ(doc["schema_version"], "1.1");
  // The speedup is the head-to-head check's, with its interval.
  EXPECT_NEAR(doc["speedup"]["value"].get<double>(), 2.02, 0.001);
  EXPECT_LT(doc["speedup"]["low"].get<double>(), 2.02);
  EXPECT_GT(doc["speedup"]["low"].get<double>(), 1.9);
  EXPECT_GT(doc["speedup"]["high"].get<double>(), 2.02);
  EXPECT_TRUE(doc["speedup"]["claimed"].get<bool>());
  EXPECT_EQ(doc["confirmation"]["candidate"], 2);
  EXPECT_EQ(doc["confirmation"]["pairs"], 3);
  EXPECT_EQ(doc["target"]["applied_through"], "shim overrides (PROFILE_TRAIN_OVERRIDES)");
  const auto& py = doc["change"]["python"];
  ASSERT_EQ(py.size(), 2u);
  EXPECT_EQ(py[0]["code"], "DataLoader(..., num_workers=4, pin_memory=True)");
  EXPECT_EQ(py[1]["code"], "with torch.autocast(\"cpu\", dtype=torch.bfloat16):\n    loss = loss_fn(model(inputs), targets)");
  EXPECT_EQ(doc["change"]["shim_overrides"]["dataloader.num_workers"], 4);
  EXPECT_EQ(doc["per_knob"]["num_workers"].size(), 2u);
  const std::string html = profile_train::report::tune_html(pt::tune_report(r, space, ctx));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("num_workers=4, pin_memory=True"), std::string::npos);
  EXPECT_EQ(profile_train::report::detail::html_escape("a&<>\"'"), "a&amp;&lt;&gt;&quot;&#39;");
  // No head-to-head check (e.g. the time budget ran out): the interval is unknown, not zero, and no gain is
  // claimed.
  r.confirmation = {};
  r.confirmation.candidate = 1;
  r.confirmation.status = "skipped: time budget spent";
  const nlohmann::json once = pt::tune_json(r, space, ctx);
  EXPECT_TRUE(once["speedup"]["low"].is_null());
  EXPECT_FALSE(once["speedup"]["claimed"].get<bool>());
  EXPECT_NEAR(once["speedup"]["value"].get<double>(), 2.02, 1e-9);
  EXPECT_NE(once["change"]["summary"].get<std::string>().find("unconfirmed"), std::string::npos);
}
