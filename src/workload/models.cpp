#include "models.h"

#include <cmath>
#include <string>
#include <vector>

#include <torch/nn/functional.h>

namespace profile_train::workload {
namespace F = torch::nn::functional;
namespace nn = torch::nn;

namespace {

// conv3x3-bn-relu-conv3x3-bn plus an identity (or 1x1 conv) shortcut, then relu.
class ResidualBlockImpl : public nn::Module {
 public:
  ResidualBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)))),
        bn1_(register_module("bn1", nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)))),
        bn2_(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      shortcut_conv_ = register_module("shortcut_conv",
                                       nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      shortcut_bn_ = register_module("shortcut_bn", nn::BatchNorm2d(out));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    auto s = shortcut_conv_ ? shortcut_bn_(shortcut_conv_(x)) : x;
    return torch::relu(y + s);
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Conv2d shortcut_conv_{nullptr};
  nn::BatchNorm2d shortcut_bn_{nullptr};
};
TORCH_MODULE(ResidualBlock);

class Cnn : public WorkloadNet {
 public:
  explicit Cnn(const ModelConfig& c)
      : stem_(register_module("stem", nn::Conv2d(nn::Conv2dOptions(3, c.channels, 3).padding(1).bias(false)))),
        stem_bn_(register_module("stem_bn", nn::BatchNorm2d(c.channels))),
        blocks_(register_module("blocks", nn::Sequential())) {
    // Three stages: width C, 2C, 4C; the second and third halve the resolution.
    int64_t in = c.channels;
    for (int64_t stage = 0; stage < 3; ++stage) {
      const int64_t out = c.channels << stage;
      for (int64_t b = 0; b < c.blocks_per_stage; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        blocks_->push_back(ResidualBlock(in, out, stride));
        in = out;
      }
    }
    fc_ = register_module("fc", nn::Linear(in, c.num_classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(stem_bn_(stem_(x)));
    x = blocks_->forward(x);
    x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({1, 1})).flatten(1);
    return fc_(x);
  }
  bool has_conv() const override { return true; }

 private:
  nn::Conv2d stem_;
  nn::BatchNorm2d stem_bn_;
  nn::Sequential blocks_;
  nn::Linear fc_{nullptr};
};

class Mlp : public WorkloadNet {
 public:
  explicit Mlp(const ModelConfig& c) : layers_(register_module("layers", nn::Sequential())) {
    int64_t in = c.features;
    for (int64_t i = 0; i < c.mlp_layers; ++i) {
      layers_->push_back(nn::Linear(in, c.hidden));
      layers_->push_back(nn::LayerNorm(nn::LayerNormOptions({c.hidden})));
      layers_->push_back(nn::ReLU());
      in = c.hidden;
    }
    layers_->push_back(nn::Linear(in, c.num_classes));
  }
  torch::Tensor forward(torch::Tensor x) override { return layers_->forward(x); }

 private:
  nn::Sequential layers_;
};

// Pre-norm decoder block: x + attn(ln1(x)); x + mlp(ln2(x)). Attention is causal (SDPA, is_causal).
class DecoderBlockImpl : public nn::Module {
 public:
  DecoderBlockImpl(int64_t d, int64_t heads)
      : heads_(heads),
        ln1_(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({d})))),
        qkv_(register_module("qkv", nn::Linear(d, 3 * d))),
        proj_(register_module("proj", nn::Linear(d, d))),
        ln2_(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({d})))),
        fc1_(register_module("fc1", nn::Linear(d, 4 * d))),
        fc2_(register_module("fc2", nn::Linear(4 * d, d))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), d = x.size(2), hd = d / heads_;
    auto qkv = qkv_(ln1_(x)).view({b, t, 3, heads_, hd}).permute({2, 0, 3, 1, 4});  // [3,B,H,T,hd]
    auto att = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                /*is_causal=*/true);
    auto h = x + proj_(att.transpose(1, 2).reshape({b, t, d}));
    return h + fc2_(F::gelu(fc1_(ln2_(h))));
  }

 private:
  int64_t heads_;
  nn::LayerNorm ln1_;
  nn::Linear qkv_;
  nn::Linear proj_;
  nn::LayerNorm ln2_;
  nn::Linear fc1_;
  nn::Linear fc2_;
};
TORCH_MODULE(DecoderBlock);

class TransformerLm : public WorkloadNet {
 public:
  explicit TransformerLm(const ModelConfig& c)
      : tok_(register_module("tok", nn::Embedding(c.vocab, c.d_model))),
        pos_(register_module("pos", nn::Embedding(c.seq_len, c.d_model))),
        blocks_(register_module("blocks", nn::ModuleList())),
        ln_f_(register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.d_model})))),
        head_(register_module("head", nn::Linear(c.d_model, c.vocab))) {
    for (int64_t i = 0; i < c.layers; ++i) blocks_->push_back(DecoderBlock(c.d_model, c.heads));
  }
  // Positions are passed separately so the loop can decide where they are created (--cpu-tensors).
  void set_positions(torch::Tensor positions) { positions_ = std::move(positions); }
  torch::Tensor forward(torch::Tensor tokens) override {
    auto positions = positions_.defined() ? positions_
                                          : torch::arange(tokens.size(1), tokens.options().dtype(torch::kLong));
    auto x = tok_(tokens) + pos_(positions).unsqueeze(0);
    for (const auto& block : *blocks_) x = block->as<DecoderBlock>()->forward(x);
    return head_(ln_f_(x));
  }

 private:
  nn::Embedding tok_;
  nn::Embedding pos_;
  nn::ModuleList blocks_;
  nn::LayerNorm ln_f_;
  nn::Linear head_;
  torch::Tensor positions_;
};

}  // namespace

std::shared_ptr<WorkloadNet> make_model(const ModelConfig& cfg) {
  switch (cfg.kind) {
    case ModelKind::kCnn: return std::make_shared<Cnn>(cfg);
    case ModelKind::kMlp: return std::make_shared<Mlp>(cfg);
    case ModelKind::kTransformer: return std::make_shared<TransformerLm>(cfg);
  }
  return nullptr;
}

void set_transformer_positions(WorkloadNet& net, torch::Tensor positions) {
  if (auto* lm = dynamic_cast<TransformerLm*>(&net)) lm->set_positions(std::move(positions));
}

torch::Tensor model_loss(const ModelConfig& cfg, const torch::Tensor& logits, const torch::Tensor& target) {
  if (cfg.kind == ModelKind::kTransformer) {
    return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), target.reshape({-1}));
  }
  return F::cross_entropy(logits, target);
}

void to_channels_last(WorkloadNet& net) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

}  // namespace profile_train::workload
