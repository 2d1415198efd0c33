// `analyze --executor ray` end to end on a real local Ray head (the `ray` wheel of PT_PYTHON's venv; the same
// private head as the tune tests: tests/tuner/data/ray_head.sh, 2 CPUs, loopback), with synthetic rank files of one
// job (bench/importer/make_rank_job.py): the same job.json and per-rank reports, byte for byte, as the local
// executor on the same files; a rank file no worker can read and a shard whose worker process is killed mid-job
// leave those ranks missing, with the reason, and the rest of the job still gets its summary. One ctest (the head
// starts once).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

const fs::path kBinary = fs::path(PT_BINARY_DIR) / "profile-train";
const fs::path kHeadScript = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data" / "ray_head.sh";
const fs::path kMakeJob = fs::path(PT_SOURCE_DIR) / "bench" / "importer" / "make_rank_job.py";

std::string g_address, g_skip;
fs::path g_dir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int sh(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

class RayHead : public ::testing::Environment {
 public:
  void SetUp() override {
    const fs::path ray = fs::path(PT_PYTHON).parent_path() / "ray";
    if (!fs::exists(ray)) {
      g_skip = "ray is not installed next to " + std::string(PT_PYTHON) + " (bash .ci/setup installs ray[default])";
      return;
    }
    g_dir = "/tmp/ptrayan-" + std::to_string(::getpid());  // short: Ray's unix socket paths stay < 108 bytes
    fs::remove_all(g_dir);
    fs::create_directories(g_dir);
    const int rc = sh("/bin/bash " + q(kHeadScript) + " start " + q(g_dir) + " " + q(ray) + " " +
                      std::to_string(::getpid()) + " >" + q(g_dir / "head.out") + " 2>&1");
    if (rc != 0) {
      g_skip = "the local Ray head did not start: " + slurp(g_dir / "head.out");
      return;
    }
    g_address = slurp(g_dir / "address");
    while (!g_address.empty() && (g_address.back() == '\n' || g_address.back() == ' ')) g_address.pop_back();
  }
  void TearDown() override {
    if (!g_dir.empty()) sh("/bin/bash " + q(kHeadScript) + " stop " + q(g_dir) + " >/dev/null 2>&1");
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new RayHead);

#define REQUIRE_RAY()                        \
  do {                                       \
    if (!g_skip.empty()) GTEST_SKIP() << g_skip; \
  } while (0)

fs::path make_job(const std::string& name, int ranks) {
  const fs::path dir = g_dir / name;
  fs::remove_all(dir);
  EXPECT_EQ(sh(std::string(PT_PYTHON) + " " + q(kMakeJob) + " " + q(dir) + " " + std::to_string(ranks) +
               " --steps 6 --kernels 20 >/dev/null"),
            0);
  return dir;
}

std::vector<std::string> rank_files(const fs::path& dir, int ranks) {
  std::vector<std::string> v;
  for (int r = 0; r < ranks; ++r) v.push_back((dir / ("rank" + std::to_string(r) + ".pt.trace.json")).string());
  return v;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += " " + q(x);
  return s;
}

TEST(AnalyzeRay, TheJobSummaryAndEveryReportAreTheLocalPathsByteForByte) {
  REQUIRE_RAY();
  const fs::path job = make_job("same", 6);
  const auto files = rank_files(job, 6);
  const fs::path local = g_dir / "same-local", ray = g_dir / "same-ray";
  ASSERT_EQ(sh(q(kBinary) + " analyze" + join(files) + " --format json,html --out " + q(local) + " >" +
               q(g_dir / "local.log") + " 2>&1"),
            0)
      << slurp(g_dir / "local.log");
  const int rc = sh(q(kBinary) + " analyze" + join(files) + " --format text,json,html --executor ray --ray-address " +
                    g_address + " --parallel 2 --out " + q(ray) + " >" + q(g_dir / "ray.log") + " 2>&1");
  const std::string log = slurp(g_dir / "ray.log");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_NE(log.find("ray: 6 trace(s) in 3 shard(s) of up to 2, 2 at a time"), std::string::npos) << log;
  EXPECT_NE(log.find("in collectives for rank 3 (data loading)"), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(ray / "job.json")) << log;
  EXPECT_EQ(slurp(ray / "job.json"), slurp(local / "job.json"));
  EXPECT_EQ(slurp(ray / "summary.html"), slurp(local / "summary.html"));
  for (int r = 0; r < 6; ++r) {
    const std::string folder = "rank" + std::to_string(r);
    for (const char* f : {"report.json", "report.html"}) {
      ASSERT_TRUE(fs::exists(ray / folder / f)) << folder << "/" << f << "\n" << log;
      EXPECT_EQ(slurp(ray / folder / f), slurp(local / folder / f)) << folder << "/" << f;
    }
  }
  const auto j = nlohmann::json::parse(slurp(ray / "job.json"));
  EXPECT_EQ(j["straggler"]["rank"], 3) << j.dump();
  EXPECT_EQ(j["collectives"]["last_rank"], 3) << j.dump();
  EXPECT_FALSE(j.contains("missing"));
}

TEST(AnalyzeRay, AnUnreadableFileAndAKilledShardAreMissingAndTheRestIsSummarized) {
  REQUIRE_RAY();
  const fs::path job = make_job("faults", 4);
  auto files = rank_files(job, 4);
  // A rank file no worker can read, and one whose shard hangs (a FIFO whose writer never writes) until its worker
  // process is killed.
  const fs::path gone = job / "rank4-gone.pt.trace.json", fifo = job / "rank5-hangs.pt.trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Its writer: open (O_RDWR does not wait for a reader) and silent, so the shard's read waits.
  const int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  files.push_back(gone.string());
  files.push_back(fifo.string());
  const fs::path out = g_dir / "faults-out";
  const std::string cmd = q(kBinary) + " analyze" + join(files) + " --format json,html --executor ray --ray-address " +
                          g_address + " --parallel 2 --ray-shard-size 1 --out " + q(out) + " >" + q(g_dir / "faults.log") +
                          " 2>&1; echo $? >" + q(g_dir / "faults.rc");
  std::thread driver([&] { sh(cmd); });
  // The hanging shard's worker: the analyze process whose command line names the FIFO and a shard file.
  bool killed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!killed && std::chrono::steady_clock::now() < deadline) {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string pid = e.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmdline = slurp(e.path() / "cmdline");
      for (auto& c : cmdline)
        if (c == '\0') c = ' ';
      if (cmdline.find("--shard-out") != std::string::npos && cmdline.find(fifo.string()) != std::string::npos &&
          cmdline.find("profile-train analyze") != std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // mid-job: it is reading the FIFO
        killed = ::kill(std::stoi(pid), SIGKILL) == 0;
        break;
      }
    }
    if (!killed) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  driver.join();
  const std::string log = slurp(g_dir / "faults.log");
  ASSERT_TRUE(killed) << "the hanging shard never started\n" << log;
  EXPECT_EQ(std::stoi(slurp(g_dir / "faults.rc")), 2) << log;  // ranks are missing: as the local path's load errors
  ASSERT_TRUE(fs::exists(out / "job.json")) << log;
  const auto j = nlohmann::json::parse(slurp(out / "job.json"));
  EXPECT_EQ(j["ranks"].size(), 4u) << j.dump();
  EXPECT_EQ(j["straggler"]["rank"], 3) << j.dump();
  ASSERT_TRUE(j.contains("missing")) << j.dump();
  ASSERT_EQ(j["missing"].size(), 2u) << j.dump();
  EXPECT_EQ(j["missing"][0]["file"], gone.string());
  EXPECT_NE(j["missing"][0]["reason"].get<std::string>().find("no such file"), std::string::npos) << j.dump();
  EXPECT_EQ(j["missing"][1]["file"], fifo.string());
  EXPECT_NE(j["missing"][1]["reason"].get<std::string>().find("killed by signal 9"), std::string::npos) << j.dump();
  EXPECT_NE(log.find("profile-train: " + fifo.string() + ": its Ray job ended FAILED"), std::string::npos) << log;
  // No partial file anywhere in the output.
  for (const auto& e : fs::recursive_directory_iterator(out))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  EXPECT_FALSE(fs::exists(out / "rank5-hangs"));
  ::close(writer);
  fs::remove(fifo);
}

TEST(AnalyzeRay, AnAddressWithoutRayIsOneLineAndExit2BeforeAnyWork) {
  const fs::path out = fs::temp_directory_path() / ("pt-ray-noaddr-" + std::to_string(::getpid()));
  const int rc = sh(q(kBinary) + " analyze /nonexistent.json --executor ray --ray-address http://127.0.0.1:9 --out " +
                    q(out) + " >" + q(out.string() + ".log") + " 2>&1");
  const std::string log = slurp(out.string() + ".log");
  EXPECT_EQ(rc, 2) << log;
  EXPECT_NE(log.find("--executor ray"), std::string::npos) << log;
  fs::remove(out.string() + ".log");
  fs::remove_all(out);
}

}  // namespace
