// The names the rules' LibTorch snippets assume (a model, its optimizer, a device, a dataset, a loader, a
// batch, sizes, and for comm-overlap the process group of the ddp snippet), so that every snippet is
// compiled against the real LibTorch headers. Included by the generated snippets.cpp only.
#pragma once

struct SnippetNet : torch::nn::Module {
  SnippetNet() { fc = register_module("fc", torch::nn::Linear(4, 2)); }
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc{nullptr};
};

struct SnippetDataset : torch::data::datasets::Dataset<SnippetDataset> {
  torch::data::Example<> get(size_t) { return {torch::zeros({4}), torch::zeros({}, torch::kLong)}; }
  torch::optional<size_t> size() const { return 8; }
};

// Declared at the top of each snippet's function; the snippet itself runs in a nested block, so it may
// redeclare any of these (as a real program would in its own scope).
#define PT_SNIPPET_CONTEXT                                                                                  \
  torch::Device device(torch::kCPU);                                                                        \
  auto model = std::make_shared<SnippetNet>();                                                              \
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));                     \
  auto dataset = SnippetDataset().map(torch::data::transforms::Stack<>());                                  \
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(                        \
      SnippetDataset().map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions().batch_size(4)); \
  auto batch = *loader->begin();                                                                            \
  int64_t batch_size = 4, n = 4, seq_len = 4, dim = 4, d = 4;                                               \
  size_t num_workers = 2;                                                                                   \
  int epochs = 1, log_every = 10, world = 1;                                                                \
  double* data = nullptr;                                                                                   \
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg;                                                            \
  (void)batch_size; (void)n; (void)seq_len; (void)dim; (void)d; (void)num_workers; (void)epochs;           \
  (void)log_every; (void)data; (void)batch; (void)world; (void)pg;
