// Model dimensions of the workload (no LibTorch here: option parsing validates them without it).
#pragma once

#include <cstdint>

#include "options.h"

namespace profile_train::workload {

// Shapes shared by the model and the synthetic dataset that feeds it.
struct ModelConfig {
  ModelKind kind = ModelKind::kCnn;
  int64_t num_classes = 10;
  // cnn
  int64_t image_size = 32;  // H = W
  int64_t channels = 16;    // width of the first stage; stages double it
  int64_t blocks_per_stage = 1;
  // mlp
  int64_t features = 256;
  int64_t hidden = 512;
  int64_t mlp_layers = 3;  // hidden layers
  // transformer
  int64_t vocab = 256;
  int64_t seq_len = 64;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t layers = 2;

  // The default configuration of `kind`; `tiny` = narrow and deep (many tiny kernels per step).
  static ModelConfig for_kind(ModelKind kind, bool tiny);
  // for_kind(model, --tiny) with the --image-size/--width/--depth/--seq-len/--heads overrides applied.
  static ModelConfig for_options(const WorkloadOptions& o);
};

}  // namespace profile_train::workload
