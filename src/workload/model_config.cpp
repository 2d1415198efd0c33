#include "model_config.h"

namespace profile_train::workload {

ModelConfig ModelConfig::for_kind(ModelKind kind, bool tiny) {
  ModelConfig c;
  c.kind = kind;
  if (tiny) {
    // Narrow and deep: every layer is a handful of tiny kernels, so launches dominate on a GPU.
    c.image_size = 16;
    c.channels = 8;
    c.blocks_per_stage = 3;
    c.features = 32;
    c.hidden = 32;
    c.mlp_layers = 12;
    c.seq_len = 16;
    c.d_model = 32;
    c.heads = 2;
    c.layers = 6;
  }
  return c;
}

ModelConfig ModelConfig::for_options(const WorkloadOptions& o) {
  ModelConfig c = for_kind(o.model, o.planted.tiny);
  const ModelShape& s = o.shape;
  if (s.image_size > 0) c.image_size = s.image_size;
  if (s.width > 0) c.channels = c.hidden = c.d_model = s.width;
  if (s.depth > 0) c.blocks_per_stage = c.mlp_layers = c.layers = s.depth;
  if (s.seq_len > 0) c.seq_len = s.seq_len;
  if (s.heads > 0) c.heads = s.heads;
  return c;
}

}  // namespace profile_train::workload
