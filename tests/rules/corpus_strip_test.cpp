// Issue 23, items 3-5, over every shared Kineto trace (PT_TRACES_DIR: hta/, kineto_tb_plugin/, param/,
// tracelens/, read in place) and a stripped copy of each that this test writes to a temp folder at run time
// (deviceProperties / computeProperties removed; a trace's own facts removed where it carries them):
//   - a missing fact makes a check, never silence: every rule that fires on the full trace fires on the
//     stripped one (a measured or check fix as measured or check, a note at least as a note);
//   - one bound per fix, capped by its mechanism (host-side fixes by the GPU idle share, communication fixes
//     by the exposed communication, every fix by its gain.from roles), the same in the recommendation and the
//     plan; step 1's cumulative bound is its own; the combined bound never exceeds the product of the steps';
//   - the plan leads with a fix that addresses the bottleneck whenever one fires (measured or check), and a
//     check in the plan says what to confirm.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/rules/engine.h"
#include "profile_train/trace/importer.h"
#include "report_view.h"
#include "test_util.h"

namespace profile_train::rules {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<fs::path> kineto_corpus() {
  std::vector<fs::path> out;
  const fs::path root(PT_TRACES_DIR);
  std::error_code ec;
  for (const char* sub : {"hta", "kineto_tb_plugin", "param", "tracelens"}) {
    if (!fs::is_directory(root / sub, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(root / sub, ec); it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (ec) break;
      const fs::path& p = it->path();
      const std::string name = p.filename().string();
      if (!it->is_regular_file() || name.find("expected") != std::string::npos) continue;
      if (name.ends_with(".json") || name.ends_with(".json.gz")) out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The file's text, gzip or plain (gzread reads both).
std::string read_text(const fs::path& p) {
  std::string out;
  gzFile f = gzopen(p.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

json analyzed(const fs::path& p) {
  auto t = trace::load_trace(p);
  if (!t.ok()) return json();
  json r = analysis::build_report(*t);
  apply_rules(*testing::builtin_catalog(), r);
  return r;
}

struct Pair {
  json full, stripped;
};

const std::map<std::string, Pair>& pairs() {
  static const std::map<std::string, Pair> all = [] {
    std::map<std::string, Pair> out;
    const fs::path tmp = fs::temp_directory_path() / ("pt-strip-" + std::to_string(::getpid()));
    fs::create_directories(tmp);
    int i = 0;
    for (const auto& p : kineto_corpus()) {
      json full = analyzed(p);
      if (full.is_null()) continue;
      json doc = json::parse(read_text(p), nullptr, /*allow_exceptions=*/false);
      if (!doc.is_object()) continue;
      doc.erase("deviceProperties");
      doc.erase("computeProperties");
      doc.erase("facts");  // none of the shared Kineto traces carries facts; a capture's facts file is not copied
      const fs::path copy = tmp / ("stripped-" + std::to_string(i++) + ".json");
      std::ofstream(copy, std::ios::binary) << doc.dump();
      doc = json();
      json stripped = analyzed(copy);
      fs::remove(copy);
      out[fs::relative(p, fs::path(PT_TRACES_DIR)).string()] = {std::move(full), std::move(stripped)};
    }
    std::error_code ec;
    fs::remove_all(tmp, ec);
    return out;
  }();
  return all;
}

const json* find_rec(const json& r, const std::string& id) {
  for (const auto& rec : r["recommendations"])
    if (rec["id"] == id) return &rec;
  return nullptr;
}

int standing(const std::string& level) { return level == "measured" ? 0 : level == "check" ? 1 : 2; }

// Items 4 and 5 on one report.
void check_bounds_and_plan(const json& r) {
  const json& recs = r["recommendations"];
  const json& plan = r["plan"];
  const bool gpu = r["source"].value("has_gpu_activity", false);
  static const std::set<std::string> kHost = {"avoid-host-sync",         "cuda-graphs", "keep-caching-allocator",
                                              "dataloader-workers",      "batch-size",  "gpu-preprocessing",
                                              "prefetch-persistent-workers"};
  static const std::set<std::string> kCommunication = {"comm-overlap", "gradient-accumulation"};
  bool any_addressing = false;
  for (const auto& rec : recs) {
    SCOPED_TRACE(rec["id"].get<std::string>());
    if (rec["addresses_bottleneck"].get<bool>() && rec["evidence_level"] != "note" && rec["removable_share"].is_number())
      any_addressing = true;
    if (!rec["removable_share"].is_number()) continue;
    const double share = rec["removable_share"].get<double>();
    EXPECT_NEAR(rec["estimated_speedup_max"].get<double>(), std::round(1000.0 / (1.0 - share)) / 1000.0, 1e-9);
    if (kHost.count(rec["id"]) && gpu && r["gpu"]["idle"]["fraction"].is_number())
      EXPECT_LE(share, r["gpu"]["idle"]["fraction"].get<double>() + 1e-6) << "a host-side fix frees more than the GPU idles";
    if (kCommunication.count(rec["id"]) && r["communication"]["exposed_fraction"].is_number())
      EXPECT_LE(share, r["communication"]["exposed_fraction"].get<double>() + 1e-6);
    if (r["breakdown"].is_object() && !rec["gain_from"].empty()) {
      double roles = 0;
      for (const auto& g : rec["gain_from"]) roles += std::max(0.0, r["breakdown"].value(g.get<std::string>(), 0.0));
      EXPECT_LE(share, roles + 1e-6) << "the bound is above the roles it acts on";
    }
    if (rec["evidence_level"] == "check") EXPECT_TRUE(rec["check_note"].is_string());
  }
  const json& steps = plan["steps"];
  double product = 1.0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& s = steps[i];
    const json* rec = find_rec(r, s["id"]);
    ASSERT_NE(rec, nullptr) << s.dump();
    EXPECT_EQ(s["speedup_max_alone"].get<double>(), (*rec)["estimated_speedup_max"].get<double>())
        << "the plan and the recommendation show different bounds for " << s["id"];
    if (s["evidence_level"] == "check") EXPECT_TRUE(s["check_note"].is_string()) << s.dump();
    product *= s["speedup_max_alone"].get<double>();
  }
  if (!steps.empty()) {
    EXPECT_EQ(steps[0]["cumulative_speedup_max"].get<double>(), steps[0]["speedup_max_alone"].get<double>());
    EXPECT_EQ(plan["combined_speedup_max"].get<double>(), steps.back()["cumulative_speedup_max"].get<double>());
  }
  EXPECT_LE(plan["combined_speedup_max"].get<double>(), product * (1 + 2e-3)) << plan.dump(1);
  if (any_addressing) {
    ASSERT_FALSE(steps.empty()) << "a fix addresses the bottleneck, but the plan is empty: " << recs.dump(1);
    EXPECT_TRUE(steps[0]["addresses_bottleneck"].get<bool>()) << plan.dump(1);
    EXPECT_TRUE(recs[0]["addresses_bottleneck"].get<bool>()) << recs[0].dump();
  }
}

TEST(CorpusStripped, EveryRuleThatFiresOnTheFullTraceFiresOnTheStrippedOne) {
  if (kineto_corpus().empty()) GTEST_SKIP() << "no traces in " << PT_TRACES_DIR;
  ASSERT_GE(pairs().size(), 25u);
  int assumed = 0;
  for (const auto& [name, p] : pairs()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(p.stripped.is_object()) << "the stripped copy did not load";
    EXPECT_TRUE(p.stripped["device"].is_null() || p.stripped["device"]["compute_capability"].is_null());
    for (const auto& rec : p.full["recommendations"]) {
      const std::string id = rec["id"];
      // ddp's GPU count comes from the deviceProperties list itself (a note: facts.inferred "gpu.count"):
      // stripping the list removes the evidence, not a fact the rule could assume.
      if (id == "ddp" && rec["evidence_level"] == "note") continue;
      const json* s = find_rec(p.stripped, id);
      ASSERT_NE(s, nullptr) << id << " fires on the full trace but not on the stripped one";
      EXPECT_GE(standing((*s)["evidence_level"]), standing(rec["evidence_level"])) << id;
      if (rec["evidence_level"] != "note") EXPECT_NE((*s)["evidence_level"], "note") << id;
      const std::string note = (*s)["check_note"].is_string() ? (*s)["check_note"].get<std::string>() : "";
      if (note.find("Assumed") != std::string::npos) {
        ++assumed;
        EXPECT_NE(note.find("Confirm first"), std::string::npos) << note;
      }
    }
  }
  EXPECT_GT(assumed, 0) << "no rule fired under an assumption";
}

TEST(CorpusStripped, BoundsAreCappedAndThePlanLeadsWithTheBottleneckOnBoth) {
  if (kineto_corpus().empty()) GTEST_SKIP() << "no traces in " << PT_TRACES_DIR;
  for (const auto& [name, p] : pairs()) {
    {
      SCOPED_TRACE(name + " (full)");
      check_bounds_and_plan(p.full);
    }
    {
      SCOPED_TRACE(name + " (stripped)");
      check_bounds_and_plan(p.stripped);
    }
  }
}

}  // namespace
}  // namespace profile_train::rules
