// The three models of the workload: a small ResNet-style CNN, an MLP and a small decoder-only transformer
// language model with causal self-attention. Sizes come from ModelConfig so tests can build tiny ones.
#pragma once

#include <cstdint>
#include <memory>

#include <torch/nn.h>

#include "model_config.h"

namespace profile_train::workload {


// A model maps a device batch (already normalized, in the model's dtype) to logits:
// cnn [B,3,H,W] -> [B,C]; mlp [B,F] -> [B,C]; transformer tokens [B,T] (int64) -> [B,T,V].
class WorkloadNet : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  virtual bool has_conv() const { return false; }
};

std::shared_ptr<WorkloadNet> make_model(const ModelConfig& cfg);

// Loss of `logits` against `target` for cfg.kind (cross-entropy; token-level for the transformer).
torch::Tensor model_loss(const ModelConfig& cfg, const torch::Tensor& logits, const torch::Tensor& target);

// Transformer only (no-op otherwise): position ids [T] used by the next forward() calls. When never set,
// forward() creates them on the tokens' device.
void set_transformer_positions(WorkloadNet& net, torch::Tensor positions);

// Converts every 4-d parameter (conv weights) to channels_last memory format, in place.
void to_channels_last(WorkloadNet& net);

}  // namespace profile_train::workload
