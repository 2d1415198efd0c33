// Command-line contract of `profile-train-workload` (the built-in LibTorch training loop). This header and
// options.cpp do not include LibTorch, so parsing is cheap to compile and to test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile_train/common/status.h"

namespace profile_train::workload {

enum class ModelKind { kCnn, kMlp, kTransformer };
enum class AmpMode { kOff, kBf16, kFp16 };
enum class OptimizerKind { kSgd, kAdam, kAdamW };
enum class DeviceChoice { kAuto, kCpu, kCuda };

// Planted pathologies: each one reproduces a known way of slowing a training step (see bench/scenarios/).
struct Planted {
  int64_t slow_preprocess_us = 0;  // per-sample CPU work in the dataset (wall microseconds of arithmetic)
  bool pageable_h2d = false;       // a large host buffer copied to the device every step (pageable unless pinned)
  bool host_sync = false;          // loss.item() every step
  bool tiny = false;               // batch <= 4 and a narrow, deep model: launch bound
  bool cpu_tensors = false;        // per-step tensors created on the CPU and copied to the device
  bool float64 = false;            // float64 parameters and inputs
  bool cpu_normalize = false;      // per-sample normalization in the dataset instead of on the device batch

  // Names of the active pathologies, in flag order (recorded as facts.workload.planted).
  std::vector<std::string> names() const;
};

// Model dimensions that override the model's defaults (0 = the default of the model, see ModelConfig).
// Small defaults keep CPU runs quick; GPU scenarios scale them up so the GPU has real work per kernel.
struct ModelShape {
  int64_t image_size = 0;  // cnn: H = W
  int64_t width = 0;       // cnn: channels of the first stage; mlp: hidden units; transformer: d_model
  int64_t depth = 0;       // cnn: residual blocks per stage; mlp: hidden layers; transformer: decoder blocks
  int64_t seq_len = 0;     // transformer: tokens per sample
  int64_t heads = 0;       // transformer: attention heads (must divide the width)
};

struct WorkloadOptions {
  ModelKind model = ModelKind::kCnn;
  ModelShape shape;
  int64_t batch_size = 32;
  int64_t workers = 0;  // torch::data worker threads (0 = load on the training thread)
  bool pin_memory = false;
  int64_t prefetch = 2;  // batches in flight per worker (DataLoaderOptions::max_jobs = prefetch * workers)
  AmpMode amp = AmpMode::kOff;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  bool fused = false;
  bool foreach = false;
  bool channels_last = false;
  bool cudnn_benchmark = false;
  bool tf32 = false;
  int64_t steps = 30;   // measured steps
  int64_t warmup = 5;   // steps run before measuring (no NVTX step ranges)
  DeviceChoice device = DeviceChoice::kAuto;
  uint64_t seed = 0;
  int64_t threads = 0;  // intra-op threads; 0 = std::thread::hardware_concurrency()
  // Host-side work on the training thread at the end of every step (logging, metrics, schedulers: what a
  // Python loop does between steps), in wall microseconds. It overlaps the GPU unless the step syncs.
  int64_t host_work_us = 0;
  std::string result_path;  // empty = no result file
  Planted planted;

  // Batch size actually used (--tiny caps it at 4).
  int64_t effective_batch_size() const;
};

// What parse_options() decided besides the options themselves.
struct ParseOutcome {
  WorkloadOptions options;
  bool help_requested = false;
  std::string help_text;  // filled when help_requested
};

// Parses argv (argv[0] is the program name). Errors are kInvalidArgument with one line naming the flag.
StatusOr<ParseOutcome> parse_options(int argc, const char* const* argv);

std::string to_string(ModelKind m);
std::string to_string(AmpMode a);
std::string to_string(OptimizerKind o);
std::string to_string(DeviceChoice d);

}  // namespace profile_train::workload
