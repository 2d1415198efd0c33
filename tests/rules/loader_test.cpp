// Loading rule files: the built-in catalog, user folders, and bad files named by FILE:LINE.
#include <gtest/gtest.h>

#include <set>

#include "profile_train/common/knobs.h"
#include "profile_train/rules/engine.h"
#include "rule_set.h"
#include "test_util.h"

namespace profile_train::rules {
namespace {

using testing::rule_text;
using testing::TempDir;

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto p = text.find(from);
  if (p != std::string::npos) text.replace(p, from.size(), to);
  return text;
}
std::string replace_tier(const std::string& text, int tier) {
  return replace(text, "\"tier\": 1", "\"tier\": " + std::to_string(tier));
}
// Adds `"key": value` lines before "knobs" (line 12 of rule_text), so the new key is on line 12.
std::string with_key(const std::string& key_and_value) {
  return replace(rule_text("x"), "  \"knobs\"", "  " + key_and_value + ",\n  \"knobs\"");
}

const char* kCatalogIds[] = {"use-gpu", "dataloader-workers", "pin-memory", "prefetch-persistent-workers",
                             "create-on-device", "fused-adamw", "zero-grad-set-to-none", "avoid-host-sync",
                             "cudnn-benchmark", "tf32", "right-size-dtypes", "gpu-preprocessing", "amp",
                             "channels-last", "batch-size", "gradient-accumulation", "activation-checkpointing",
                             "cuda-graphs", "ddp", "fsdp", "comm-overlap", "keep-caching-allocator",
                             "cpu-threads", "cpu-bf16-autocast", "cpu-oversubscription", "fuse-memory-bound",
                             "tensor-core-shapes", "fused-attention", "fp8-matmul", "h2d-overlap-resident",
                             "remove-graph-breaks", "avoid-recompiles", "merge-small-collectives",
                             "gradient-compression", "fsdp-prefetch", "link-bound", "inference-tp-communication"};

TEST(Catalog, BuiltInHasEveryCatalogIdWithItsTier) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok()) << set.status().message();
  const auto all = list_rules(**set);
  std::set<std::string> ids;
  for (const auto& r : all) {
    ids.insert(r.id);
    EXPECT_TRUE(r.builtin);
    EXPECT_EQ(r.file, "<built-in>/" + r.id + ".json");
  }
  EXPECT_EQ(all.size(), std::size(kCatalogIds));
  for (const char* id : kCatalogIds) EXPECT_TRUE(ids.count(id)) << id;
  // The catalog's tiers (rules/README.md).
  std::map<std::string, int> tier;
  for (const auto& r : all) tier[r.id] = r.tier;
  for (const char* id : {"use-gpu", "dataloader-workers", "pin-memory", "tf32", "gpu-preprocessing",
                         "remove-graph-breaks", "avoid-recompiles", "merge-small-collectives"})
    EXPECT_EQ(tier[id], 1) << id;
  for (const char* id : {"amp", "channels-last", "batch-size", "gradient-compression", "fsdp-prefetch"})
    EXPECT_EQ(tier[id], 2) << id;
  for (const char* id : {"gradient-accumulation", "activation-checkpointing", "cuda-graphs", "inference-tp-communication"})
    EXPECT_EQ(tier[id], 3) << id;
  for (const char* id : {"ddp", "fsdp", "comm-overlap", "link-bound"}) EXPECT_EQ(tier[id], 4) << id;
}

TEST(Catalog, FilesOnDiskMatchTheEmbeddedCopy) {
  // The embedded catalog is generated from rules/*.json at build time; check_rules reads the folder itself.
  auto found = check_rules(std::filesystem::path(PT_SOURCE_DIR) / "rules");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->size(), std::size(kCatalogIds));
  for (size_t i = 0; i < detail::kEmbeddedRuleCount; ++i) {
    const auto& e = detail::kEmbeddedRules[i];
    EXPECT_EQ(testing::read_file(std::filesystem::path(PT_SOURCE_DIR) / "rules" / e.name), e.text) << e.name;
  }
}

// rule.schema.json's knob names are the knob catalog's (common/knobs.h), which the loader checks against.
TEST(Catalog, SchemaKnobsAreTheCatalogs) {
  const auto schema = nlohmann::json::parse(testing::read_file(std::filesystem::path(PT_SOURCE_DIR) / "rules" /
                                                               "rule.schema.json"));
  std::vector<std::string> names;
  for (const KnobDef& k : knob_catalog()) names.push_back(k.name);
  EXPECT_EQ(schema.at("properties").at("knobs").at("items").at("enum").get<std::vector<std::string>>(), names);
}

TEST(Catalog, EveryRuleHasFixesCaveatsReferencesAndAGainRationale) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  for (const auto& r : (*set)->rules) {
    SCOPED_TRACE(r.id);
    EXPECT_FALSE(r.fix_python.empty());
    EXPECT_FALSE(r.fix_cpp.empty());
    EXPECT_GE(r.caveats.size(), 1u);
    EXPECT_GE(r.references.size(), 1u);
    for (const auto& ref : r.references) EXPECT_EQ(ref.rfind("https://", 0), 0u) << ref;
    EXPECT_FALSE(r.gain_rationale.empty());
    EXPECT_GE(r.evidence.size(), 1u);
    // 1.2 adds assume, gain.mechanism and unverified.confirm, 1.3 skews; a rule that uses none of them may stay
    // at the version it was written in.
    const std::string fv = r.json.value("format_version", "");
    EXPECT_TRUE(fv == "1.1" || fv == "1.2" || fv == "1.3") << fv;
    if (!r.skews.empty()) {
      EXPECT_EQ(fv, "1.3");
    } else if (!r.assume.empty() || r.mechanism != detail::Mechanism::kNone) {
      EXPECT_EQ(fv, "1.2");
    }
    // Format 1.1: every built-in says which bottlenecks it relieves, what it costs and where its gain comes from.
    EXPECT_FALSE(r.addresses.empty());
    EXPECT_TRUE(r.json.contains("cost"));
    EXPECT_GE(r.cost.effort, 1);
    EXPECT_GE(r.cost.risk, 1);
    if (r.id != "ddp" && r.id != "fsdp") {
      EXPECT_FALSE(r.gain_from.empty());
    }
  }
}

TEST(Catalog, StandingKeysAreReadAndDefaultFromTheTier) {
  TempDir dir;
  std::string text = rule_text("with-standing");
  text = text.substr(0, text.rfind('}')) +
         ",\n  \"addresses\": [\"input_pipeline\"],\n  \"cost\": {\"effort\": \"medium\", \"risk\": \"high\"},\n"
         "  \"unverified\": [{\"when\": \"not exists(facts.dataloader.num_workers)\", \"text\": \"workers unknown\"}]\n}\n";
  dir.write("a.json", text);
  dir.write("b.json", replace_tier(rule_text("plain"), 3));
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  const detail::Rule* a = (*set)->find("with-standing");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->addresses, std::vector<std::string>{"input_pipeline"});
  EXPECT_EQ(a->cost.effort, 2);
  EXPECT_EQ(a->cost.risk, 3);
  ASSERT_EQ(a->unverified.size(), 1u);
  EXPECT_EQ(a->unverified[0].level, "check");
  const detail::Rule* b = (*set)->find("plain");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->addresses.empty());
  EXPECT_EQ(b->cost.effort, 2);  // tier 3 -> medium / medium
  EXPECT_EQ(b->cost.risk, 2);
}

TEST(UserRules, AddAndReplaceBuiltIns) {
  TempDir dir;
  dir.write("mine.json", rule_text("my-rule"));
  dir.write("override.json", rule_text("amp", "gpu.tensor_core_kernel_share < 0.5", "1.3", "My own AMP advice"));
  dir.write("rule.schema.json", "{\"not\": \"a rule\"}");  // schema files are skipped
  dir.write("notes.txt", "ignored");
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  const auto all = list_rules(**set);
  EXPECT_EQ(all.size(), std::size(kCatalogIds) + 1);
  bool saw_amp = false, saw_mine = false;
  for (const auto& r : all) {
    if (r.id == "amp") {
      saw_amp = true;
      EXPECT_EQ(r.title, "My own AMP advice");
      EXPECT_FALSE(r.builtin);
      EXPECT_EQ(r.file, (dir.path() / "override.json").string());
    }
    if (r.id == "my-rule") saw_mine = r.tier == 1;
  }
  EXPECT_TRUE(saw_amp);
  EXPECT_TRUE(saw_mine);
}

struct BadCase {
  const char* name;
  std::string text;
  int line;                 // expected line in the message
  const char* must_contain;
  StatusCode code = StatusCode::kBadInput;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadRuleFile : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRuleFile, OneClearErrorWithFileAndLine) {
  const BadCase& c = GetParam();
  TempDir dir;
  const auto path = dir.write("bad.json", c.text);
  for (int via_check = 0; via_check < 2; ++via_check) {
    Status s = via_check ? check_rules(dir.path()).status() : load_rules({dir.path()}).status();
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), c.code) << s.message();
    EXPECT_EQ(s.exit_code(), 2);
    const std::string prefix = path.string() + ":" + std::to_string(c.line) + ":";
    EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << "want prefix " << prefix << "\n got: " << s.message();
    EXPECT_NE(s.message().find(c.must_contain), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line: " << s.message();
  }
}


INSTANTIATE_TEST_SUITE_P(
    Rules, BadRuleFile,
    ::testing::Values(
        BadCase{"syntax", replace(rule_text("x"), "\"tier\": 1,", "\"tier\": 1"), 6, "JSON syntax error"},
        BadCase{"truncated", "{\n  \"format_version\": \"1.0\",\n  \"id\": \"x\",\n", 4, "JSON syntax error"},
        BadCase{"unknown_metric", rule_text("x", "breakdown.dataloading > 0.05"), 6,
                "rule 'x': in \"when\", column 1 near 'breakdown.dataloading': unknown metric"},
        BadCase{"syntax_in_when", rule_text("x", "breakdown.data_loading >> 0.05"), 6, "column 25"},
        BadCase{"type_in_when", rule_text("x", "device.compute_capability >= 7.0"), 6, "cannot order a string"},
        BadCase{"version", rule_text("x", "breakdown.data_loading > 0.5", "2.0"), 2,
                "unsupported rule format_version \"2.0\"", StatusCode::kUnsupported},
        BadCase{"no_version", replace(rule_text("x"), "\"format_version\": \"1.0\",", ""), 1,
                "missing required key \"format_version\""},
        BadCase{"evidence_metric",
                replace(rule_text("x"), "{breakdown.data_loading|pct}", "{breakdown.data_loadin|pct}"), 7,
                "evidence placeholder {breakdown.data_loadin|pct}: column 1"},
        BadCase{"evidence_format", replace(rule_text("x"), "|pct}", "|percent}"), 7, "unknown format 'percent'"},
        BadCase{"gain_metric", replace(rule_text("x"), "\"removable_share\": \"breakdown.data_loading\"",
                                       "\"removable_share\": \"breakdown.loading\""),
                8, "gain.removable_share"},
        BadCase{"gain_not_number", replace(rule_text("x"), "\"removable_share\": \"breakdown.data_loading\"",
                                           "\"removable_share\": \"breakdown.data_loading > 0\""),
                8, "must be a number expression"},
        BadCase{"knob", replace(rule_text("x"), "\"num_workers\"]", "\"warp_speed\"]"), 12, "unknown tuner knob"},
        // A command-line spelling is not a rule file's: the canonical name is suggested.
        BadCase{"knob_alias", replace(rule_text("x"), "\"num_workers\"]", "\"prefetch\"]"), 12,
                "unknown tuner knob \"prefetch\" (did you mean \"prefetch_factor\"? known: num_workers, "},
        BadCase{"typo_key", replace(rule_text("x"), "\"caveats\"", "\"caveat\""), 10, "unknown key \"caveat\""},
        BadCase{"tier", replace(rule_text("x"), "\"tier\": 1", "\"tier\": 7"), 5, "\"tier\" must be an integer 1..4"},
        BadCase{"id", replace(rule_text("x"), "\"id\": \"x\"", "\"id\": \"Bad Id\""), 3, "\"id\" must be"},
        BadCase{"evidence_when", replace(rule_text("x"), "[\"Data loading takes {breakdown.data_loading|pct} of the step\"]",
                                         "[{\"text\": \"t\", \"when\": \"gpu.utilisation < 1\"}]"),
                7, "in evidence \"when\", column 1 near 'gpu.utilisation': unknown metric"},
        BadCase{"reference", replace(rule_text("x"), "https://pytorch.org/docs/stable/data.html", "see docs"), 11,
                "references must be URLs"},
        BadCase{"addresses", with_key("\"addresses\": [\"gpu-compute\"]"), 12, "unknown bottleneck class \"gpu-compute\""},
        BadCase{"cost_level", with_key("\"cost\": {\"effort\": \"tiny\", \"risk\": \"low\"}"), 12,
                "\"cost.effort\" must be \"low\", \"medium\" or \"high\""},
        BadCase{"cost_missing_risk", with_key("\"cost\": {\"effort\": \"low\"}"), 12, "\"cost.risk\""},
        BadCase{"unverified_level", with_key("\"unverified\": [{\"when\": \"true\", \"text\": \"t\", \"level\": \"maybe\"}]"), 12,
                "\"unverified.level\" must be"},
        BadCase{"unverified_metric", with_key("\"unverified\": [{\"when\": \"facts.nope == 1\", \"text\": \"t\"}]"), 12,
                "unknown metric"},
        BadCase{"gain_from", replace(rule_text("x"), "\"rationale\": \"all of it\"", "\"from\": [\"gpu\"], \"rationale\": \"all of it\""), 8,
                "\"gain.from\" items must be breakdown roles"},
        // Format 1.2: assume, gain.mechanism, unverified.confirm.
        BadCase{"assume_metric", with_key("\"assume\": [{\"metric\": \"device.cc\", \"value\": \"7.0\", \"text\": \"t\"}]"), 12,
                "\"assume.metric\": unknown metric path \"device.cc\""},
        BadCase{"assume_key", with_key("\"assume\": [{\"metric\": \"device.compute_capability\", \"value\": \"7.0\", \"text\": \"t\", \"why\": 1}]"), 12,
                "unknown key \"why\" in an \"assume\" item"},
        BadCase{"assume_no_value", with_key("\"assume\": [{\"metric\": \"device.compute_capability\", \"text\": \"t\"}]"), 12,
                "an \"assume\" item needs \"value\""},
        BadCase{"assume_local", with_key("\"assume\": [{\"metric\": \"device.compute_capability\", \"value\": \"$nope\", \"text\": \"t\"}]"), 12,
                "in \"assume.value\""},
        BadCase{"mechanism", replace(rule_text("x"), "\"rationale\": \"all of it\"", "\"mechanism\": \"cpu\", \"rationale\": \"all of it\""), 8,
                "\"gain.mechanism\" must be"},
        BadCase{"unverified_confirm", with_key("\"unverified\": [{\"when\": \"true\", \"text\": \"t\", \"confirm\": 3}]"), 12,
                "\"unverified.confirm\" must be a string"},
        // Format 1.3: skews.
        BadCase{"skews_role", with_key("\"skews\": {\"roles\": [\"gpu\"], \"text\": \"t\"}"), 12,
                "\"skews.roles\" items must be breakdown roles"},
        BadCase{"skews_text", with_key("\"skews\": {\"roles\": [\"cpu\"]}"), 12, "\"skews.text\" must be a non-empty string"},
        BadCase{"skews_key", with_key("\"skews\": {\"roles\": [\"cpu\"], \"text\": \"t\", \"why\": 1}"), 12,
                "unknown key \"why\" in \"skews\""}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(UserRules, DuplicateIdAcrossFilesNamesBothFiles) {
  TempDir dir;
  const auto a = dir.write("a.json", rule_text("same-id"));
  const auto b = dir.write("b.json", rule_text("same-id"));
  for (int via_check = 0; via_check < 2; ++via_check) {
    Status s = via_check ? check_rules(dir.path()).status() : load_rules({dir.path()}).status();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.exit_code(), 2);
    EXPECT_EQ(s.message().rfind(b.string() + ":3: duplicate rule id 'same-id'", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("first defined at " + a.string() + ":3"), std::string::npos) << s.message();
  }
}

TEST(UserRules, DuplicateIdAcrossTwoFolders) {
  TempDir one, two;
  one.write("a.json", rule_text("same-id"));
  const auto b = two.write("b.json", rule_text("same-id"));
  auto set = load_rules({one.path(), two.path()});
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message().rfind(b.string() + ":3: duplicate rule id", 0), 0u) << set.status().message();
}

TEST(UserRules, MissingOrEmptyFolderIsAnError) {
  TempDir dir;
  auto missing = load_rules({dir.path() / "nope"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().exit_code(), 2);
  EXPECT_NE(missing.status().message().find("no such rules folder"), std::string::npos);
  auto empty = check_rules(dir.path());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no rule files"), std::string::npos);
}

TEST(UserRules, CheckAcceptsOneFile) {
  TempDir dir;
  const auto f = dir.write("one.json", rule_text("solo"));
  auto found = check_rules(f);
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, "solo");
}

TEST(JsonLines, MultiLineValuesAndNestedPointers) {
  // parse_rule reports the line of the key even when values span lines.
  std::string text = rule_text("x");
  text = replace(text, "\"when\": \"breakdown.data_loading > 0.5\"", "\"when\":\n    \"breakdown.data_loadin > 0.5\"");
  auto r = detail::parse_rule(text, "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("f.json:6:", 0), 0u) << r.status().message();
}

}  // namespace
}  // namespace profile_train::rules
