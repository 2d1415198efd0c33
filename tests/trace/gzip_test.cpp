// The gzip decoders behind load_trace: ISA-L (when built with it) gives the bytes zlib gives, whatever the
// read sizes and members; a damaged file gives zlib's words whichever decoder read it first.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "io/byte_sources.h"
#include "io/inflate.h"
#include "test_util.h"

namespace profile_train::trace::detail {
namespace {

using testing::TempFile;

// Reads the whole stream through GzipSource with reads of random sizes; returns the bytes or "ERROR msg".
std::string decode(const std::string& gz, GzipDecoder decoder, uint64_t seed) {
  MemorySource src(gz, "mem");
  GzipSource g(src, decoder);
  std::mt19937_64 rng(seed);
  std::string out;
  std::string buf(size_t{1} << 20, '\0');
  for (;;) {
    const size_t n = 1 + rng() % (rng() % 4 == 0 ? buf.size() : 300);
    auto got = g.read(buf.data(), n);
    if (!got.ok()) return "ERROR " + got.status().message();
    if (*got == 0) return out;
    out.append(buf.data(), *got);
  }
}

std::string text(size_t n, uint64_t seed) {  // compressible, trace-like, with long matches
  std::mt19937_64 rng(seed);
  std::string s;
  while (s.size() < n) s += "{\"ph\": \"X\", \"name\": \"aten::op" + std::to_string(rng() % 50) + "\", \"ts\": " +
                            std::to_string(rng() % 100000) + "},\n";
  return s;
}

TEST(Gzip, IsalIsTheDefaultWhenBuiltWithIt) {
  EXPECT_EQ(GzipSource::default_decoder(), isal_supported() ? GzipDecoder::kIsal : GzipDecoder::kZlib);
  MemorySource src("", "mem");
  EXPECT_EQ(GzipSource(src, GzipDecoder::kIsal).decoder(), isal_supported() ? GzipDecoder::kIsal : GzipDecoder::kZlib);
}

TEST(Gzip, BothDecodersGiveTheSameBytes) {
  if (!isal_supported()) GTEST_SKIP() << "built without ISA-L (PT_WITH_ISAL): zlib only";
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    const std::string a = text(1000 + seed * 37000, seed), b = text(seed * 50, seed + 100);
    std::string gz = testing::gzip_bytes(a);
    if (seed % 3 == 0) gz += testing::gzip_bytes(b);          // two members
    if (seed % 4 == 0) gz += "trailing bytes, not gzip";      // ignored after the trailer
    const std::string want = decode(gz, GzipDecoder::kZlib, seed);
    ASSERT_EQ(want.substr(0, 6) == "ERROR ", false) << want;
    EXPECT_EQ(decode(gz, GzipDecoder::kIsal, seed), want);
    EXPECT_EQ(decode(gz, GzipDecoder::kIsal, seed + 1000), want);  // other read sizes
    // Truncated anywhere: both say so.
    const std::string cut = gz.substr(0, gz.size() / 2 + seed);
    EXPECT_EQ(decode(cut, GzipDecoder::kIsal, seed), "ERROR mem: truncated gzip stream");
    EXPECT_EQ(decode(cut, GzipDecoder::kZlib, seed), "ERROR mem: truncated gzip stream");
  }
}

// Damaged files: load_trace answers in zlib's words (ISA-L's differ: it says "incorrect data check" for a
// wrong length too, and detects bad distances in other words).
TEST(Gzip, DamagedFilesGiveZlibsWords) {
  const std::string json = "{\"traceEvents\": [" + std::string(20000, ' ') + "]}";
  const std::string gz = testing::gzip_bytes(json);
  struct Case {
    size_t from_end;  // byte flipped, counted from the end
    const char* want;
  };
  for (const Case& c : {Case{1, "corrupt gzip stream (incorrect length check)"},
                        Case{6, "corrupt gzip stream (incorrect data check)"}}) {
    std::string bad = gz;
    bad[bad.size() - c.from_end] = static_cast<char>(bad[bad.size() - c.from_end] ^ 0x01);
    TempFile f(bad, ".json.gz");
    auto t = load_trace(f.path());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message(), f.path().string() + ": " + c.want);
    auto m = load_trace_bytes(bad, "mem.json.gz");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().message(), std::string("mem.json.gz: ") + c.want);
    LoadOptions limited;  // under a load-time limit the second load runs within what is left of it
    limited.max_load_seconds = 600;
    auto l = load_trace(f.path(), limited);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().message(), f.path().string() + ": " + c.want);
  }
}

}  // namespace
}  // namespace profile_train::trace::detail
