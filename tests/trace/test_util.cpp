#include "test_util.h"

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace profile_train::trace::testing {

std::string gzip_bytes(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  return out;
}

std::string read_maybe_gzip(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // gzread passes plain files through
  if (f == nullptr) throw std::runtime_error("gzopen " + path.string());
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

TempFile::TempFile(std::string_view contents, const std::string& suffix, bool gzip) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() / ("pt_trace_tests_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  path_ = dir / ("t" + std::to_string(counter++) + suffix + (gzip ? ".gz" : ""));
  std::ofstream f(path_, std::ios::binary);
  if (gzip) {
    const std::string z = gzip_bytes(contents);
    f.write(z.data(), static_cast<std::streamsize>(z.size()));
  } else {
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
}

TempFile::~TempFile() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

StatusOr<Trace> load_json(std::string_view json, bool gzip, const LoadOptions& opt) {
  TempFile f(json, ".json", gzip);
  return load_trace(f.path(), opt);
}

std::string kineto_doc(std::string_view events, std::string_view extra_top_level) {
  std::ostringstream s;
  s << "{\n  \"schemaVersion\": 1,\n";
  if (!extra_top_level.empty()) s << extra_top_level << ",\n";
  s << "  \"traceEvents\": [\n" << events << "\n  ]\n}\n";
  return s.str();
}

}  // namespace profile_train::trace::testing
