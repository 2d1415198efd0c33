// End-to-end: the shim's per-module ranges (PROFILE_TRAIN_MODULE_RANGES=DEPTH[,backward]) under
// `profile-train run -- python tests/agent/data/train_modules.py` on the CPU: the backward ranges of every module,
// nested as the modules are, inside the backward pass on the thread that ran it, balanced (no range left open or
// cut by a stray pop), no warning in the program's output; without ",backward" the capture is what it was.
// Needs PT_PYTHON with torch (skips otherwise). No GPU here, so no module carries GPU time: the analysis side of
// the split is tested on synthetic traces (tests/analysis/operators_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "profile_train/trace/native_reader.h"
#include "test_util.h"

using namespace pt_agent_test;
namespace native = profile_train::trace::native;
using profile_train::trace::Category;

namespace {

const fs::path kBinary = fs::path(PT_BINARY_DIR) / "profile-train";
const fs::path kPython = PT_PYTHON;
const fs::path kScript = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "train_modules.py";
constexpr int kSteps = 6;

bool have_torch() {
  const std::string cmd = "'" + kPython.string() + "' -c 'import torch' >/dev/null 2>&1";
  return fs::exists(kPython) && std::system(cmd.c_str()) == 0;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Capture {
  fs::path out;
  int rc = -1;
  std::string log;
  profile_train::trace::Trace trace;
  nlohmann::json report;
};

// `PROFILE_TRAIN_MODULE_RANGES=spec profile-train run --out DIR -- python train_modules.py ARGS`, waited for
// (at most 150 s), its capture loaded.
Capture run_modules(const std::string& name, const std::string& spec, const std::string& args = "") {
  Capture r;
  r.out = fresh_dir(name);
  const std::string cmd = "PROFILE_TRAIN_MODULE_RANGES='" + spec + "' timeout -s KILL 150 '" + kBinary.string() +
                          "' run --out '" + r.out.string() + "' -- '" + kPython.string() + "' '" + kScript.string() +
                          "' --steps " + std::to_string(kSteps) + " " + args + " > '" + (r.out / "log.txt").string() +
                          "' 2>&1";
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.log = slurp(r.out / "log.txt");
  auto t = native::load_captures(capture_files(r.out / "capture"));
  if (t.ok()) r.trace = std::move(*t);
  r.report = nlohmann::json::parse(slurp(r.out / "report.json"), nullptr, false);
  return r;
}

struct Range {
  int64_t tid, start, end;
  std::string name;
};

std::vector<Range> ranges(const profile_train::trace::Trace& t, const std::string& prefix = "") {
  std::vector<Range> v;
  for (const auto& e : t.events)
    if (e.cat == Category::kUserAnnotation && t.name(e).rfind(prefix, 0) == 0)
      v.push_back({e.tid, e.start_ns, e.start_ns + e.dur_ns, t.name(e)});
  std::sort(v.begin(), v.end(), [](const Range& a, const Range& b) {
    return std::tie(a.tid, a.start, b.end) < std::tie(b.tid, b.start, a.end);  // enclosing first
  });
  return v;
}

// Push/pop ranges of one thread form a tree: two ranges are nested or disjoint, never partly overlapping (a
// stray pop or a push left open would cut one). Returns the first offending pair.
std::string first_partial_overlap(const std::vector<Range>& all) {
  std::vector<const Range*> open;
  for (const auto& r : all) {
    while (!open.empty() && (open.back()->tid != r.tid || open.back()->end <= r.start)) open.pop_back();
    if (!open.empty() && r.end > open.back()->end) return open.back()->name + " / " + r.name;
    open.push_back(&r);
  }
  return "";
}

bool inside(const Range& in, const Range& out) { return in.tid == out.tid && out.start <= in.start && in.end <= out.end; }

const char* kBackward = "nn.Module backward: ";
// The modules down to depth 3 (qualified names).
const std::vector<std::string> kModules = {"embed",         "blocks",       "blocks.0",       "blocks.0.norm",
                                           "blocks.0.fc1",  "blocks.0.act", "blocks.0.fc2",   "blocks.1",
                                           "blocks.1.norm", "blocks.1.fc1", "blocks.1.act",   "blocks.1.fc2",
                                           "head"};

void expect_clean(const Capture& r) {
  EXPECT_EQ(r.rc, 0) << r.log;
  EXPECT_EQ(r.log.find("Warning"), std::string::npos) << "a warning in the program's output:\n" << r.log;
  EXPECT_EQ(first_partial_overlap(ranges(r.trace)), "") << "unbalanced ranges";
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.report["data_quality"]["notes"].dump().find("still open at exit"), std::string::npos)
      << r.report["data_quality"].dump();
  EXPECT_FALSE(r.report["facts"].contains("shim_errors")) << r.report["facts"].dump();
  EXPECT_EQ(r.report["steps"]["count"], kSteps) << r.report["steps"].dump();
}

#define REQUIRE_TORCH() \
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string()

TEST(ModuleRangesE2E, BackwardRangesNestPerModuleInsideEachBackwardPassAndBalance) {
  REQUIRE_TORCH();
  const Capture r = run_modules("modules_backward", "3,backward");
  expect_clean(r);
  const auto passes = ranges(r.trace, "## backward ##");
  ASSERT_EQ(passes.size(), static_cast<size_t>(kSteps)) << r.log;
  const auto backward = ranges(r.trace, kBackward);
  for (const auto& b : backward) {
    bool in_pass = false;
    for (const auto& p : passes) in_pass |= inside(b, p);
    EXPECT_TRUE(in_pass) << b.name << " outside the backward pass (CPU tensors: the engine runs them on the caller)";
  }
  for (const auto& pass : passes) {
    std::map<std::string, std::vector<Range>> of;  // module -> its backward ranges in this pass
    for (const auto& b : backward)
      if (inside(b, pass)) of[b.name.substr(std::string(kBackward).size())].push_back(b);
    for (const auto& m : kModules) ASSERT_EQ(of[m].size(), 1u) << m << " in the pass at " << pass.start;
    // Nested as the modules are: a module's range holds its children's.
    for (const auto& m : kModules)
      if (const size_t dot = m.rfind('.'); dot != std::string::npos)
        EXPECT_TRUE(inside(of[m][0], of[m.substr(0, dot)][0])) << m;
    // In the backward order: the head first, the later block before the earlier, the embedding last.
    EXPECT_LE(of["head"][0].end, of["blocks"][0].start);
    EXPECT_LE(of["blocks.1"][0].end, of["blocks.0"][0].start);
    EXPECT_LE(of["blocks.0.fc2"][0].end, of["blocks.0.fc1"][0].start);
    EXPECT_LE(of["blocks"][0].end, of["embed"][0].start);
  }
  const auto& mr = r.report["facts"]["capture"]["module_ranges"];
  EXPECT_EQ(mr["modules"], static_cast<int>(kModules.size())) << mr.dump();
  EXPECT_EQ(mr["backward"], true) << mr.dump();
  EXPECT_EQ(mr["backward_ranges"], static_cast<int>(kModules.size()) * kSteps) << mr.dump();
  EXPECT_EQ(mr["backward_closed_late"], 0) << mr.dump();
}

// A non-reentrant checkpoint recomputes blocks.1 inside the backward pass and stops that forward early (by an
// exception): the recompute's forward ranges still close, the backward ranges of blocks.1's children are there.
TEST(ModuleRangesE2E, CheckpointRecomputeInsideTheBackwardPassKeepsTheRangesBalanced) {
  REQUIRE_TORCH();
  const Capture r = run_modules("modules_checkpoint", "3,backward", "--checkpoint");
  expect_clean(r);
  const auto passes = ranges(r.trace, "## backward ##");
  ASSERT_EQ(passes.size(), static_cast<size_t>(kSteps)) << r.log;
  int recomputed = 0;
  for (const auto& f : ranges(r.trace, "nn.Module: blocks.1"))
    for (const auto& p : passes) recomputed += inside(f, p) && f.name == "nn.Module: blocks.1";
  EXPECT_EQ(recomputed, kSteps) << "one recompute of blocks.1 per backward pass";
  std::map<std::string, int> counts;
  for (const auto& b : ranges(r.trace, kBackward)) ++counts[b.name.substr(std::string(kBackward).size())];
  for (const char* m : {"blocks.0", "blocks.1", "blocks.1.fc1", "blocks.1.fc2", "embed", "head"})
    EXPECT_EQ(counts[m], kSteps) << m;
}

// Without ",backward": the same ranges as with it, less the backward ones (forward ranges only, as before).
TEST(ModuleRangesE2E, WithoutTheBackwardFlagTheCaptureHasTheSameRangesLessTheBackwardOnes) {
  REQUIRE_TORCH();
  const Capture off = run_modules("modules_forward_only", "3");
  const Capture on = run_modules("modules_forward_backward", "3,backward");
  expect_clean(off);
  std::map<std::string, int> a, b;
  for (const auto& x : ranges(off.trace)) ++a[x.name.rfind("ProfilerStep#", 0) == 0 ? "step" : x.name];
  for (const auto& x : ranges(on.trace))
    if (x.name.rfind(kBackward, 0) != 0) ++b[x.name.rfind("ProfilerStep#", 0) == 0 ? "step" : x.name];
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.count("nn.Module: blocks.0.fc1") ? a.at("nn.Module: blocks.0.fc1") : 0, kSteps);
  EXPECT_TRUE(ranges(off.trace, kBackward).empty());
  const auto& mr = off.report["facts"]["capture"]["module_ranges"];
  EXPECT_EQ(mr["modules"], static_cast<int>(kModules.size())) << mr.dump();
  EXPECT_FALSE(mr.contains("backward")) << mr.dump();
  EXPECT_EQ(off.report["steps"]["count"], on.report["steps"]["count"]);
}

}  // namespace
