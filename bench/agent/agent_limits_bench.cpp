// The agent's bounds under hostile NVTX use, through real injection (NVTX_INJECTION64_PATH), one child process
// per measurement (NVTX reads the injection path once per process):
//  - names: N push/pop pairs with N distinct names (a name per step, an f-string in a loop) vs the same loop
//    over 5 names: cost per pair and RSS growth of the user's process;
//  - threads: T threads alive at the same time, R ranges each (T x R well under the 16 MiB buffer's 262,144
//    records): records kept and dropped, read back from the capture.
// Usage: agent_limits_bench [--names N] [--threads T] [--ranges R]   (defaults 2000000, 2000, 50)
#include <nvtx3/nvToolsExt.h>

#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "profile_train/trace/native_reader.h"

namespace fs = std::filesystem;

namespace {

double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return -1;
}

// Blocks each caller until `n` have arrived (libstdc++ 12's std::latch polls with sleeps: slow with 1000s of
// waiters).
class Rendezvous {
 public:
  explicit Rendezvous(int n) : left_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
    cv_.wait(lock, [&] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
};

// Pairs over `distinct` names (distinct == 0: every name differs). Prints ns/pair and the RSS growth.
int child_names(long pairs, long distinct) {
  nvtxMarkA("warm-up");
  char name[64];
  const double rss0 = rss_mib();
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < pairs; ++i) {
    std::snprintf(name, sizeof name, "train/step-%ld/forward", distinct > 0 ? i % distinct : i);
    nvtxRangePushA(name);
    nvtxRangePop();
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("%.1f %.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / pairs, rss_mib() - rss0);
  return 0;
}

int child_threads(int threads, int ranges) {
  nvtxMarkA("warm-up");
  Rendezvous all_recorded(threads);  // all alive at once
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int k = 0; k < ranges; ++k) {
        nvtxRangePushA("worker-range");
        nvtxRangePop();
      }
      all_recorded.arrive_and_wait();
    });
  for (auto& t : ts) t.join();
  return 0;
}

std::string run_child(const std::string& self, const std::string& args, bool with_agent, const fs::path& capture) {
  fs::remove_all(capture);
  const std::string cmd =
      std::string(with_agent ? "NVTX_INJECTION64_PATH='" PT_AGENT_PATH "' " : "env -u NVTX_INJECTION64_PATH ") +
      "PROFILE_TRAIN_OUT='" + capture.string() + "' '" + self + "' " + args;
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  if (!p) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  long names = 2000000;
  int threads = 2000;
  int ranges = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--child-names") == 0) return child_names(std::atol(argv[i + 1]), std::atol(argv[i + 2]));
    if (std::strcmp(argv[i], "--child-threads") == 0) return child_threads(std::atoi(argv[i + 1]), std::atoi(argv[i + 2]));
    if (std::strcmp(argv[i], "--names") == 0) names = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--ranges") == 0) ranges = std::atoi(argv[i + 1]);
  }
  const fs::path capture = fs::temp_directory_path() / ("pt_limits_bench_" + std::to_string(getpid()));
  const std::string self = argv[0];
  const std::string n = std::to_string(names);
  std::printf("distinct range names: %ld push/pop pairs        ns/pair   RSS growth MiB\n", names);
  double ns[3], mib[3];
  const char* label[3] = {"no tool, distinct names", "agent, 5 names", "agent, distinct names"};
  const std::string args[3] = {"--child-names " + n + " 0", "--child-names " + n + " 5", "--child-names " + n + " 0"};
  for (int k = 0; k < 3; ++k) {
    const std::string out = run_child(self, args[k], k > 0, capture);
    if (std::sscanf(out.c_str(), "%lf %lf", &ns[k], &mib[k]) != 2) ns[k] = mib[k] = -1;
    std::printf("  %-28s %12.1f %12.1f\n", label[k], ns[k], mib[k]);
  }
  if (ns[1] > 0) std::printf("  distinct / 5 names cost ratio: %.2fx\n", ns[2] / ns[1]);
  if (auto t = profile_train::trace::native::load_captures([&] {
        std::vector<fs::path> files;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(capture, ec))
          if (e.path().extension() == ".ptrace") files.push_back(e.path());
        return files;
      }());
      t.ok()) {
    std::printf("  capture of the distinct-names run: %zu names in its table, %lld records lost\n", t->strings.size(),
                static_cast<long long>(t->quality.dropped_records));
    for (const auto& note : t->quality.notes) std::printf("    note: %s\n", note.c_str());
  }

  run_child(self, "--child-threads " + std::to_string(threads) + " " + std::to_string(ranges), true, capture);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(capture, ec))
    if (e.path().extension() == ".ptrace") files.push_back(e.path());
  auto t = profile_train::trace::native::load_captures(files);
  if (!t.ok()) {
    std::printf("threads: cannot read the capture: %s\n", t.status().message().c_str());
    return 1;
  }
  long kept = 0;
  for (const auto& e : t->events) kept += t->name(e) == "worker-range";
  const double asked = static_cast<double>(threads) * ranges;
  std::printf("%d threads x %d ranges at once (%.0f%% of the default buffer): %ld kept, %lld dropped (%.1f%%)\n",
              threads, ranges, 100.0 * asked / 262144.0, kept, static_cast<long long>(t->quality.dropped_records),
              100.0 * static_cast<double>(t->quality.dropped_records) / asked);
  fs::remove_all(capture);
  return 0;
}
