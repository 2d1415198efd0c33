// Loads trace files with load_trace and prints wall time, throughput and what was imported.
// Usage: pt_bench_load FILE... ; exit code 2 if a file fails to load (the error line is printed).
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "profile_train/trace/importer.h"

int main(int argc, char** argv) {
  using namespace profile_train;
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    uint64_t bytes = 0;
    trace::LoadOptions opt;
    opt.progress = [&](uint64_t, uint64_t) {};
    const auto t0 = std::chrono::steady_clock::now();
    auto tr = trace::load_trace(argv[i], opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!tr.ok()) {
      std::printf("ERROR %s\n", tr.status().message().c_str());
      rc = 2;
      continue;
    }
    std::map<std::string, int64_t> cats;
    for (const auto& e : tr->events) ++cats[trace::to_string(e.cat)];
    (void)bytes;
    const auto& q = tr->quality;
    std::printf("%s: %.3f s, events_total %lld, imported %lld (events %zu, memory %zu), malformed %lld, flows %lld, "
                "unknown_cat %lld, devices %zu\n",
                argv[i], s, (long long)q.events_total, (long long)q.events_imported, tr->events.size(),
                tr->memory.size(), (long long)q.malformed_events, (long long)q.flow_events_skipped,
                (long long)q.unknown_categories, tr->devices.size());
    for (const auto& [c, n] : cats) std::printf("  %-20s %lld\n", c.c_str(), (long long)n);
    for (const auto& note : q.notes) std::printf("  note: %s\n", note.c_str());
  }
  return rc;
}
