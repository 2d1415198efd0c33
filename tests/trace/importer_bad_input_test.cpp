// Bad input: one clear error naming the file, the right status code, no crash, and fast.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "test_util.h"

namespace profile_train::trace {
namespace {

using testing::TempFile;

// Loads `contents` from a temp file and checks the error: code, message starts with the path, contains `what`.
void expect_error(std::string_view contents, StatusCode code, const std::string& what, bool gzip = false,
                  const LoadOptions& opt = {}) {
  TempFile f(contents, ".json", gzip);
  auto t = load_trace(f.path(), opt);
  ASSERT_FALSE(t.ok()) << "loaded without error";
  EXPECT_EQ(t.status().code(), code) << t.status().message();
  EXPECT_EQ(t.status().message().rfind(f.path().string() + ": ", 0), 0u) << t.status().message();
  EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status().message();
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos) << "one line";
  EXPECT_EQ(t.status().exit_code(), kExitBadInput);
}

const char* kValid = R"J({"schemaVersion": 1, "traceEvents": [
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":2},
  {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":2,"dur":1,"args":{"device":0,"stream":7}}
]})J";

TEST(ImporterBadInput, ValidControl) {
  for (bool gz : {false, true}) {
    TempFile f(kValid, ".json", gz);
    auto t = load_trace(f.path());
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->events.size(), 2u);
    ASSERT_EQ(t->meta.source_files.size(), 1u);
    EXPECT_EQ(t->meta.source_files[0], f.path().string());
  }
}

TEST(ImporterBadInput, MissingFile) {
  auto t = load_trace("/nonexistent/dir/trace.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.status().message(), "/nonexistent/dir/trace.json: no such file");
}

TEST(ImporterBadInput, Directory) {
  auto t = load_trace(std::filesystem::temp_directory_path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kBadInput);
  EXPECT_NE(t.status().message().find("is a directory"), std::string::npos);
}

TEST(ImporterBadInput, EmptyFile) {
  expect_error("", StatusCode::kBadInput, "empty file");
  expect_error("", StatusCode::kBadInput, "empty file", /*gzip=*/true);
  expect_error(" \n\t \n", StatusCode::kBadInput, "empty file");
}

TEST(ImporterBadInput, NotJson) {
  expect_error("hello, this is not a trace\n", StatusCode::kBadInput, "not JSON");
  expect_error("PK\x03\x04 zip archive", StatusCode::kBadInput, "not JSON");
  expect_error("hello", StatusCode::kBadInput, "not JSON", /*gzip=*/true);
}

TEST(ImporterBadInput, TruncatedGzip) {
  const std::string z = testing::gzip_bytes(kValid);
  for (size_t keep : {size_t{3}, size_t{10}, z.size() / 2, z.size() - 4}) {
    SCOPED_TRACE(keep);
    expect_error(z.substr(0, keep), StatusCode::kBadInput, "truncated gzip stream");
  }
}

TEST(ImporterBadInput, MultiMemberGzipIsOneStream) {
  const std::string v = kValid;
  const std::string z = testing::gzip_bytes(v.substr(0, 40)) + testing::gzip_bytes(v.substr(40));
  TempFile f(z, ".json.gz");
  auto t = load_trace(f.path());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->events.size(), 2u);
}

TEST(ImporterBadInput, CorruptGzip) {
  std::string z = testing::gzip_bytes(std::string(kValid) + std::string(4000, ' '));
  for (size_t i = 12; i < z.size() - 8; ++i) z[i] = static_cast<char>(z[i] ^ 0x5a);
  expect_error(z, StatusCode::kBadInput, "gzip stream");
}

TEST(ImporterBadInput, TruncatedJson) {
  const std::string v = kValid;
  for (size_t keep : {size_t{1}, size_t{20}, v.size() / 2, v.size() - 2}) {
    SCOPED_TRACE(keep);
    expect_error(v.substr(0, keep), StatusCode::kBadInput, "truncated JSON");
    expect_error(v.substr(0, keep), StatusCode::kBadInput, "truncated JSON", /*gzip=*/true);
  }
}

TEST(ImporterBadInput, NoTraceEvents) {
  expect_error(R"J({"schemaVersion": 1, "deviceProperties": []})J", StatusCode::kBadInput, "no 'traceEvents' array");
  expect_error("{}", StatusCode::kBadInput, "no 'traceEvents' array");
  expect_error(R"J({"traceEvents": {"a": 1}})J", StatusCode::kBadInput, "'traceEvents' is not an array");
  expect_error(R"J({"traceEvents": 5})J", StatusCode::kBadInput, "'traceEvents' is not an array");
}

TEST(ImporterBadInput, SyntaxErrors) {
  expect_error(R"J({"traceEvents": [{"ph" "X"}]})J", StatusCode::kBadInput, "expected ':'");
  expect_error(R"J({"traceEvents": [{"ph":"X",}]})J", StatusCode::kBadInput, "expected a string");
  expect_error(R"J({"traceEvents": [{"ph":"X","args":{"a":tru}}]})J", StatusCode::kBadInput, "invalid literal");
  expect_error(R"J({"traceEvents": [{"ph":"X\q"}]})J", StatusCode::kBadInput, "invalid escape");
  expect_error(R"J({"traceEvents": []} trailing)J", StatusCode::kBadInput, "unexpected data after");
  expect_error(std::string(R"J({"traceEvents": []})J") + std::string(1, '\0') + "x", StatusCode::kBadInput,
               "unexpected data after");
  expect_error(R"J({"traceEvents": [] "x": 1})J", StatusCode::kBadInput, "expected ',' or '}'");
}

TEST(ImporterBadInput, WrongFieldTypesAreNotFatal) {
  TempFile f(R"J({"traceEvents": [{"ph":"X","cat":5,"name":"a","pid":1,"tid":1,"ts":1,"dur":1},
                                 {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":1,"dur":1}],
                 "deviceProperties": "oops", "distributedInfo": [1], "baseTimeNanoseconds": "x"})J");
  auto t = load_trace(f.path());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->quality.malformed_events, 1);
  EXPECT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->meta.base_time_ns, 0);
}

TEST(ImporterBadInput, DeepNesting) {
  // 100k '[' at the top level and inside an event: BadInput, no stack overflow.
  expect_error(std::string(100000, '['), StatusCode::kBadInput, "nesting deeper than 64");
  expect_error(R"J({"traceEvents": [{"ph":"X","args":{"a":)J" + std::string(100000, '[') + "}]}",
               StatusCode::kBadInput, "nesting deeper than 64");
  std::string objs;
  for (int i = 0; i < 50000; ++i) objs += "{\"a\":";
  expect_error(R"J({"traceEvents": [)J" + objs, StatusCode::kBadInput, "nesting deeper than 64", /*gzip=*/true);
  expect_error(R"J({"x": )J" + objs, StatusCode::kBadInput, "nesting deeper than 64");
  // A configurable limit.
  LoadOptions opt;
  opt.max_json_depth = 5;
  expect_error(R"J({"traceEvents": [{"args": {"a": [[1]]}}]})J", StatusCode::kBadInput, "nesting deeper than 5",
               false, opt);
}

TEST(ImporterBadInput, SizeLimit) {
  LoadOptions opt;
  opt.max_uncompressed_bytes = 64;
  expect_error(kValid, StatusCode::kResourceExhausted, "limit", false, opt);
  expect_error(kValid, StatusCode::kResourceExhausted, "limit", true, opt);
}

// Writes `n` pseudo-random bytes (fixed seed) after `prefix` to a temp file.
std::filesystem::path write_garbage(const std::string& prefix, size_t n, const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream f(p, std::ios::binary);
  f.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  std::mt19937_64 rng(12345);
  std::vector<uint64_t> block(1 << 17);
  for (size_t done = 0; done < n;) {
    for (auto& x : block) x = rng();
    const size_t k = std::min(n - done, block.size() * 8);
    f.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(k));
    done += k;
  }
  return p;
}

TEST(ImporterBadInput, LargeGarbageFailsFast) {
  const size_t n = size_t{200} << 20;  // 200 MiB
  struct Case {
    std::string prefix, what;
  };
  // Random bytes; random bytes after a '{' (looks like JSON); after a gzip magic (looks like gzip).
  const Case cases[] = {{"\x01", "not JSON"}, {"{\"traceEvents\": [", "invalid JSON"}, {"\x1f\x8b", "gzip"}};
  int i = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto p = write_garbage(c.prefix, n, "pt_trace_garbage_" + std::to_string(::getpid()) + "_" +
                                                  std::to_string(i++) + ".json");
    const auto t0 = std::chrono::steady_clock::now();
    auto t = load_trace(p);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::filesystem::remove(p);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kBadInput) << t.status().message();
    EXPECT_EQ(t.status().message().rfind(p.string() + ": ", 0), 0u) << t.status().message();
    EXPECT_NE(t.status().message().find(c.what), std::string::npos) << t.status().message();
    EXPECT_LT(s, 2.0) << "garbage should be rejected without reading it all";
  }
}

TEST(ImporterBadInput, ProgressReportsRawPositionAndSize) {
  std::string big = R"J({"traceEvents": [)J";
  for (int i = 0; i < 20000; ++i) {
    if (i) big += ",";
    big += R"J({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":)J" + std::to_string(i) + R"J(,"dur":1})J";
  }
  big += "]}";
  TempFile f(big);
  uint64_t calls = 0, last_pos = 0, total = 0;
  LoadOptions opt;
  opt.progress = [&](uint64_t pos, uint64_t tot) {
    ++calls;
    last_pos = pos;
    total = tot;
  };
  auto t = load_trace(f.path(), opt);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->events.size(), 20000u);
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(total, big.size());
  EXPECT_LE(last_pos, big.size());
  EXPECT_GT(last_pos, 0u);
}

TEST(ImporterBadInput, LoadTraceBytes) {
  auto ok = load_trace_bytes(testing::gzip_bytes(kValid), "mem.json.gz");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->events.size(), 2u);
  auto bad = load_trace_bytes("{", "mem.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("mem.json: ", 0), 0u);
}

}  // namespace
}  // namespace profile_train::trace
