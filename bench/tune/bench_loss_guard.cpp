// False-alarm rate of tune's quality guard (quality.h) on an unchanged program: given the report.json of N
// runs of ONE configuration, every run in turn is the "trial" and the next `--baseline-runs` runs (cyclically)
// its baseline; prints how many of the N comparisons say "changes the loss" (each should not: nothing
// changed), with the difference and the bar of each. Usage: bench_loss_guard [--baseline-runs K] report.json...
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "profile_train/tuner/quality.h"
#include "profile_train/tuner/trial.h"

namespace pt = profile_train::tuner;

int main(int argc, char** argv) {
  int k = 3;
  std::vector<pt::LossCurve> runs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--baseline-runs") == 0 && i + 1 < argc) {
      k = std::atoi(argv[++i]);
      continue;
    }
    std::ifstream in(argv[i]);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto report = pt::read_trial_report(text);
    if (!report.ok()) {
      std::fprintf(stderr, "bench_loss_guard: %s: %s\n", argv[i], report.status().message().c_str());
      return 2;
    }
    runs.push_back(pt::loss_from_report(*report, pt::batch_from_facts(*report)));
  }
  const int n = static_cast<int>(runs.size());
  if (n < k + 1 || k < 1) {
    std::fprintf(stderr, "bench_loss_guard: need more than --baseline-runs (%d) reports, got %d\n", k, n);
    return 2;
  }
  int flagged = 0, compared = 0;
  std::printf("run  status            trial_mean  baseline_mean  difference  bar       spread\n");
  for (int i = 0; i < n; ++i) {
    std::vector<pt::LossCurve> base;
    for (int j = 1; j <= k; ++j) base.push_back(runs[(i + j) % n]);
    const pt::LossComparison l = pt::compare_loss(base, {runs[i]});
    if (l.status == "same loss" || l.status == "changes the loss") ++compared;
    if (l.changes) ++flagged;
    std::printf("%-4d %-17s %-11.4f %-14.4f %-11.4f %-9.4f %.4f\n", i + 1, l.status.c_str(), l.trial_mean,
                l.baseline_mean, l.difference, l.tolerance, l.spread);
  }
  std::printf("false alarms: %d of %d comparisons (%d runs, baseline of %d runs each)\n", flagged, compared, n, k);
  return 0;
}
