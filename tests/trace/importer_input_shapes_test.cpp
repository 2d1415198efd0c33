// The cpu_op inputs the Kineto importer keeps ("Input Dims", "Input type"): compact (one interned pair per
// distinct signature), canonical whatever the source's spacing, bounded and valid UTF-8 whatever the source
// holds, and on the real corpus the same as an independent rendering made with nlohmann::json.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <vector>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "io/byte_sources.h"
#include "importers/importers_internal.h"
#include "profile_train/common/utf8.h"
#include "test_util.h"

namespace profile_train::trace {
namespace {

using testing::kineto_doc;
using testing::load_json;

Trace load_ok(std::string_view json) {
  auto t = load_json(json);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return Trace{};
  return std::move(t).value();
}

const Event* find_event(const Trace& t, std::string_view name) {
  for (const auto& e : t.events)
    if (t.name(e) == name) return &e;
  return nullptr;
}

std::string op(std::string_view name, int ts, std::string_view args) {
  return "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + std::string(name) + "\",\"pid\":1,\"tid\":1,\"ts\":" +
         std::to_string(ts) + ",\"dur\":1,\"args\":{" + std::string(args) + "}}";
}

TEST(KinetoInputShapes, DimsAndTypesAreKeptCanonicalAndInternedOncePerSignature) {
  const Trace t = load_ok(kineto_doc(
      op("aten::addmm", 1, R"("Input Dims": [[4096], [256, 1024], [1024, 4096]], "Input type": ["float", "float", "float"])") + "," +
      op("aten::addmm#2", 2, R"("Input type":["float","float","float"],"Input Dims":[ [4096],[256,1024] , [1024,4096] ])") + "," +
      op("aten::add", 3, R"("Input Dims": [[], [8, 3, 224, 224], [[2, 3], [4]]], "Input type": ["", "c10::Half", "TensorList"])") + "," +
      op("aten::empty", 4, R"("External id": 7)")));
  const Event* a = find_event(t, "aten::addmm");
  const Event* b = find_event(t, "aten::addmm#2");
  const Event* c = find_event(t, "aten::add");
  const Event* d = find_event(t, "aten::empty");
  ASSERT_TRUE(a && b && c && d);
  ASSERT_NE(a->inputs, 0u);
  EXPECT_EQ(a->inputs, b->inputs);  // same signature, one entry, whatever the spacing and key order
  EXPECT_EQ(d->inputs, 0u);         // nothing recorded
  EXPECT_EQ(d->external_id, 7);
  ASSERT_EQ(t.op_inputs.size(), 3u);  // none + two signatures
  EXPECT_EQ(t.strings.get(t.op_inputs[a->inputs].dims), "[[4096], [256, 1024], [1024, 4096]]");
  EXPECT_EQ(t.strings.get(t.op_inputs[a->inputs].types), "[float, float, float]");
  EXPECT_EQ(t.strings.get(t.op_inputs[c->inputs].dims), "[[], [8, 3, 224, 224], [[2, 3], [4]]]");
  EXPECT_EQ(t.strings.get(t.op_inputs[c->inputs].types), "[, c10::Half, TensorList]");
  EXPECT_TRUE(t.has_input_shapes());
  EXPECT_EQ(t.quality.malformed_events, 0);
}

TEST(KinetoInputShapes, TraceWithoutInputDimsHasNoSignatures) {
  const Trace t = load_ok(kineto_doc(op("aten::mm", 1, R"("External id": 1)") + "," + op("aten::relu", 2, "")));
  ASSERT_EQ(t.events.size(), 2u);
  for (const auto& e : t.events) EXPECT_EQ(e.inputs, 0u);
  EXPECT_EQ(t.op_inputs.size(), 1u);
  EXPECT_FALSE(t.has_input_shapes());
}

TEST(KinetoInputShapes, OnlyTypesRecordedKeepsTypesWithoutDims) {
  const Trace t = load_ok(kineto_doc(op("aten::mm", 1, R"("Input type": ["float", "float"])")));
  ASSERT_EQ(t.events.size(), 1u);
  ASSERT_NE(t.events[0].inputs, 0u);
  EXPECT_EQ(t.op_inputs[t.events[0].inputs].dims, 0u);
  EXPECT_EQ(t.strings.get(t.op_inputs[t.events[0].inputs].types), "[float, float]");
}

TEST(KinetoInputShapes, HostileValuesAreBoundedValidAndNeverFatal) {
  // A huge dims list, a huge dtype string, invalid UTF-8 and control bytes in a dtype, values of the wrong
  // type inside the lists, and lists that are not lists.
  std::string huge = "[";
  for (int i = 0; i < 100000; ++i) huge += (i ? ", [" : "[") + std::to_string(i) + ", 7]";
  huge += "]";
  const std::string long_type(100000, 'x');
  const Trace t = load_ok(kineto_doc(
      op("huge", 1, "\"Input Dims\": " + huge + ", \"Input type\": [\"" + long_type + "\"]") + "," +
      op("bad_utf8", 2, "\"Input Dims\": [[1]], \"Input type\": [\"fl\xff\xfe" "at\", \"a\\u001b[31mb\"]") + "," +
      op("wrong_types", 3, R"("Input Dims": [[1.5, -2, "x", null, {"k": [1]}, true], 3], "Input type": [1, null, ["f"]])") + "," +
      op("not_lists", 4, R"("Input Dims": "[[1, 2]]", "Input type": {"a": 1})") + "," +
      op("after", 5, R"("Input Dims": [[2, 2]])")));
  ASSERT_EQ(t.events.size(), 5u);
  const Event* h = find_event(t, "huge");
  ASSERT_NE(h, nullptr);
  ASSERT_NE(h->inputs, 0u);
  const std::string& dims = t.strings.get(t.op_inputs[h->inputs].dims);
  const std::string& types = t.strings.get(t.op_inputs[h->inputs].types);
  EXPECT_LE(dims.size(), kMaxInputsText);
  EXPECT_LE(types.size(), kMaxInputsText);
  EXPECT_EQ(dims.substr(0, 17), "[[0, 7], [1, 7], ");
  EXPECT_TRUE(dims.ends_with("...")) << dims.substr(dims.size() - 20);
  EXPECT_TRUE(types.ends_with("...")) << types.substr(types.size() - 20);

  const Event* u = find_event(t, "bad_utf8");
  ASSERT_NE(u, nullptr);
  const std::string& ut = t.strings.get(t.op_inputs[u->inputs].types);
  EXPECT_TRUE(is_valid_utf8(ut)) << ut;
  EXPECT_EQ(ut, "[fl\xEF\xBF\xBD\xEF\xBF\xBD" "at, a\x1b[31mb]");  // control bytes are escaped at output

  const Event* w = find_event(t, "wrong_types");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(t.strings.get(t.op_inputs[w->inputs].dims), "[[?, -2, ?, ?, ?, ?], 3]");
  EXPECT_EQ(t.strings.get(t.op_inputs[w->inputs].types), "[?, ?, ?]");

  const Event* n = find_event(t, "not_lists");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs, 0u);  // skipped, not guessed

  const Event* a = find_event(t, "after");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(t.strings.get(t.op_inputs[a->inputs].dims), "[[2, 2]]");
  EXPECT_EQ(t.quality.malformed_events, 0);
}

TEST(KinetoInputShapes, RepeatedListsAreReadOnceAndBadOnesStillFail) {
  // The second and third lists are byte-identical to the first (looked up, not read again); a list that only
  // looks like one seen before up to a point is read in full.
  const std::string dims = R"("Input Dims": [[32, 3, 224, 224], [64, 3, 7, 7], []])";
  const Trace t = load_ok(kineto_doc(op("a", 1, dims) + "," + op("b", 2, dims) + "," + op("c", 3, dims) + "," +
                                     op("d", 4, R"("Input Dims": [[32, 3, 224, 224], [64, 3, 7, 7], [], [1]])")));
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[0].inputs, t.events[1].inputs);
  EXPECT_EQ(t.events[0].inputs, t.events[2].inputs);
  EXPECT_EQ(t.strings.get(t.op_inputs[t.events[3].inputs].dims), "[[32, 3, 224, 224], [64, 3, 7, 7], [], [1]]");
  // Malformed or truncated lists are errors of the file, whether or not a valid list came before.
  for (const char* bad : {R"("Input Dims": [[32, 3, 224, 224], [64, 3, 7, 7], [],])", R"("Input Dims": [[32, 3 224]])"}) {
    auto r = load_json(kineto_doc(op("a", 1, dims) + "," + op("x", 5, bad)));
    EXPECT_FALSE(r.ok()) << bad;
  }
  const std::string doc = kineto_doc(op("a", 1, dims) + "," + op("b", 2, dims));
  auto r = load_json(doc.substr(0, doc.rfind("[[32") + 6));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
}

TEST(KinetoInputShapes, TinyBuffersGiveTheSameSignatures) {
  // The reader re-runs an element after a refill: the rendering must restart with it.
  const std::string doc = kineto_doc(
      op("aten::addmm", 1, R"("Input Dims": [[4096], [256, 1024], [1024, 4096]], "Input type": ["float", "float", "float"])") + "," +
      op("aten::conv2d", 2, R"("Input Dims": [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []], "Input type": ["float", "float", "", "", "", "", ""])"));
  const Trace big = load_ok(doc);
  for (size_t chunk : {size_t{16}, size_t{31}, size_t{64}}) {
    detail::MemorySource src(doc, "tiny");
    auto t = load_kineto_json(src, {}, chunk);
    ASSERT_TRUE(t.ok()) << t.status().message();
    ASSERT_EQ(t->events.size(), big.events.size());
    for (size_t i = 0; i < big.events.size(); ++i) {
      const auto& x = big.op_inputs[big.events[i].inputs];
      const auto& y = t->op_inputs[t->events[i].inputs];
      EXPECT_EQ(big.strings.get(x.dims), t->strings.get(y.dims)) << "chunk " << chunk;
      EXPECT_EQ(big.strings.get(x.types), t->strings.get(y.types)) << "chunk " << chunk;
    }
  }
}

// The corpus: every cpu_op's kept dims/types equal an independent rendering of its args with nlohmann::json.
std::string render(const nlohmann::json& v) {
  if (v.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + render(v[i]);
    return s + "]";
  }
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_string()) return v.get<std::string>();
  return "?";
}

// A text longer than the bound (the independent rendering) and a kept text that was cut compare by their
// first half-bound bytes: the importer cuts between entries, which are short in the corpus.
std::string cut_key(const std::string& s, bool kept) {
  const bool cut = kept ? s.ends_with("...") : s.size() > kMaxInputsText;
  return cut ? "<cut " + s.substr(0, kMaxInputsText / 2) + ">" : s;
}

TEST(KinetoInputShapes, RealTracesKeepEveryRecordedSignature) {
  const std::filesystem::path dir(PT_TRACES_DIR);
  const char* files[] = {"kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                         "hta/timeline_analysis/sampled_rank-0.json.gz", "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"};
  for (const char* rel : files) {
    const auto file = dir / rel;
    if (!std::filesystem::exists(file)) GTEST_SKIP() << "trace not found: " << file;
    auto t = load_trace(file);
    ASSERT_TRUE(t.ok()) << t.status().message();
    const auto doc = nlohmann::json::parse(testing::read_maybe_gzip(file));
    // Compared as multisets of "name dims types": the importer reorders events.
    std::multiset<std::string> expected, got;
    for (const auto& e : doc["traceEvents"]) {
      if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("args") || !e["args"].is_object()) continue;
      const auto& a = e["args"];
      if (!a.contains("Input Dims") && !a.contains("Input type")) continue;
      const std::string dims = a.contains("Input Dims") ? render(a["Input Dims"]) : "";
      const std::string types = a.contains("Input type") ? render(a["Input type"]) : "";
      expected.insert(e.value("name", "") + " " + cut_key(dims, false) + " " + cut_key(types, false));
    }
    for (const auto& e : t->events) {
      if (e.inputs == 0) continue;
      const auto& in = t->op_inputs[e.inputs];
      const std::string &dims = t->strings.get(in.dims), &types = t->strings.get(in.types);
      EXPECT_LE(dims.size(), kMaxInputsText);
      EXPECT_LE(types.size(), kMaxInputsText);
      got.insert(t->name(e) + " " + cut_key(dims, true) + " " + cut_key(types, true));
    }
    EXPECT_GT(expected.size(), 0u) << rel;
    EXPECT_EQ(got.size(), expected.size()) << rel;
    std::vector<std::string> missing, extra;
    std::set_difference(expected.begin(), expected.end(), got.begin(), got.end(), std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), expected.begin(), expected.end(), std::back_inserter(extra));
    EXPECT_TRUE(missing.empty()) << rel << ": " << missing.size() << " not kept, e.g. " << missing.front();
    EXPECT_TRUE(extra.empty()) << rel << ": " << extra.size() << " not in the file, e.g. " << extra.front();
  }
}

}  // namespace
}  // namespace profile_train::trace
