// ReadAheadSource (io/byte_sources.h): the bytes, the end and an error arrive exactly as the inner source
// gives them, whatever the buffer and read sizes; a reader that stops early does not hang; a gzip trace big
// enough to be read ahead loads to the same model as one read in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>
#include <string>

#include "io/byte_sources.h"
#include "profile_train/trace/importer.h"
#include "test_util.h"

namespace profile_train::trace::detail {
namespace {

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// Hands out its data in reads of at most `step` bytes, then fails (when `fail`) instead of ending.
class StepSource final : public ByteSource {
 public:
  StepSource(std::string data, size_t step, bool fail) : data_(std::move(data)), step_(step), fail_(fail) {}
  StatusOr<size_t> read(char* buf, size_t n) override {
    if (pos_ == data_.size()) {
      if (fail_) return BadInput(name_ + ": corrupt gzip stream (planted)");
      return size_t{0};
    }
    const size_t k = std::min({n, step_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  const std::string& name() const override { return name_; }
  size_t position() const { return pos_; }

 private:
  std::string data_, name_ = "planted";
  size_t step_, pos_ = 0;
  bool fail_;
};

// Everything `src` gives in reads of `chunk` bytes, and the status that ended it.
std::pair<std::string, Status> drain(ByteSource& src, size_t chunk) {
  std::string out, buf(chunk, '\0');
  for (;;) {
    StatusOr<size_t> got = src.read(buf.data(), chunk);
    if (!got.ok()) return {out, got.status()};
    if (*got == 0) return {out, Status::Ok()};
    out.append(buf.data(), *got);
  }
}

TEST(ReadAhead, TheBytesAndTheEndAreTheInnerSourcesForAnyBufferAndReadSize) {
  const std::string data = random_bytes(200000, 7);
  for (size_t buffer : {size_t{4096}, size_t{65536}, size_t{1} << 20})
    for (size_t step : {size_t{1000}, size_t{4096}, size_t{300000}})
      for (size_t chunk : {size_t{1}, size_t{777}, size_t{8192}, size_t{1} << 20}) {
        if (chunk == 1 && buffer > 4096) continue;  // 200k single-byte reads once is enough
        StepSource inner(data, step, false);
        ReadAheadSource ahead(inner, nullptr, buffer, 3);
        auto [got, status] = drain(ahead, chunk);
        EXPECT_TRUE(status.ok()) << status.message();
        EXPECT_EQ(got, data) << "buffer " << buffer << " step " << step << " chunk " << chunk;
        StatusOr<size_t> again = ahead.read(nullptr, 0);  // after the end: still the end
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(*again, 0u);
      }
}

TEST(ReadAhead, AnErrorComesAfterEveryByteBeforeIt) {
  const std::string data = random_bytes(50000, 11);
  StepSource inner(data, 3000, true);
  ReadAheadSource ahead(inner, nullptr, 4096, 2);
  auto [got, status] = drain(ahead, 1000);
  EXPECT_EQ(got, data);
  EXPECT_EQ(status.code(), StatusCode::kBadInput);
  EXPECT_EQ(status.message(), "planted: corrupt gzip stream (planted)");
}

TEST(ReadAhead, AReaderThatStopsEarlyEndsTheThread) {
  const std::string data = random_bytes(1 << 20, 3);
  StepSource inner(data, 4096, false);
  {
    ReadAheadSource ahead(inner, nullptr, 8192, 2);
    char buf[100];
    ASSERT_TRUE(ahead.read(buf, sizeof buf).ok());
  }  // joins: the thread stops after at most the buffers it may fill ahead
  EXPECT_LE(inner.position(), size_t{3 * 8192});
}

TEST(ReadAhead, TheRawPositionIsThatOfTheBufferBeingRead) {
  const std::string data = random_bytes(40000, 5);
  StepSource inner(data, 40000, false);
  ReadAheadSource ahead(inner, [&inner] { return static_cast<uint64_t>(inner.position()); }, 10000, 2);
  char buf[10000];
  ASSERT_TRUE(ahead.read(buf, 5000).ok());
  EXPECT_EQ(ahead.raw_position(), 10000u);  // the first buffer's, whatever the thread has read since
  ASSERT_TRUE(ahead.read(buf, 5000).ok());
  ASSERT_TRUE(ahead.read(buf, 5000).ok());
  EXPECT_EQ(ahead.raw_position(), 20000u);
}

}  // namespace
}  // namespace profile_train::trace::detail

namespace profile_train::trace {
namespace {

using testing::model_text;

TEST(ReadAhead, ATraceReadAheadLoadsToTheSameModel) {
  const std::filesystem::path root = PT_TRACES_DIR;
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "no shared traces at " << root;
  int compared = 0;
  for (const char* rel : {"kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                          "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
                          "kineto_tb_plugin/gpu_metrics_test/gpu_metrics_input.json"}) {
    const std::filesystem::path file = root / rel;
    if (!std::filesystem::exists(file)) continue;
    LoadOptions in_place, ahead;
    in_place.read_ahead_min_bytes = UINT64_MAX;
    ahead.read_ahead_min_bytes = 0;
    auto a = load_trace(file, in_place);
    auto b = load_trace(file, ahead);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_GT(a->events.size(), 0u) << rel;
    EXPECT_EQ(model_text(*a), model_text(*b)) << rel;
    ++compared;
  }
  EXPECT_EQ(compared, 3) << "a trace this test reads is missing from the corpus";
}

TEST(ReadAhead, ATruncatedGzipFailsWithTheSameLineReadAheadOrNot) {
  const std::string doc = testing::kineto_doc(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2})");
  std::string gz = testing::gzip_bytes(doc);
  gz.resize(gz.size() - 12);  // cut inside the stream
  LoadOptions in_place, ahead;
  in_place.read_ahead_min_bytes = UINT64_MAX;
  ahead.read_ahead_min_bytes = 0;
  auto a = load_trace_bytes(gz, "cut.json.gz", in_place);
  auto b = load_trace_bytes(gz, "cut.json.gz", ahead);
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(a.status().code(), b.status().code());
  EXPECT_EQ(a.status().message(), b.status().message());
}

}  // namespace
}  // namespace profile_train::trace
