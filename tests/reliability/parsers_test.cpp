// Hostile input to the parsers we own, end to end through the built binary (issue 16): rule files and
// expressions, gzip bombs, damaged native captures, extreme native values. Each case must end with the
// documented exit code and one clear line on stderr (never a crash, never a hang).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "profile_train/format/native_format.h"

namespace reliability {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;  // exit code of the shell running the binary (128 + N when signal N killed it)
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Error lines ("profile-train...: ...") in `s`; progress lines of long loads are not errors.
inline int count_error_lines(const std::string& s) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("profile-train", 0) == 0) ++n;
  return n;
}

class BinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("pt_rel_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `profile-train ARGS` (ARGS already quoted for sh); `prefix` goes before it (e.g. a ulimit).
  Result run(const std::string& args, const std::string& prefix = "") {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = prefix + " NO_COLOR=1 '" + std::string(PT_BINARY_DIR) + "/profile-train' " + args +
                            " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    Result r;
    if (WIFEXITED(status)) r.rc = WEXITSTATUS(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  fs::path dir_;
};

}  // namespace reliability

namespace {

namespace fs = std::filesystem;
using reliability::Result;

class Parsers : public reliability::BinaryTest {};

// A valid rule file whose `when` is `when` (everything else as in a real rule).
std::string rule_with_when(const std::string& when) {
  nlohmann::json r = {{"format_version", "1.0"},
                      {"id", "hostile"},
                      {"title", "Hostile"},
                      {"tier", 1},
                      {"when", when},
                      {"evidence", {"x"}},
                      {"gain", {{"removable_share", "0"}, {"rationale", "none"}}},
                      {"fix", {{"python", "pass"}, {"cpp", "//"}}},
                      {"caveats", {"none"}},
                      {"references", {"https://example.com"}}};
  return r.dump(2);
}

// 1-based line of the first occurrence of `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  return at == std::string::npos ? -1 : 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}
const int kWhenLine = line_of(rule_with_when("x"), "\"when\"");

// One line on stderr naming FILE:LINE and saying `what`.
void expect_rule_error(const Result& r, const fs::path& file, int line, const std::string& what) {
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(reliability::count_error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file.string() + ":" + std::to_string(line) + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

TEST_F(Parsers, DeeplyNestedParenthesesAreABadRuleNotACrash) {
  const std::string when = std::string(5000, '(') + "true" + std::string(5000, ')');
  const auto file = write("rules/deep.json", rule_with_when(when));
  const auto r = run("rules check '" + (dir_ / "rules").string() + "'");
  expect_rule_error(r, file, kWhenLine, "(limit");
  // Short enough for the token limit, too deep for the nesting limit.
  const auto shallow = write("b/deep.json", rule_with_when(std::string(100, '(') + "true" + std::string(100, ')')));
  expect_rule_error(run("rules check '" + (dir_ / "b").string() + "'"), shallow, kWhenLine,
                    "nests deeper than 64 levels");
}

TEST_F(Parsers, LongChainsOfNotAndUnaryMinusAreBadRules) {
  std::string nots;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  const auto a = write("a/nots.json", rule_with_when(nots + "true"));
  expect_rule_error(run("rules check '" + (dir_ / "a").string() + "'"), a, kWhenLine, "(limit");
  const auto b = write("b/neg.json", rule_with_when(std::string(100000, '-') + "1 > 0"));
  expect_rule_error(run("rules check '" + (dir_ / "b").string() + "'"), b, kWhenLine, "(limit");
  const auto c = write("c/nots.json", rule_with_when(nots.substr(0, 4 * 200) + "true"));
  expect_rule_error(run("rules check '" + (dir_ / "c").string() + "'"), c, kWhenLine, "nests deeper than 64 levels");
  const auto d = write("d/neg.json", rule_with_when(std::string(200, '-') + "1 > 0"));
  expect_rule_error(run("rules check '" + (dir_ / "d").string() + "'"), d, kWhenLine, "nests deeper than 64 levels");
}

TEST_F(Parsers, AFlatHugeSumIsABadRuleAndAnalyzeRefusesItBeforeLoading) {
  std::string sum = "0";
  for (int i = 0; i < 500000; ++i) sum += " + 1";
  const auto file = write("rules/sum.json", rule_with_when(sum + " > 0"));
  expect_rule_error(run("rules check '" + (dir_ / "rules").string() + "'"), file, kWhenLine, "tokens");
  // analyze --rules reports the same error (exit 2, one line) instead of a crash.
  const auto trace = write("t.json", R"({"traceEvents": []})");
  expect_rule_error(run("analyze '" + trace.string() + "' --rules '" + (dir_ / "rules").string() + "' --out '" +
                        (dir_ / "out").string() + "'"),
                    file, kWhenLine, "tokens");
}

TEST_F(Parsers, ASumJustUnderTheLimitStillLoads) {
  std::string sum = "0";
  for (int i = 0; i < 1000; ++i) sum += " + 1";
  write("rules/ok.json", rule_with_when(sum + " > 0"));
  const auto r = run("rules check '" + (dir_ / "rules").string() + "'");
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST_F(Parsers, DeepJsonNestingInARuleFileIsRefusedQuickly) {
  std::string text = "{\"x-deep\": ";
  for (int i = 0; i < 30000; ++i) text += "[";
  for (int i = 0; i < 30000; ++i) text += "]";
  text += "}";
  const auto file = write("rules/deep.json", text);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run("rules check '" + (dir_ / "rules").string() + "'");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_rule_error(r, file, 1, "nesting deeper than 64 levels");
  EXPECT_LT(s, 5.0) << "a 60 KB rule file took " << s << " s";
}

TEST_F(Parsers, ANumberTooLargeForJsonIsABadRuleNotAnInternalError) {
  // Found by bench/fuzz (rules): nlohmann throws out_of_range, not parse_error, for 1e999.
  std::string text = rule_with_when("true");
  text.replace(text.find("\"tier\": 1"), 9, "\"tier\": 1e999");
  const auto file = write("rules/big.json", text);
  expect_rule_error(run("rules check '" + (dir_ / "rules").string() + "'"), file, line_of(text, "1e999"),
                    "number overflow");
}

// ---- gzip bombs -----------------------------------------------------------------------------------------

// One gzip member holding `text`.
std::string gzip_member(const std::string& text) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&zs, text.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A valid trace whose gaps hold `mib_of_spaces` MiB of whitespace, written as concatenated gzip members
// (one 64 MiB member of spaces compresses to ~64 KB, so a GiB-sized bomb costs the test milliseconds).
std::string whitespace_bomb(int mib_of_spaces, const std::string& head, const std::string& tail) {
  const std::string spaces = gzip_member(std::string(size_t{64} << 20, ' '));
  std::string out = gzip_member(head);
  for (int i = 0; i < mib_of_spaces / 64; ++i) out += spaces;
  return out + gzip_member(tail);
}

const std::string kHead = R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1,
  "tid": 1, "ts": 1000, "dur": 100},)";
const std::string kTail = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1010, "dur": 50}]})";

// Peak RSS in MiB of the children waited for so far (the binary runs as a child of the shell).
double children_peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

class GzipBombs : public reliability::BinaryTest {};

TEST_F(GzipBombs, WhitespaceBetweenEventsCostsNoMemory) {
  // 1 GiB of spaces between two events: before the fix the reader buffered all of it (RSS ~2x the
  // inflated size); now the gap is consumed as it streams.
  const auto file = write("ws.json.gz", whitespace_bomb(1024, kHead, kTail));
  const auto r = run("analyze '" + file.string() + "' --format json --out '" + (dir_ / "out").string() + "'");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(children_peak_rss_mib(), 400.0);
  const auto report = nlohmann::json::parse(reliability::slurp(dir_ / "out" / "report.json"));
  EXPECT_EQ(report["data_quality"]["events_imported"].get<int64_t>(), 2);
}

TEST_F(GzipBombs, TheInflatedSizeIsBoundedByAnOption) {
  const auto file = write("big.json.gz", whitespace_bomb(1024, kHead, kTail));
  const auto r = run("analyze '" + file.string() + "' --max-input-size 256M --out '" + (dir_ / "out").string() + "'");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(reliability::count_error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file.string() + ": more than 268435456 bytes after decompression"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-input-size"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "report.json"));
}

TEST_F(GzipBombs, TheLoadTimeIsBoundedByAnOption) {
  // 8 GiB of whitespace takes several seconds to inflate on any machine; the limit stops it far earlier.
  const auto file = write("slow.json.gz", whitespace_bomb(8192, kHead, kTail));
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run("analyze '" + file.string() + "' --max-load-seconds 0.3 --out '" + (dir_ / "out").string() + "'");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(reliability::count_error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file.string() + ": still loading after 0.3 s"), std::string::npos) << r.err;
  EXPECT_LT(s, 5.0);
}

TEST_F(GzipBombs, WhitespaceInsideOneEventIsBoundedToo) {
  // 320 MiB of spaces inside one event object: one JSON value larger than the 256 MiB a value may take.
  const auto file = write("inner.json.gz", whitespace_bomb(320, kHead + R"({"ph": "X", "name": "a")", R"(}]})"));
  const auto r = run("analyze '" + file.string() + "' --out '" + (dir_ / "out").string() + "'");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(reliability::count_error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("larger than 256 MiB (limit)"), std::string::npos) << r.err;
  EXPECT_LT(children_peak_rss_mib(), 1100.0);
}

TEST_F(GzipBombs, ABadLimitValueIsBadUsage) {
  const auto file = write("t.json", kHead + kTail);
  for (const char* bad : {"--max-input-size 12Q", "--max-input-size 0", "--max-load-seconds -1"}) {
    const auto r = run("analyze '" + file.string() + "' " + bad + " --out '" + (dir_ / "out").string() + "'");
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;
    EXPECT_EQ(reliability::count_error_lines(r.err), 1) << bad << ": " << r.err;
  }
}

// ---- native captures ------------------------------------------------------------------------------------

namespace fmt = profile_train::agent::format;

// Builds a native capture: header, META, a string table, `chunks` EVENTS chunks of `per_chunk` closed
// ranges each (10 us apart), then a final STATUS that counts them as written. `chunk_at` gets each chunk's
// offset, for tests that damage one.
class NativeFile {
 public:
  NativeFile(int chunks, int per_chunk) {
    fmt::FileHeader h{};
    std::memcpy(h.magic, fmt::kMagic, sizeof h.magic);
    h.major = fmt::kMajor;
    h.minor = fmt::kMinor;
    h.header_bytes = sizeof h;
    h.pid = 4242;
    bytes_.append(reinterpret_cast<const char*>(&h), sizeof h);
    chunk(fmt::ChunkType::kMeta, R"({"pid": 4242, "process_name": "train", "flush_interval_ms": 50})");
    std::string strings;
    append_string(strings, 1, "ProfilerStep#1");
    append_string(strings, 2, "forward");
    chunk(fmt::ChunkType::kStrings, strings);
    int64_t t = 1'000'000;
    for (int c = 0; c < chunks; ++c) {
      std::string recs;
      for (int i = 0; i < per_chunk; ++i, t += 10'000) recs += range(2, t, t + 5'000);
      chunk(fmt::ChunkType::kEvents, recs);
    }
    written_ = int64_t{chunks} * per_chunk;
  }
  static std::string range(uint32_t name, int64_t start, int64_t end) {
    fmt::Record r{};
    r.kind = static_cast<uint8_t>(fmt::RecordKind::kRange);
    r.name = name;
    r.start_ns = start;
    r.end_ns = end;
    r.tid = 7;
    return std::string(reinterpret_cast<const char*>(&r), sizeof r);
  }
  void events(const std::string& recs) {
    chunk(fmt::ChunkType::kEvents, recs);
    written_ += static_cast<int64_t>(recs.size() / sizeof(fmt::Record));
  }
  std::string finish(bool with_status = true) {
    if (with_status)
      chunk(fmt::ChunkType::kStatus, nlohmann::json{{"written", written_}, {"dropped", 0}, {"complete", true}}.dump());
    return bytes_;
  }
  // Offset of the i-th chunk (0 = META).
  size_t chunk_at(size_t i) const { return offsets_.at(i); }

 private:
  static void append_string(std::string& out, uint32_t id, const std::string& s) {
    const uint32_t hdr[2] = {id, static_cast<uint32_t>(s.size())};
    out.append(reinterpret_cast<const char*>(hdr), sizeof hdr);
    out += s;
    out.append((4 - s.size() % 4) % 4, '\0');
  }
  void chunk(fmt::ChunkType type, const std::string& payload) {
    offsets_.push_back(bytes_.size());
    fmt::ChunkHeader ch{};
    ch.magic = fmt::kChunkMagic;
    ch.type = static_cast<uint16_t>(type);
    ch.payload_bytes = static_cast<uint32_t>(payload.size());
    ch.checksum = fmt::fnv1a32(payload.data(), payload.size());
    bytes_.append(reinterpret_cast<const char*>(&ch), sizeof ch);
    bytes_ += payload;
    bytes_.append(fmt::pad8(payload.size()) - payload.size(), '\0');
  }
  std::string bytes_;
  std::vector<size_t> offsets_;
  int64_t written_ = 0;
};

class NativeCaptures : public reliability::BinaryTest {
 protected:
  // analyze FILE --format json; returns the report (null when none was written).
  nlohmann::json analyze(const fs::path& file, Result* out = nullptr) {
    const fs::path dir = dir_ / ("out-" + file.stem().string());
    const Result r = run("analyze '" + file.string() + "' --format json --out '" + dir.string() + "'");
    if (out) *out = r;
    EXPECT_EQ(r.rc, 0) << r.err;
    if (!fs::exists(dir / "report.json")) return nullptr;
    return nlohmann::json::parse(reliability::slurp(dir / "report.json"));
  }
  static std::string notes(const nlohmann::json& report) { return report["data_quality"]["notes"].dump(); }
};

TEST_F(NativeCaptures, AFlippedBitInAnEarlyChunkCostsThatChunkOnly) {
  NativeFile nf(/*chunks=*/6, /*per_chunk=*/50);
  std::string bytes = nf.finish();
  // Chunk 3 = the second EVENTS chunk: flip one bit in its payload.
  bytes[nf.chunk_at(3) + sizeof(fmt::ChunkHeader) + 100] ^= 0x10;
  const auto report = analyze(write("flip.ptrace", bytes));
  ASSERT_FALSE(report.is_null());
  const auto& dq = report["data_quality"];
  EXPECT_EQ(dq["events_imported"].get<int64_t>(), 250) << dq.dump();  // 5 of 6 chunks read
  EXPECT_EQ(dq["dropped_records"].get<int64_t>(), 50) << dq.dump();
  EXPECT_NE(notes(report).find("1 damaged region"), std::string::npos) << notes(report);
  EXPECT_NE(notes(report).find("50 records lost (counted"), std::string::npos) << notes(report);
}

TEST_F(NativeCaptures, ADamagedChunkMarkerIsSkippedToTheNextMarker) {
  NativeFile nf(6, 50);
  std::string bytes = nf.finish();
  bytes[nf.chunk_at(2)] ^= 0x01;  // the first EVENTS chunk's marker
  bytes[nf.chunk_at(4) + 9] ^= 0x40;  // the third one's length field
  const auto report = analyze(write("marker.ptrace", bytes));
  ASSERT_FALSE(report.is_null());
  const auto& dq = report["data_quality"];
  EXPECT_EQ(dq["events_imported"].get<int64_t>(), 200) << dq.dump();
  EXPECT_EQ(dq["dropped_records"].get<int64_t>(), 100) << dq.dump();
  EXPECT_NE(notes(report).find("2 damaged region"), std::string::npos) << notes(report);
}

TEST_F(NativeCaptures, DamageAfterTheLastStatusIsEstimatedFromTheBytes) {
  NativeFile nf(2, 50);
  nf.finish();  // adds a status covering the first 100 records
  std::string recs;
  for (int i = 0; i < 30; ++i) recs += NativeFile::range(2, 9'000'000 + i * 10'000, 9'005'000 + i * 10'000);
  nf.events(recs);
  nf.events(recs);
  std::string bytes = nf.finish(/*with_status=*/false);
  bytes[nf.chunk_at(5)] ^= 0x01;  // marker of the first chunk after the status: its header is not trusted
  const auto report = analyze(write("late.ptrace", bytes));
  ASSERT_FALSE(report.is_null());
  const auto& dq = report["data_quality"];
  EXPECT_EQ(dq["events_imported"].get<int64_t>(), 130) << dq.dump();
  // 30 records of 64 bytes + the 16-byte chunk header: the byte estimate is an upper bound, 30 here.
  EXPECT_EQ(dq["dropped_records"].get<int64_t>(), 30) << dq.dump();
  EXPECT_NE(notes(report).find("at most (estimated"), std::string::npos) << notes(report);
}

TEST_F(NativeCaptures, ATruncatedLastChunkIsCountedFromItsHeader) {
  NativeFile nf(3, 40);
  std::string bytes = nf.finish(/*with_status=*/false);
  bytes.resize(nf.chunk_at(4) + sizeof(fmt::ChunkHeader) + 640);  // 10 of the last chunk's 40 records
  const auto report = analyze(write("cut.ptrace", bytes));
  ASSERT_FALSE(report.is_null());
  const auto& dq = report["data_quality"];
  EXPECT_EQ(dq["events_imported"].get<int64_t>(), 80) << dq.dump();
  EXPECT_EQ(dq["dropped_records"].get<int64_t>(), 40) << dq.dump();
  EXPECT_NE(notes(report).find("truncated chunk"), std::string::npos) << notes(report);
}

TEST_F(NativeCaptures, ExtremeTimestampsAreCountedAsMalformedNotOverflowed) {
  NativeFile nf(1, 20);
  std::string recs = NativeFile::range(2, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  recs += NativeFile::range(2, -5, 10);
  nf.events(recs);
  const auto report = analyze(write("extreme.ptrace", nf.finish()));
  ASSERT_FALSE(report.is_null());
  const auto& dq = report["data_quality"];
  EXPECT_EQ(dq["malformed_events"].get<int64_t>(), 2) << dq.dump();
  EXPECT_EQ(dq["events_imported"].get<int64_t>(), 20) << dq.dump();
  EXPECT_NE(notes(report).find("negative timestamps"), std::string::npos) << notes(report);
}

}  // namespace
