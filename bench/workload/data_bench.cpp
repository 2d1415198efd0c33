// The workload's unplanted data path: what one cnn sample costs to serve from the pre-generated pool
// (SyntheticDataset::get: a copy of a uint8 image) against rendering it (the pool's construction, measured in
// the same run and divided by the pool size), at the image sizes the scenarios use. Prints both and the ratio.
//   build/bench/workload/workload_data_bench
#include <chrono>
#include <cstdio>

#include "data.h"

using namespace profile_train::workload;
using Clock = std::chrono::steady_clock;

int main() {
  torch::set_num_threads(1);
  for (int64_t hw : {32, 64}) {
    DataConfig dc;
    dc.model = ModelConfig::for_kind(ModelKind::kCnn, false);
    dc.model.image_size = hw;
    dc.size = 512;  // exactly one pool: construction renders every image once
    const auto t0 = Clock::now();
    SyntheticDataset ds(dc);
    const double render_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 512.0;
    constexpr int kGets = 20000;
    int64_t sink = 0;
    const auto t1 = Clock::now();
    for (int i = 0; i < kGets; ++i) sink += ds.get(static_cast<size_t>(i) % 512).data.numel();
    const double get_us = std::chrono::duration<double, std::micro>(Clock::now() - t1).count() / kGets;
    std::printf("cnn %3lldx%-3lld render %8.1f us/image (baseline)  get %6.2f us/sample  ratio %.3f  [%lld]\n",
                static_cast<long long>(hw), static_cast<long long>(hw), render_us, get_us, get_us / render_us,
                static_cast<long long>(sink % 7));
  }
  return 0;
}
