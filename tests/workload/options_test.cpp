#include "options.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model_config.h"

namespace profile_train::workload {
namespace {

StatusOr<ParseOutcome> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "profile-train-workload");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}

TEST(WorkloadOptions, DefaultsMirrorPythonDataLoaderDefaults) {
  auto r = parse({});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& o = r->options;
  EXPECT_EQ(o.model, ModelKind::kCnn);
  EXPECT_EQ(o.workers, 0);
  EXPECT_FALSE(o.pin_memory);
  EXPECT_EQ(o.amp, AmpMode::kOff);
  EXPECT_EQ(o.device, DeviceChoice::kAuto);
  EXPECT_TRUE(o.planted.names().empty());
}

TEST(WorkloadOptions, ParsesTheFullContract) {
  auto r = parse({"--model", "transformer", "--batch-size", "8", "--workers", "3", "--pin-memory", "1",
                  "--prefetch", "4", "--amp", "bf16", "--optimizer", "sgd", "--fused", "1", "--foreach", "0",
                  "--channels-last", "1", "--cudnn-benchmark", "1", "--tf32", "1", "--steps", "7", "--warmup", "2",
                  "--device", "cpu", "--seed", "9", "--threads", "1", "--result", "r.json",
                  "--slow-preprocess-us", "500", "--pageable-h2d", "--host-sync", "--tiny", "--cpu-tensors",
                  "--float64"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& o = r->options;
  EXPECT_EQ(o.model, ModelKind::kTransformer);
  EXPECT_EQ(o.batch_size, 8);
  EXPECT_EQ(o.effective_batch_size(), 4);  // --tiny caps the batch
  EXPECT_EQ(o.workers, 3);
  EXPECT_TRUE(o.pin_memory);
  EXPECT_EQ(o.prefetch, 4);
  EXPECT_EQ(o.amp, AmpMode::kBf16);
  EXPECT_EQ(o.optimizer, OptimizerKind::kSgd);
  EXPECT_TRUE(o.fused);
  EXPECT_FALSE(o.foreach);
  EXPECT_TRUE(o.channels_last && o.cudnn_benchmark && o.tf32);
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_EQ(o.device, DeviceChoice::kCpu);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.threads, 1);
  EXPECT_EQ(o.result_path, "r.json");
  EXPECT_EQ(o.planted.slow_preprocess_us, 500);
  const std::vector<std::string> expected = {"slow-preprocess", "pageable-h2d", "host-sync", "tiny", "cpu-tensors",
                                             "float64"};
  EXPECT_EQ(o.planted.names(), expected);
}

TEST(WorkloadOptions, RejectsBadValuesNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  } cases[] = {
      {{"--model", "resnet"}, "--model"},
      {{"--amp", "fp8"}, "--amp"},
      {{"--optimizer", "lamb"}, "--optimizer"},
      {{"--device", "tpu"}, "--device"},
      {{"--pin-memory", "yes"}, "--pin-memory"},
      {{"--tf32", "2"}, "--tf32"},
      {{"--batch-size", "0"}, "--batch-size"},
      {{"--workers", "-1"}, "--workers"},
      {{"--steps", "0"}, "--steps"},
      {{"--fused", "1", "--foreach", "1"}, "--fused"},
      {{"--model", "transformer", "--cpu-normalize"}, "--cpu-normalize"},
      {{"--no-such-flag"}, "--no-such-flag"},
      {{"--steps", "many"}, "--steps"},
      {{"--width", "-3"}, "--width"},
      {{"--image-size", "4"}, "--image-size"},
      {{"--model", "mlp", "--image-size", "64"}, "--image-size"},
      {{"--model", "cnn", "--seq-len", "128"}, "--seq-len"},
      {{"--model", "transformer", "--width", "100", "--heads", "8"}, "--heads"},
      {{"--model", "transformer", "--heads", "3"}, "--heads"},  // the default width 128
      {{"--host-work-us", "-1"}, "--host-work-us"},
      {{"--optimizer-impl", "apex"}, "--optimizer-impl"},
      {{"--optimizer-impl", "foreach", "--fused", "1"}, "--optimizer-impl"},
  };
  for (const auto& c : cases) {
    auto r = parse(c.args);
    ASSERT_FALSE(r.ok()) << c.flag;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().exit_code(), 2);
    EXPECT_NE(r.status().message().find(c.flag), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line: " << r.status().message();
  }
}

// The tuner's optimizer_impl knob sets --foreach / --fused through one flag (knobs.h: its workload_flag).
TEST(WorkloadOptions, OptimizerImplIsOneFlagForForeachAndFused) {
  auto f = parse({"--optimizer-impl", "fused"});
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->options.fused);
  EXPECT_FALSE(f->options.foreach);
  auto e = parse({"--optimizer-impl", "foreach", "--foreach", "1"});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->options.foreach);
  EXPECT_FALSE(e->options.fused);
  auto d = parse({"--optimizer-impl", "default"});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->options.foreach || d->options.fused);
}

TEST(WorkloadOptions, ShapeFlagsOverrideTheModelDefaults) {
  auto plain = parse({"--model", "cnn"});
  ASSERT_TRUE(plain.ok());
  const ModelConfig defaults = ModelConfig::for_options(plain->options);
  EXPECT_EQ(defaults.image_size, 32);
  EXPECT_EQ(defaults.channels, 16);
  EXPECT_EQ(defaults.blocks_per_stage, 1);

  auto cnn = parse({"--model", "cnn", "--image-size", "64", "--width", "64", "--depth", "2", "--host-work-us", "1500"});
  ASSERT_TRUE(cnn.ok()) << cnn.status().message();
  const ModelConfig c = ModelConfig::for_options(cnn->options);
  EXPECT_EQ(c.image_size, 64);
  EXPECT_EQ(c.channels, 64);
  EXPECT_EQ(c.blocks_per_stage, 2);
  EXPECT_EQ(cnn->options.host_work_us, 1500);

  auto lm = parse({"--model", "transformer", "--width", "768", "--heads", "12", "--depth", "4", "--seq-len", "256"});
  ASSERT_TRUE(lm.ok()) << lm.status().message();
  const ModelConfig t = ModelConfig::for_options(lm->options);
  EXPECT_EQ(t.d_model, 768);
  EXPECT_EQ(t.heads, 12);
  EXPECT_EQ(t.layers, 4);
  EXPECT_EQ(t.seq_len, 256);

  // --tiny keeps its narrow defaults unless a flag overrides one of them.
  auto tiny = parse({"--model", "mlp", "--tiny", "--depth", "20"});
  ASSERT_TRUE(tiny.ok());
  const ModelConfig m = ModelConfig::for_options(tiny->options);
  EXPECT_EQ(m.hidden, 32);
  EXPECT_EQ(m.mlp_layers, 20);
}

TEST(WorkloadOptions, HelpIsNotAnError) {
  auto r = parse({"--help"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->help_requested);
  EXPECT_NE(r->help_text.find("--slow-preprocess-us"), std::string::npos);
}

}  // namespace
}  // namespace profile_train::workload
