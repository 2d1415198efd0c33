// zlib vs ISA-L (igzip) streaming inflate of gzip files, as the importer reads them: 256 KiB compressed
// reads, 4 MiB output window, whole gzip members with CRC checks. Prints MB/s of decompressed output, best of
// N runs per library, so that the choice between the two rests on a measurement on this machine.
// Usage: pt_inflate_bench [-n RUNS] FILE.gz...   (built only when libisal-dev is installed)
#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr size_t kIn = size_t{256} << 10;
constexpr size_t kOut = size_t{4} << 20;

// Each returns the decompressed size, or 0 on error; input is read from memory in kIn slices.
uint64_t inflate_zlib(const std::string& gz, std::vector<unsigned char>& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return 0;
  uint64_t total = 0;
  size_t pos = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      const size_t k = std::min(kIn, gz.size() - pos);
      if (k == 0) break;
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + pos));
      zs.avail_in = static_cast<uInt>(k);
      pos += k;
    }
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    total += out.size() - zs.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END) break;
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? total : 0;
}

uint64_t inflate_isal(const std::string& gz, std::vector<unsigned char>& out) {
  inflate_state st;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;  // parses the gzip header and checks the CRC, as zlib does
  uint64_t total = 0;
  size_t pos = 0;
  while (st.block_state != ISAL_BLOCK_FINISH) {
    if (st.avail_in == 0) {
      const size_t k = std::min(kIn, gz.size() - pos);
      if (k == 0) break;
      st.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(gz.data() + pos));
      st.avail_in = static_cast<uint32_t>(k);
      pos += k;
    }
    st.next_out = out.data();
    st.avail_out = static_cast<uint32_t>(out.size());
    const int rc = isal_inflate(&st);
    total += out.size() - st.avail_out;
    if (rc != ISAL_DECOMP_OK) return 0;
  }
  return st.block_state == ISAL_BLOCK_FINISH ? total : 0;
}

template <typename F>
double best_seconds(int runs, F&& f) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  int rc = 0;
  std::vector<unsigned char> out(kOut);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    std::ifstream f(argv[i], std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string gz = ss.str();
    const uint64_t nz = inflate_zlib(gz, out), ni = inflate_isal(gz, out);
    if (nz == 0 || nz != ni) {
      std::printf("%s: zlib %llu bytes, isa-l %llu bytes: not one valid gzip member\n", argv[i],
                  static_cast<unsigned long long>(nz), static_cast<unsigned long long>(ni));
      rc = 2;
      continue;
    }
    const double tz = best_seconds(runs, [&] { (void)inflate_zlib(gz, out); });
    const double ti = best_seconds(runs, [&] { (void)inflate_isal(gz, out); });
    std::printf("%s: %.1f MB -> %.1f MB; zlib %.3f s = %.0f MB/s; isa-l %.3f s = %.0f MB/s; isa-l %.2fx zlib "
                "(best of %d)\n",
                argv[i], gz.size() / 1e6, nz / 1e6, tz, nz / 1e6 / tz, ti, ni / 1e6 / ti, tz / ti, runs);
  }
  return rc;
}
