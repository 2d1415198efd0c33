// The Kineto importer's parallel parse (kineto_split.cpp): a trace cut into parts parsed by several threads loads
// to exactly the model, and fails with exactly the error, that one parser gives: on every Kineto trace of the
// corpus, on generated traces of every event kind (string pids, metadata, inputs, members after traceEvents,
// cut points inside strings and nested objects), and where joining must give up (capped tallies, made-up ids).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "profile_train/trace/importer.h"
#include "test_util.h"

namespace profile_train::trace {
namespace {

using testing::model_text;

LoadOptions serial() {
  LoadOptions o;
  o.parallel_parse_min_bytes = UINT64_MAX;
  return o;
}

LoadOptions in_parts(int parts) {
  LoadOptions o;
  o.parallel_parse_min_bytes = 0;
  o.parallel_parse_parts = parts;
  return o;
}

// Loads `doc` by one parser and in `parts` parts; both must give the same model or the same error. Returns how
// many parts the model was joined from (0 for an error).
int expect_same(const std::string& doc, int parts, const std::string& what) {
  auto one = load_trace_bytes(doc, "doc.json", serial());
  auto many = load_trace_bytes(doc, "doc.json", in_parts(parts));
  EXPECT_EQ(one.ok(), many.ok()) << what << ": " << (one.ok() ? many.status().message() : one.status().message());
  if (!one.ok() || !many.ok()) {
    if (!one.ok() && !many.ok()) {
      EXPECT_EQ(one.status().code(), many.status().code()) << what;
      EXPECT_EQ(one.status().message(), many.status().message()) << what;
    }
    return 0;
  }
  EXPECT_EQ(one->meta.parsed_in_parts, 1) << what;
  const std::string a = model_text(*one), b = model_text(*many);
  if (a != b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    ADD_FAILURE() << what << " (" << parts << " parts): models differ at byte " << i << ":\n  one:  "
                  << a.substr(i > 80 ? i - 80 : 0, 200) << "\n  many: " << b.substr(i > 80 ? i - 80 : 0, 200);
  }
  return many->meta.parsed_in_parts;
}

// A generated Kineto document: every event kind the importer reads, random order and layout.
struct DocSpec {
  unsigned seed = 1;
  int events = 1500;
  bool pretty = true;         // one member per line, as Kineto writes; else everything on one line
  bool bare_array = false;    // Chrome's bare-array form
  int unknown_cats = 3;       // distinct unknown categories
  int cpu_pids = 3;           // distinct numeric CPU pids
  bool string_pids = true;    // "Spans"-like string pids and tids, made-up ids
  bool huge_negative_pid = false;  // a numeric pid at or below the made-up ids' range
  int trap_percent = 5;  // events whose name and args hold "}, {" (cut candidates inside strings / objects)
};

std::string generate(const DocSpec& s) {
  std::mt19937 rng(s.seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* nl = s.pretty ? "\n" : "";
  const char* ind = s.pretty ? "  " : "";
  auto pid = [&]() -> std::string {
    if (s.string_pids && pick(6) == 0) {
      static const char* names[] = {"\"Spans\"", "\"Traces\"", "\"PyTorch Profiler\"", "\"custom pid\"", "\"7\""};
      return names[pick(5)];
    }
    if (s.huge_negative_pid && pick(50) == 0) return "-1099511627776";
    return std::to_string(1000 + pick(s.cpu_pids));
  };
  auto tid = [&]() -> std::string {
    if (s.string_pids && pick(8) == 0) return pick(2) ? "\"stream 7\"" : "\"worker thread\"";
    return std::to_string(pick(4));
  };
  static const char* ops[] = {"aten::mm", "aten::add_", "aten::conv2d", "Optimizer.step#SGD.step", "caf\\u00e9 op",
                              "aten::copy_"};
  static const char* dims[] = {"[[2, 3], [3, 4]]", "[[1], []]", "[[[2, 2], [2]], [5]]", "[]", "[[7, 7, 7]]"};
  static const char* types[] = {"[\"float\", \"float\"]", "[\"int\", \"\"]", "[\"TensorList\"]", "[]"};
  std::string out;
  std::string ev;
  std::vector<std::string> events;
  int64_t ts = 1000;
  for (int i = 0; i < s.events; ++i) {
    ts += pick(50);
    const std::string t = std::to_string(ts) + (pick(3) == 0 ? ".5" : "");
    const int kind = pick(100) < s.trap_percent ? 18 : pick(20);
    ev.clear();
    if (kind < 6) {
      ev = R"j({"ph": "X", "cat": "cpu_op", "name": ")j" + std::string(ops[pick(6)]) + R"j(", "pid": )j" + pid() +
           R"j(, "tid": )j" + tid() + R"j(, "ts": )j" + t + R"j(, "dur": )j" + std::to_string(pick(40)) +
           R"j(, "args": {"External id": )j" + std::to_string(i) + R"j(, "Input Dims": )j" + dims[pick(5)] +
           R"j(, "Input type": )j" + types[pick(4)] + (pick(4) == 0 ? R"j(, "Concrete Inputs": ["", "1"])j" : "") + "}}";
    } else if (kind < 9) {
      ev = R"j({"ph": "X", "cat": "kernel", "name": "k)j" + std::to_string(pick(30)) + R"j(", "pid": 0, "tid": )j" +
           std::to_string(7 + pick(2)) + R"j(, "ts": )j" + t + R"j(, "dur": 3, "args": {"device": 0, "stream": 7, )j" +
           R"j("correlation": )j" + std::to_string(i) + R"j(, "grid": [4, 1, 1], "block": [128, 1, 1], )j" +
           R"j("registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "est. achieved occupancy %": 12}})j";
    } else if (kind < 11) {
      ev = R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": )j" + pid() + R"j(, "tid": )j" +
           tid() + R"j(, "ts": )j" + t + R"j(, "dur": 2, "args": {"correlation": )j" + std::to_string(i) + "}}";
    } else if (kind == 11) {
      ev = R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": )j" +
           t + R"j(, "dur": 5, "args": {"bytes": 4096, "device": 0, "stream": 7}})j";
    } else if (kind == 12) {
      ev = R"j({"ph": "i", "s": "t", "name": "[memory]", "pid": )j" + pid() + R"j(, "tid": )j" + tid() + R"j(, "ts": )j" + t +
           R"j(, "args": {"Device Type": 1, "Device Id": 0, "Addr": )j" + std::to_string(4096 * pick(9)) +
           R"j(, "Bytes": )j" + std::to_string(pick(2) ? 512 : -512) + R"j(, "Total Allocated": 9, "Total Reserved": 10}})j";
    } else if (kind == 13) {
      const bool proc = pick(2) == 0;
      ev = R"j({"ph": "M", "name": ")j" + std::string(proc ? "process_name" : "thread_name") + R"j(", "pid": )j" + pid() +
           R"j(, "tid": )j" + tid() + R"j(, "args": {"name": "name )j" + std::to_string(pick(5)) + R"j("}})j";
    } else if (kind == 14) {
      ev = R"j({"ph": ")j" + std::string(pick(2) ? "s" : "f") + R"j(", "cat": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": )j" + t + "}";
    } else if (kind == 15) {
      static const char* odd[] = {"C", "B", "E", "Z", "I"};
      ev = R"j({"ph": ")j" + std::string(odd[pick(5)]) + R"j(", "name": "odd", "pid": 1, "tid": 1, "ts": )j" + t + "}";
    } else if (kind == 16) {
      ev = R"j({"ph": "X", "cat": "weird_)j" + std::to_string(pick(s.unknown_cats)) + R"j(", "name": "w", "pid": )j" +
           pid() + R"j(, "tid": 1, "ts": )j" + t + R"j(, "dur": 1})j";
    } else if (kind == 17) {
      ev = R"j({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)j" + std::to_string(i) + R"j(", "pid": )j" +
           pid() + R"j(, "tid": 1, "ts": )j" + t + R"j(, "dur": 30})j";
    } else if (kind == 18) {
      ev = R"j({"ph": "X", "cat": "cpu_op", "name": "a}, {\"ph\": \"X\"}, {b", "pid": 1, "tid": 1, "ts": )j" + t +
           R"j(, "dur": 1, "args": {"nested": [{"a": 1},)j" + nl + ind + R"j({"b": {"c": [1, 2]}},)j" + nl + ind +
           R"j({"d": "}, {"}], "External id": 5}})j";
    } else {
      ev = pick(2) ? R"j({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 1, "ts": )j" + t +
                         R"j(, "dur": 100})j"
                   : R"j({"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": 0, "tid": 0, "ts": )j" +
                         t + R"j(, "dur": 1, "args": {"bad": [1, {"x": null}, true, false]}})j";
    }
    if (pick(40) == 0) ev = pick(2) ? "17" : R"j({"ph": 5, "name": []})j";  // malformed elements
    events.push_back(ev);
  }
  std::string body;
  for (size_t i = 0; i < events.size(); ++i) {
    body += ind;
    body += events[i];
    if (i + 1 < events.size()) body += ",";
    body += nl;
  }
  if (s.bare_array) return std::string("[") + nl + body + "]" + nl;
  out = std::string("{") + nl + ind + R"j("schemaVersion": 1,)j" + nl + ind + R"j("traceEvents": [)j" + nl + body + ind +
        "]," + nl + ind + R"j("deviceProperties": [{"id": 0, "name": "NVIDIA H100", "numSms": 132}],)j" + nl + ind +
        R"j("distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},)j" + nl + ind +
        R"j("cupti_version": 24, "schemaVersion": "2",)j" + nl + ind + R"j("baseTimeNanoseconds": 1700000000000000000)j" +
        nl + "}" + nl;
  return out;
}

TEST(ParallelParse, GeneratedTracesLoadToTheSameModelInAnyNumberOfParts) {
  int joined = 0, runs = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    DocSpec spec;
    spec.seed = seed;
    spec.pretty = seed % 3 != 0;
    spec.bare_array = seed % 5 == 0;
    const std::string doc = generate(spec);
    for (int parts : {2, 3, 5}) {
      const int n = expect_same(doc, parts, "seed " + std::to_string(seed));
      joined += n > 1;
      ++runs;
    }
  }
  // The cuts must mostly hold (else this test compares one parser with itself).
  EXPECT_GE(joined, runs * 3 / 4) << joined << " of " << runs << " loads were joined from parts";
}

TEST(ParallelParse, CutsInsideStringsAndNestedObjectsAreNeverUsed) {
  DocSpec spec;
  spec.events = 800;
  spec.trap_percent = 40;  // names and args full of "}, {" and "},\n  {"
  for (unsigned seed = 20; seed < 26; ++seed) {
    spec.seed = seed;
    spec.pretty = seed % 2 == 0;
    const std::string doc = generate(spec);
    for (int parts : {2, 4, 7}) expect_same(doc, parts, "tricky seed " + std::to_string(seed));
  }
}

TEST(ParallelParse, StringPidsInEveryPartGetTheIdsOneParserGives) {
  DocSpec spec;
  spec.seed = 31;
  spec.events = 3000;
  spec.string_pids = true;
  const std::string doc = generate(spec);
  EXPECT_GT(expect_same(doc, 4, "string pids"), 1);
}

TEST(ParallelParse, JoiningGivesUpWhereOnlyOrderDecides) {
  // More unknown categories than the tally keeps, more CPU pids than it keeps, and a numeric pid inside the
  // made-up ids' range with string pids in every part: the model is still one parser's.
  DocSpec cats;
  cats.seed = 41;
  cats.events = 4000;
  cats.unknown_cats = 90;
  expect_same(generate(cats), 3, "90 unknown categories");
  DocSpec pids;
  pids.seed = 42;
  pids.events = 6000;
  pids.cpu_pids = 400;
  expect_same(generate(pids), 3, "400 CPU pids");
  DocSpec neg;
  neg.seed = 43;
  neg.events = 3000;
  neg.huge_negative_pid = true;
  expect_same(generate(neg), 3, "pid -2^40");
}

TEST(ParallelParse, ABrokenTraceFailsWithTheSameErrorAtTheSameByte) {
  DocSpec spec;
  spec.seed = 51;
  spec.events = 2000;
  const std::string doc = generate(spec);
  int cases = 0;
  for (double at : {0.1, 0.3, 0.5, 0.62, 0.77, 0.9, 0.999}) {
    const size_t cut = static_cast<size_t>(static_cast<double>(doc.size()) * at);
    expect_same(doc.substr(0, cut), 3, "cut at " + std::to_string(cut));
    std::string planted = doc;
    planted[cut] = '#';  // a byte no JSON value has
    expect_same(planted, 3, "'#' at " + std::to_string(cut));
    std::string unclosed = doc;
    const size_t quote = unclosed.find('"', cut);
    if (quote != std::string::npos) unclosed.erase(quote, 1);  // a string left open: swallows a cut point
    expect_same(unclosed, 3, "unbalanced quote after " + std::to_string(cut));
    cases += 3;
  }
  expect_same(doc + " 1", 2, "data after the document");
  EXPECT_EQ(cases, 21);
}

TEST(ParallelParse, AFileIsReadInPartsAndAGzipInOne) {
  DocSpec spec;
  spec.seed = 61;
  spec.events = 3000;
  spec.trap_percent = 0;  // every cut holds
  const std::string doc = generate(spec);
  testing::TempFile plain(doc), gz(doc, ".json.gz", /*gzip=*/true);
  auto one = load_trace_bytes(doc, "doc.json", serial());
  auto file = load_trace(plain.path(), in_parts(3));
  auto zipped = load_trace(gz.path(), in_parts(3));
  ASSERT_TRUE(one.ok() && file.ok() && zipped.ok());
  EXPECT_EQ(file->meta.parsed_in_parts, 3);
  EXPECT_EQ(zipped->meta.parsed_in_parts, 1);  // a gzip stream cannot be re-read from a point
  EXPECT_EQ(model_text(*one), model_text(*file));
  EXPECT_EQ(model_text(*one), model_text(*zipped));
  // Under the size floor, or asked for one part: one parser.
  LoadOptions big_floor;
  big_floor.parallel_parse_min_bytes = doc.size() + 1;
  auto under = load_trace(plain.path(), big_floor);
  ASSERT_TRUE(under.ok());
  EXPECT_EQ(under->meta.parsed_in_parts, 1);
}

TEST(ParallelParse, EveryKinetoTraceOfTheCorpusLoadsToTheSameModelInParts) {
  const std::filesystem::path root = PT_TRACES_DIR;
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "no shared traces at " << root;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string p = entry.path().string();
    if (!entry.is_regular_file() || p.find("/_derived/") != std::string::npos) continue;
    const std::string name = entry.path().filename().string();
    if (name == "manifest.json") continue;
    if (name.ends_with(".json") || name.ends_with(".json.gz")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int compared = 0, joined = 0;
  for (const auto& f : files) {
    const std::string doc = testing::read_maybe_gzip(f);
    auto probe = load_trace_bytes(doc, f.string(), serial());
    if (!probe.ok() || probe->meta.format != "kineto_json") continue;  // expected output files, other formats
    const std::string rel = std::filesystem::relative(f, root).string();
    for (int parts : {2, 3}) joined += expect_same(doc, parts, rel) > 1;
    ++compared;
  }
  EXPECT_GE(compared, 25) << "Kineto traces found under " << root;
  EXPECT_GE(joined, compared) << "loads joined from parts, of " << 2 * compared;
}

}  // namespace
}  // namespace profile_train::trace
