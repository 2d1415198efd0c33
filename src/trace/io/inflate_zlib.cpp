// The zlib gzip decoder (see inflate.h).
#include <zlib.h>

#include <algorithm>

#include "io/inflate.h"

namespace profile_train::trace::detail {
namespace {

class ZlibInflater final : public Inflater {
 public:
  // 15 + 32: a gzip or zlib header (auto-detected), 32 KiB window.
  ZlibInflater() { ok_ = inflateInit2(&zs_, 15 + 32) == Z_OK; }
  ~ZlibInflater() override {
    if (ok_) inflateEnd(&zs_);
  }
  void set_input(const unsigned char* data, size_t n) override {
    zs_.next_in = const_cast<Bytef*>(data);
    zs_.avail_in = static_cast<uInt>(n);
  }
  const unsigned char* next_in() const override { return zs_.next_in; }
  size_t avail_in() const override { return zs_.avail_in; }
  Result inflate(unsigned char* out, size_t n, size_t* produced) override {
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt want = zs_.avail_out;
    const int rc = ::inflate(&zs_, Z_NO_FLUSH);
    *produced = want - zs_.avail_out;
    if (rc == Z_STREAM_END) return Result::kMemberEnd;
    if (rc == Z_BUF_ERROR) return Result::kNoProgress;
    if (rc == Z_OK) return Result::kOk;
    error_ = zs_.msg != nullptr ? zs_.msg : "invalid data";
    return Result::kError;
  }
  void reset() override { inflateReset(&zs_); }
  std::string error() const override { return error_; }
  bool ok() const override { return ok_; }

 private:
  z_stream zs_{};
  bool ok_ = false;
  std::string error_;
};

}  // namespace

std::unique_ptr<Inflater> make_zlib_inflater() { return std::make_unique<ZlibInflater>(); }

}  // namespace profile_train::trace::detail
