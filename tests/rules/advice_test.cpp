// Issue 23, failure classes 2-4 rebuilt as synthetic traces (tests/analysis/trace_builder.h): a missing fact
// makes a check that names its assumption, never silence; a host-side fix is bounded by the GPU idle time it
// can free, the same number in the recommendation, the plan and report.html; the plan leads with a fix that
// addresses what limits the step, also when that fix is a check.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/report/writers.h"
#include "profile_train/rules/engine.h"
#include "report_view.h"
#include "test_util.h"
#include "trace_builder.h"

namespace profile_train::rules {
namespace {

using nlohmann::json;
using profile_train::testing::TraceBuilder;

json analyzed(const trace::Trace& t) {
  json r = analysis::build_report(t);
  apply_rules(*testing::builtin_catalog(), r);
  return r;
}

const json* find_rec(const json& r, const std::string& id) {
  for (const auto& rec : r["recommendations"])
    if (rec["id"] == id) return &rec;
  return nullptr;
}

std::vector<std::string> plan_ids(const json& r) {
  std::vector<std::string> out;
  for (const auto& s : r["plan"]["steps"]) out.push_back(s["id"]);
  return out;
}

struct K {
  std::string name;
  double us;
};

// `steps` steps of `step_us`: the host launches every kernel of `kernels` (launch call `launch_us`, one every
// `gap_us`); each kernel starts when both its launch and the previous kernel are done.
void gpu_steps(TraceBuilder& b, int steps, double step_us, const std::vector<K>& kernels, double launch_us,
               double gap_us) {
  int64_t corr = 0;
  for (int s = 0; s < steps; ++s) {
    const double t0 = s * step_us;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, step_us);
    double host = t0 + 5, gpu_free = t0;
    for (const auto& k : kernels) {
      b.runtime("cudaLaunchKernel", host, launch_us, ++corr);
      const double start = std::max(host + launch_us + 1, gpu_free);
      b.kernel(k.name, start, k.us, corr);
      gpu_free = start + k.us;
      host += gap_us;
    }
  }
}

// An FP32 ResNet-50-like step on a V100 whose trace has no deviceProperties (the 2021 Kineto format of issue 23,
// class 2): GPU-bound (86% busy), 93% of kernel time in FP32 GEMM/convolution.
std::vector<K> fp32_step_kernels(const std::string& gemm, const std::string& conv) {
  std::vector<K> ks;
  for (int i = 0; i < 20; ++i) ks.push_back({gemm, 250});
  for (int i = 0; i < 10; ++i) ks.push_back({conv, 300});
  for (int i = 0; i < 10; ++i) ks.push_back({"void at::native::vectorized_elementwise_kernel<4, float>", 60});
  return ks;
}

TEST(Advice, Fp32VoltaTraceWithoutDevicePropertiesGetsAmpAsACheckNamingItsAssumption) {
  TraceBuilder b;  // no .device(): the trace records no deviceProperties
  gpu_steps(b, 5, 10000, fp32_step_kernels("volta_sgemm_128x64_nn", "volta_scudnn_128x64_relu_interior_nn_v1"), 4, 6);
  const json r = analyzed(b.build());
  EXPECT_EQ(r["verdict"]["bottleneck"], "gpu_compute") << r["verdict"].dump(1);
  EXPECT_TRUE(r["device"].is_null() || r["device"]["compute_capability"].is_null());
  const json* amp = find_rec(r, "amp");
  ASSERT_NE(amp, nullptr) << "amp is silent: " << r["recommendations"].dump(1);
  EXPECT_EQ((*amp)["evidence_level"], "check");
  const std::string note = (*amp)["check_note"];
  EXPECT_NE(note.find("device.compute_capability"), std::string::npos) << note;
  EXPECT_NE(note.find("7.0"), std::string::npos) << note;  // volta_ kernels: at least Volta
  EXPECT_NE(note.find("kernel names"), std::string::npos) << note;
  EXPECT_NE(note.find("get_device_capability"), std::string::npos) << note;
  // The bound under the assumption: Volta's 8x fp16:fp32 peak ratio (0.875 of the FP32 kernels removable).
  EXPECT_GT((*amp)["estimated_speedup_max"].get<double>(), 2.0);
  // The scudnn kernels are cuDNN convolutions (data/kernel_names.json), so cudnn-benchmark (tier 1, cheaper) may
  // stand ahead of it; amp is planned either way, as the check it is.
  const json* step = nullptr;
  for (const auto& s : r["plan"]["steps"])
    if (s["id"] == "amp") step = &s;
  ASSERT_NE(step, nullptr) << r["plan"].dump(1);
  EXPECT_EQ((*step)["evidence_level"], "check");
  EXPECT_EQ((*step)["check_note"], note);
  EXPECT_TRUE(r["recommendations"][0]["id"] == "amp" || r["recommendations"][0]["id"] == "cudnn-benchmark")
      << r["recommendations"][0]["id"];
  EXPECT_EQ(r["recommendations"][0]["group"], "primary");
}

TEST(Advice, Fp32KernelsWithNoArchitectureInTheirNamesAssumeTheOldestTensorCoreGpu) {
  TraceBuilder b;
  gpu_steps(b, 5, 10000, fp32_step_kernels("sgemm_128x64_nn", "implicit_convolve_sgemm"), 4, 6);
  const json r = analyzed(b.build());
  const json* amp = find_rec(r, "amp");
  ASSERT_NE(amp, nullptr) << r["recommendations"].dump(1);
  EXPECT_EQ((*amp)["evidence_level"], "check");
  const std::string note = (*amp)["check_note"];
  EXPECT_NE(note.find("7.0 (Volta, the oldest GPU with tensor cores)"), std::string::npos) << note;
  // tf32 needs Ampere: no kernel name shows one, so it is not assumed.
  EXPECT_EQ(find_rec(r, "tf32"), nullptr);
}

TEST(Advice, AKnownComputeCapabilityIsNeverReplacedByAnAssumption) {
  TraceBuilder b;
  b.device(0, "NVIDIA A100-SXM4-80GB", 108);  // compute capability 8.0 recorded
  gpu_steps(b, 5, 10000, fp32_step_kernels("volta_sgemm_128x64_nn", "volta_scudnn_128x64_relu_interior_nn_v1"), 4, 6);
  const json r = analyzed(b.build());
  const json* amp = find_rec(r, "amp");
  ASSERT_NE(amp, nullptr);
  EXPECT_EQ((*amp)["evidence_level"], "measured");
  EXPECT_TRUE((*amp)["check_note"].is_null());
}

TEST(Advice, DeviceNameOptionFillsAMissingNameAndSaysSo) {
  TraceBuilder b;
  gpu_steps(b, 3, 10000, fp32_step_kernels("volta_sgemm_128x64_nn", "volta_scudnn_128x64_relu_interior_nn_v1"), 4, 6);
  analysis::AnalysisOptions options;
  options.device_name = "Tesla V100-SXM2-32GB";
  const json r = analysis::build_report(b.build(), options);
  EXPECT_EQ(r["device"]["name"], "Tesla V100-SXM2-32GB");
  bool noted = false;
  for (const auto& n : r["source"]["notes"]) noted |= n.get<std::string>().find("--device") != std::string::npos;
  EXPECT_TRUE(noted) << r["source"]["notes"].dump();
}

// Class 3: the GPU is 98% busy while the host waits in one device synchronization (it queued the whole step
// first). Removing the wait frees nothing but the 2% the GPU idles: the bound is tiny, and the recommendation,
// the plan and report.html show the same number.
TEST(Advice, HostSyncOnABusyGpuIsBoundedByTheIdleTimeItCauses) {
  TraceBuilder b;
  b.device(0, "NVIDIA A100-SXM4-80GB", 108);
  int64_t corr = 0;
  for (int s = 0; s < 5; ++s) {
    const double t0 = s * 10000.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 10000);
    for (int i = 0; i < 50; ++i) {
      b.runtime("cudaLaunchKernel", t0 + 1 + i * 4, 3, ++corr);
      b.kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn", t0 + 5 + i * 196, 196, corr);
    }
    b.runtime("cudaDeviceSynchronize", t0 + 205, 9600);
  }
  const trace::Trace t = b.build();
  const json r = analyzed(t);
  ASSERT_GT(r["host"]["sync"]["fraction"].get<double>(), 0.5) << r["host"].dump();
  const double idle = r["gpu"]["idle"]["fraction"].get<double>();
  ASSERT_LT(idle, 0.03) << r["gpu"]["idle"].dump();
  const json* sync = find_rec(r, "avoid-host-sync");
  ASSERT_NE(sync, nullptr) << r["recommendations"].dump(1);
  const double bound = (*sync)["estimated_speedup_max"].get<double>();
  EXPECT_LE(bound, 1.0 / (1.0 - idle) + 1e-3) << (*sync).dump(1);
  EXPECT_LE((*sync)["removable_share"].get<double>(), idle + 1e-6);
  bool capped = false;
  for (const auto& e : (*sync)["evidence"]) capped |= e.get<std::string>().find("Bound capped at 2.0%") != std::string::npos;
  EXPECT_TRUE(capped) << (*sync)["evidence"].dump(1);
  for (const auto& s : r["plan"]["steps"])
    if (s["id"] == "avoid-host-sync") EXPECT_EQ(s["speedup_max_alone"].get<double>(), bound);

  // report.html: the recommendation's bound, and the plan's when it is in the plan, are the same figure.
  model::Report typed = analysis::build_typed_report(t);
  ASSERT_TRUE(apply_rules(*testing::builtin_catalog(), typed).ok());
  const std::string html = report::render_html(typed, nullptr);
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.2f\xC3\x97", bound);
  const size_t item = html.find("id=\"rec-avoid-host-sync\"");
  ASSERT_NE(item, std::string::npos);
  const size_t end = html.find("</summary>", item);
  EXPECT_NE(html.substr(item, end - item).find(figure), std::string::npos) << figure;
}

// Class 3: a GPU-only ROCm-like trace (no deviceProperties, HIP runtime) whose GPU idles 11.3% of the step
// while the host sits in hipDeviceSynchronize: no host-side fix can be worth more than 1 / (1 - 0.113).
TEST(Advice, NoHostSideFixExceedsTheGpuIdleShareOnAGpuOnlyRocmTrace) {
  TraceBuilder b;
  int64_t corr = 0;
  for (int s = 0; s < 5; ++s) {
    const double t0 = s * 10000.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 10000);
    for (int i = 0; i < 10; ++i) {
      b.runtime("hipLaunchKernel", t0 + 1 + i * 10, 8, ++corr);
      b.kernel("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", t0 + 1130 + i * 887, 887, corr);
    }
    b.runtime("hipDeviceSynchronize", t0 + 7700, 2200);
  }
  const json r = analyzed(b.build());
  const double idle = r["gpu"]["idle"]["fraction"].get<double>();
  EXPECT_NEAR(idle, 0.113, 0.01);
  int host_fixes = 0;
  for (const auto& rec : r["recommendations"]) {
    const std::string id = rec["id"];
    if (id != "avoid-host-sync" && id != "cuda-graphs" && id != "keep-caching-allocator" && id != "batch-size" &&
        id != "dataloader-workers" && id != "prefetch-persistent-workers" && id != "gpu-preprocessing")
      continue;
    ++host_fixes;
    EXPECT_LE(rec["estimated_speedup_max"].get<double>(), 1.0 / (1.0 - idle) + 1e-3) << rec.dump(1);
  }
  EXPECT_GT(host_fixes, 0) << r["recommendations"].dump(1);
}

// Class 3: an FP32 step on an A100 whose host syncs after every GEMM: amp, tf32 and avoid-host-sync all fire;
// together they never reach past the product of their bounds (shortening the GEMMs also shortens the waits).
TEST(Advice, AmpTf32AndHostSyncNeverCombinePastTheProductOfTheirBounds) {
  TraceBuilder b;
  b.device(0, "NVIDIA A100-SXM4-80GB", 108);
  int64_t corr = 0;
  for (int s = 0; s < 5; ++s) {
    const double t0 = s * 6000.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 6000);
    for (int c = 0; c < 20; ++c) {
      const double c0 = t0 + c * 300.0;
      b.runtime("cudaLaunchKernel", c0, 4, ++corr);
      b.kernel("ampere_sgemm_128x64_nn", c0 + 6, 200, corr);
      b.runtime("cudaStreamSynchronize", c0 + 5, 202);
      b.cpu_op("aten::item", c0 + 4, 204);
      b.cpu_op("prepare_next_chunk", c0 + 210, 85);
    }
  }
  const json r = analyzed(b.build());
  for (const char* id : {"amp", "tf32", "avoid-host-sync"}) ASSERT_NE(find_rec(r, id), nullptr) << id << r["recommendations"].dump(1);
  const json& steps = r["plan"]["steps"];
  ASSERT_GE(steps.size(), 2u) << r["plan"].dump(1);
  double product = 1.0;
  for (const auto& s : steps) {
    product *= s["speedup_max_alone"].get<double>();
    EXPECT_EQ(s["speedup_max_alone"], (*find_rec(r, s["id"]))["estimated_speedup_max"]);
  }
  EXPECT_LE(r["plan"]["combined_speedup_max"].get<double>(), product * (1 + 1e-3)) << r["plan"].dump(1);
  EXPECT_EQ(steps[0]["cumulative_speedup_max"], steps[0]["speedup_max_alone"]);
  const double idle = r["gpu"]["idle"]["fraction"].get<double>();
  EXPECT_LE((*find_rec(r, "avoid-host-sync"))["removable_share"].get<double>(), idle + 1e-6);
}

// Class 4: a launch-bound H100 step with batch 16 (48 tiny kernels, GPU busy 13%): the fix that addresses
// cpu_overhead leads the plan although it is a check (the memory headroom is not recorded), and it says what
// to confirm first and how.
TEST(Advice, LaunchBoundStepGetsAPlanLedByAFixForCpuOverheadEvenAsACheck) {
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132);
  std::vector<K> ks;
  for (int i = 0; i < 48; ++i)
    ks.push_back({i % 2 == 0 ? "ampere_sgemm_32x32_sliced1x4_nn" : "void at::native::vectorized_elementwise_kernel<4, float>",
                  i % 2 == 0 ? 4.5 : 1.0});
  gpu_steps(b, 5, 1000, ks, 15, 20);
  b.fact("dataloader", "batch_size", 16);
  const json r = analyzed(b.build());
  EXPECT_EQ(r["verdict"]["bottleneck"], "cpu_overhead") << r["verdict"].dump(1);
  EXPECT_LT(r["gpu"]["busy_fraction"].get<double>(), 0.2);
  ASSERT_FALSE(r["plan"]["steps"].empty()) << r["recommendations"].dump(1);
  const json& first = r["plan"]["steps"][0];
  EXPECT_TRUE(first["id"] == "batch-size" || first["id"] == "cuda-graphs") << r["plan"].dump(1);
  EXPECT_TRUE(first["addresses_bottleneck"].get<bool>());
  EXPECT_EQ(first["evidence_level"], "check");
  const std::string note = first["check_note"];
  EXPECT_NE(note.find("Confirm first"), std::string::npos) << note;
  EXPECT_NE(note.find("memory"), std::string::npos) << note;
  EXPECT_EQ(r["recommendations"][0]["id"], first["id"]);
  EXPECT_EQ(first["cumulative_speedup_max"], first["speedup_max_alone"]);
}

// Class 4: an eager serving step (one captured step, 300 tiny launches, the GPU idle 87%): cuda-graphs is a
// check (static shapes cannot be confirmed from one step), and it is in the plan.
TEST(Advice, EagerServingStepGetsCudaGraphsInThePlan) {
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132);
  std::vector<K> ks(300, K{"void at::native::vectorized_elementwise_kernel<4, c10::BFloat16>", 2});
  gpu_steps(b, 1, 4600, ks, 10, 15);  // each launch call starts after the previous kernel ended
  const json r = analyzed(b.build());
  EXPECT_NEAR(r["gpu"]["idle"]["fraction"].get<double>(), 0.87, 0.02);
  const json* cg = find_rec(r, "cuda-graphs");
  ASSERT_NE(cg, nullptr) << explain_rule(*testing::builtin_catalog(), "cuda-graphs", r);
  EXPECT_EQ((*cg)["evidence_level"], "check");
  const auto ids = plan_ids(r);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "cuda-graphs"), ids.end()) << r["plan"].dump(1);
  for (const auto& s : r["plan"]["steps"])
    if (s["id"] == "cuda-graphs") EXPECT_NE(s["check_note"].get<std::string>().find("Confirm first"), std::string::npos);
}

}  // namespace
}  // namespace profile_train::rules
