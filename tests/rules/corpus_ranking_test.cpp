// Over every real trace in PT_TRACES_DIR (../shared/traces, read in place): the first recommendation addresses
// the verdict's bottleneck, or the plan says why no catalogued fix does; no recommendation whose bound is under
// the minor threshold stands above one over it; notes come last; the plan only holds measured, material fixes.
// And the two TensorBoard-plugin ResNet-50 jobs get the fixes their captures call for.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
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

std::vector<fs::path> corpus() {
  std::vector<fs::path> out;
  const fs::path root(PT_TRACES_DIR);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& p = it->path();
    const std::string rel = fs::relative(p, root).string();
    const std::string name = p.filename().string();
    if (!it->is_regular_file() || rel.rfind("_derived", 0) == 0 || name == "manifest.json") continue;
    if (name.find("expected") != std::string::npos) continue;  // tb_plugin's expected-output files
    if (name.ends_with(".json") || name.ends_with(".json.gz")) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<const RuleSet> catalog() { return testing::builtin_catalog(); }

const std::map<std::string, json>& reports() {
  static const std::map<std::string, json> all = [] {
    std::map<std::string, json> out;
    for (const auto& p : corpus()) {
      auto t = trace::load_trace(p);
      if (!t.ok()) continue;  // a file that is not a trace (counted below)
      json r = analysis::build_report(*t);
      apply_rules(*catalog(), r);
      out[fs::relative(p, fs::path(PT_TRACES_DIR)).string()] = std::move(r);
    }
    return out;
  }();
  return all;
}

int group_rank(const std::string& g) {
  return g == "primary" ? 0 : g == "secondary" ? 1 : g == "minor" ? 2 : 3;
}

TEST(CorpusRanking, FirstFixAddressesTheBottleneckOrThePlanSaysWhyNot) {
  if (corpus().empty()) GTEST_SKIP() << "no traces in " << PT_TRACES_DIR;
  ASSERT_TRUE(catalog());
  ASSERT_GE(reports().size(), 20u) << "the corpus holds 25 trace files; most must load";
  for (const auto& [name, r] : reports()) {
    SCOPED_TRACE(name);
    const json& recs = r["recommendations"];
    const json& plan = r["plan"];
    ASSERT_TRUE(plan.is_object());
    if (plan["no_fix_reason"].is_null()) {
      ASSERT_FALSE(recs.empty()) << "no recommendation and no reason";
      EXPECT_TRUE(recs[0]["addresses_bottleneck"].get<bool>()) << r["verdict"]["bottleneck"] << " " << recs[0].dump();
      bool found = false;
      for (const auto& a : recs[0]["addresses"]) found |= a == r["verdict"]["bottleneck"];
      EXPECT_TRUE(found) << "addresses_bottleneck disagrees with addresses";
    } else {
      for (const auto& rec : recs) EXPECT_NE(rec["group"], "primary") << "a primary fix exists yet the plan says none";
    }
  }
}

// Issue 23: a GPU-bound step is never a dead end: the plan has a step, or it says the leading operators run at
// their roof (efficiency.at_roof). Traces with operator shapes on a device in the peak table report MFU.
TEST(CorpusRanking, GpuBoundEndsWithAPlanStepOrAnAtTheRoofStatement) {
  if (corpus().empty()) GTEST_SKIP() << "no traces in " << PT_TRACES_DIR;
  int gpu_bound = 0, with_mfu = 0;
  for (const auto& [name, r] : reports()) {
    SCOPED_TRACE(name);
    const json& e = r["efficiency"];
    if (e["flops_known"] == true && e["gpu_spec"].is_string() && e["dtype"] != "int") {
      EXPECT_TRUE(e["mfu"].is_number());
      ++with_mfu;
    }
    if (r["verdict"]["bottleneck"] != "gpu_compute") continue;
    ++gpu_bound;
    const json& plan = r["plan"];
    EXPECT_TRUE(!plan["steps"].empty() || e["at_roof"].is_string()) << plan.dump();
  }
  EXPECT_GT(gpu_bound, 0);
  EXPECT_GE(with_mfu, 6);  // the six TraceLens traces at least
}

TEST(CorpusRanking, MinorNeverAboveMaterialAndNotesLast) {
  if (corpus().empty()) GTEST_SKIP() << "no traces in " << PT_TRACES_DIR;
  for (const auto& [name, r] : reports()) {
    SCOPED_TRACE(name);
    const json& recs = r["recommendations"];
    bool seen_minor = false;
    int last_group = 0;
    for (size_t i = 0; i < recs.size(); ++i) {
      const json& rec = recs[i];
      const int g = group_rank(rec["group"]);
      EXPECT_GE(g, last_group) << "group order broken at #" << i + 1;
      last_group = g;
      EXPECT_EQ(rec["rank"], static_cast<int>(i + 1));
      EXPECT_FALSE(rec["rank_reason"].get<std::string>().empty());
      const bool minor = rec["removable_share"].is_number() && rec["removable_share"].get<double>() < 0.03;
      if (rec["group"] == "note") continue;
      // A fix that addresses the bottleneck is primary, also when its bound is minor if no material fix for the
      // bottleneck exists (it leads then); among the others a minor one never stands above a material one.
      if (rec["group"] == "primary") {
        EXPECT_TRUE(rec["addresses_bottleneck"].get<bool>()) << rec.dump();
        if (minor)
          for (const auto& other : recs)
            EXPECT_FALSE(other["group"] == "primary" && other["removable_share"].is_number() &&
                         other["removable_share"].get<double>() >= 0.03)
                << rec["id"] << " is a minor primary fix although " << other["id"] << " is material";
        continue;
      }
      if (minor) seen_minor = true;
      else EXPECT_FALSE(seen_minor) << rec["id"] << " (bound over 3%) stands below a minor fix";
      EXPECT_EQ(minor, rec["group"] == "minor") << rec.dump();
    }
    for (size_t i = 0; i < r["plan"]["steps"].size(); ++i) {
      const json& s = r["plan"]["steps"][i];
      bool ok = false;
      for (const auto& rec : recs)
        if (rec["id"] == s["id"])
          ok = rec["group"] == "primary" ? rec["evidence_level"] != "note"
                                         : rec["evidence_level"] == "measured" && group_rank(rec["group"]) <= 1;
      EXPECT_TRUE(ok) << "plan step " << s["id"] << " is neither a fix for the bottleneck nor a measured, material one";
    }
    EXPECT_LE(r["plan"]["combined_speedup_max"].get<double>(), 100.0);
    EXPECT_GE(r["plan"]["combined_speedup_max"].get<double>(), 1.0);
  }
}

std::vector<std::string> ids(const json& r) {
  std::vector<std::string> out;
  for (const auto& rec : r["recommendations"]) out.push_back(rec["id"]);
  return out;
}

TEST(CorpusRanking, TbPluginResNet50GetsAmpFirstWhenComputeBoundAndWorkersFirstWhenInputBound) {
  int seen = 0;
  for (const auto& [name, r] : reports()) {
    if (name.find("resnet50_num_workers_4/") != std::string::npos) {
      ++seen;
      EXPECT_EQ(r["verdict"]["bottleneck"], "gpu_compute") << name;
      ASSERT_FALSE(ids(r).empty());
      EXPECT_EQ(ids(r)[0], "amp") << name << ": " << r["recommendations"].dump(1);
      EXPECT_EQ(r["plan"]["steps"][0]["id"], "amp") << name;
    } else if (name.find("resnet50_num_workers_0/") != std::string::npos) {
      ++seen;
      EXPECT_EQ(r["verdict"]["bottleneck"], "input_pipeline") << name;
      ASSERT_GE(ids(r).size(), 2u);
      EXPECT_EQ(ids(r)[0], "dataloader-workers") << name;
      EXPECT_EQ(ids(r)[1], "amp") << name;
    }
  }
  if (seen == 0) GTEST_SKIP() << "tb_plugin traces not found in " << PT_TRACES_DIR;
  EXPECT_EQ(seen, 4);
}

}  // namespace
}  // namespace profile_train::rules
