// The knob vocabulary (common/knobs.h): one spelling per format, command-line spellings, value domains,
// what a value needs, and the Python shim's override keys and the workload's flags read from their sources.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "profile_train/common/knobs.h"

namespace pt = profile_train;

namespace {

// The shim's Python sources (src/agent/python/*.py), concatenated in name order.
std::string shim_source() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(PT_SHIM_DIR)) {
    if (e.path().extension() == ".py") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::ostringstream s;
  for (const auto& f : files) s << std::ifstream(f).rdbuf() << "\n";
  return s.str();
}

std::set<std::string> catalog_override_keys() {
  std::set<std::string> keys;
  for (const pt::KnobDef& k : pt::knob_catalog()) {
    if (!k.override_key.empty()) keys.insert(k.override_key);
  }
  return keys;
}

}  // namespace

TEST(Knobs, FormatsUseTheCanonicalNameOnly) {
  ASSERT_NE(pt::find_knob("prefetch_factor"), nullptr);
  EXPECT_EQ(pt::find_knob("prefetch"), nullptr);
  EXPECT_EQ(pt::find_knob("dataloader.num_workers"), nullptr);
  EXPECT_EQ(pt::find_knob("Batch_Size"), nullptr);
  for (const pt::KnobDef& k : pt::knob_catalog()) EXPECT_EQ(pt::find_knob(k.name), &k) << k.name;
}

TEST(Knobs, CommandLineSpellingsReachTheSameKnob) {
  EXPECT_EQ(pt::find_knob_spelling(" Workers "), pt::find_knob("num_workers"));
  EXPECT_EQ(pt::find_knob_spelling("prefetch"), pt::find_knob("prefetch_factor"));
  EXPECT_EQ(pt::find_knob_spelling("dataloader.batch_size"), pt::find_knob("batch_size"));
  EXPECT_EQ(pt::find_knob_spelling("warp_speed"), nullptr);
  // No spelling names two knobs.
  std::set<std::string> seen;
  for (const pt::KnobDef& k : pt::knob_catalog()) {
    std::vector<std::string> spellings = k.aliases;
    spellings.push_back(k.name);
    if (!k.override_key.empty()) spellings.push_back(k.override_key);
    for (const auto& s : std::set<std::string>(spellings.begin(), spellings.end())) {
      EXPECT_TRUE(seen.insert(s).second) << s;
      EXPECT_EQ(pt::find_knob_spelling(s), &k) << s;
    }
  }
}

TEST(Knobs, ValueDomains) {
  const pt::KnobDef& amp = *pt::find_knob("amp");
  EXPECT_EQ(*pt::canonical_value(amp, "BFloat16"), "bf16");
  EXPECT_EQ(*pt::canonical_value(amp, "none"), "off");
  EXPECT_FALSE(pt::canonical_value(amp, "int8").ok());
  const pt::KnobDef& bs = *pt::find_knob("batch_size");
  EXPECT_FALSE(pt::canonical_value(bs, "0").ok());
  EXPECT_EQ(*pt::canonical_value(*pt::find_knob("num_workers"), "0"), "0");
  EXPECT_FALSE(pt::canonical_value(bs, "1e3").ok());
  EXPECT_EQ(*pt::canonical_value(*pt::find_knob("tf32"), "on"), "1");
  // Every auto list is in its own domain.
  for (const pt::KnobDef& k : pt::knob_catalog()) {
    for (const auto& v : k.auto_values) {
      auto c = pt::canonical_value(k, v);
      ASSERT_TRUE(c.ok()) << k.name << "=" << v;
      EXPECT_EQ(*c, v) << k.name;
    }
  }
}

TEST(Knobs, WhatAValueNeeds) {
  EXPECT_EQ(pt::needs_of(*pt::find_knob("pin_memory"), "1"), pt::KnobNeeds::kGpu);
  EXPECT_EQ(pt::needs_of(*pt::find_knob("amp"), "fp16"), pt::KnobNeeds::kGpu);
  EXPECT_EQ(pt::needs_of(*pt::find_knob("amp"), "bf16"), pt::KnobNeeds::kGpuOrNativeBf16);
  EXPECT_EQ(pt::needs_of(*pt::find_knob("amp"), "off"), pt::KnobNeeds::kNothing);
  EXPECT_EQ(pt::needs_of(*pt::find_knob("channels_last"), "1"), pt::KnobNeeds::kNothing);
  for (const pt::KnobDef& k : pt::knob_catalog()) {
    if (k.needs != pt::KnobNeeds::kNothing) {
      EXPECT_FALSE(k.needs_why.empty()) << k.name;
    }
    for (const auto& n : k.value_needs) EXPECT_FALSE(n.why.empty()) << k.name << "=" << n.value;
  }
}

// The shim applies exactly the catalog's override keys, read from PROFILE_TRAIN_OVERRIDES, and spells no
// other key of that form anywhere.
TEST(Knobs, PythonShimOverrideKeysAreTheCatalogs) {
  const std::string src = shim_source();
  ASSERT_FALSE(src.empty()) << PT_SHIM_DIR;
  EXPECT_NE(src.find("os.environ.get(\"" + std::string(pt::kOverridesEnv) + "\""), std::string::npos);
  const size_t begin = src.find("\n_OVERRIDE_KEYS = {");
  ASSERT_NE(begin, std::string::npos) << "the shim's _OVERRIDE_KEYS table";
  const size_t end = src.find("\n}", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string table = src.substr(begin, end - begin);
  std::set<std::string> in_table;
  const std::regex entry("\"([^\"]+)\"\\s*:");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), entry); it != std::sregex_iterator(); ++it) {
    in_table.insert((*it)[1]);
  }
  EXPECT_EQ(in_table, catalog_override_keys());
  const std::regex dotted("\"([a-z_]+\\.[a-z_]+)\"");
  for (auto it = std::sregex_iterator(src.begin(), src.end(), dotted); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(catalog_override_keys().count((*it)[1])) << "the shim spells an override key the catalog lacks: "
                                                          << (*it)[1];
  }
}

// Every knob's workload flag is an option of the built-in workload (src/workload/options.cpp; the workload
// itself needs LibTorch, its option parser is read here so that this check runs on every build).
TEST(Knobs, WorkloadFlagsAreTheWorkloadsOptions) {
  std::ifstream in(PT_WORKLOAD_OPTIONS_PATH);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string src = text.str();
  ASSERT_FALSE(src.empty()) << PT_WORKLOAD_OPTIONS_PATH;
  int with_flag = 0;
  for (const pt::KnobDef& k : pt::knob_catalog()) {
    if (k.workload_flag.empty()) continue;
    ++with_flag;
    EXPECT_NE(src.find("app.add_option(\"" + k.workload_flag + "\""), std::string::npos) << k.name << " "
                                                                                          << k.workload_flag;
  }
  EXPECT_GT(with_flag, 0);
}

// `run --apply FILE`: tune's apply.json or a bare object, checked against the catalog and typed for the shim.
TEST(Knobs, OverridesDocumentForRunApply) {
  auto a = pt::parse_overrides_document(
      R"({"overrides": {"torch.threads": 2, "optimizer.impl": "fused", "model.channels_last": "on",
                        "model.compile": "cudagraphs", "amp.dtype": "bfloat16"}, "config": {"threads": "2"}})");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["torch.threads"], 2);
  EXPECT_EQ((*a)["optimizer.impl"], "fused");
  EXPECT_EQ((*a)["model.channels_last"], true);
  EXPECT_EQ((*a)["model.compile"], "reduce-overhead");
  EXPECT_EQ((*a)["amp.dtype"], "bf16");
  auto bare = pt::parse_overrides_document(R"({"dataloader.num_workers": 4})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ((*bare)["dataloader.num_workers"], 4);
  for (const char* bad : {R"({"torch.warp": 1})", R"({"torch.threads": -1})", R"({"model.compile": "turbo"})",
                          R"({"overrides": [1]})", R"({"torch.threads": [2]})", "[]", "{nope"}) {
    auto r = pt::parse_overrides_document(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}
