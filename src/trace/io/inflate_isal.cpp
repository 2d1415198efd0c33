// The ISA-L (igzip) gzip decoder (see inflate.h): gzip header parsed and CRC32 + ISIZE checked by ISA-L.
#include <isa-l/igzip_lib.h>

#include <algorithm>

#include "io/inflate.h"

namespace profile_train::trace::detail {
namespace {

const char* isal_error_text(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid block";
    case ISAL_INVALID_SYMBOL: return "invalid symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid distance";
    case ISAL_INVALID_WRAPPER: return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
    default: return "invalid data";
  }
}

class IsalInflater final : public Inflater {
 public:
  IsalInflater() { reset(); }
  void set_input(const unsigned char* data, size_t n) override {
    st_.next_in = const_cast<uint8_t*>(data);
    st_.avail_in = static_cast<uint32_t>(n);
  }
  const unsigned char* next_in() const override { return st_.next_in; }
  size_t avail_in() const override { return st_.avail_in; }
  Result inflate(unsigned char* out, size_t n, size_t* produced) override {
    st_.next_out = out;
    st_.avail_out = static_cast<uint32_t>(std::min<size_t>(n, 1u << 30));
    const uint32_t want = st_.avail_out;
    const uint32_t in_before = st_.avail_in;
    const int rc = isal_inflate(&st_);
    *produced = want - st_.avail_out;
    if (rc < 0 || rc == ISAL_NEED_DICT) {
      error_ = isal_error_text(rc);
      return Result::kError;
    }
    if (st_.block_state == ISAL_BLOCK_FINISH) return Result::kMemberEnd;
    if (*produced == 0 && st_.avail_in == in_before) return Result::kNoProgress;
    return Result::kOk;
  }
  void reset() override {
    const uint8_t* in = st_.next_in;
    const uint32_t avail = st_.avail_in;
    isal_inflate_init(&st_);
    st_.crc_flag = ISAL_GZIP;
    st_.next_in = const_cast<uint8_t*>(in);
    st_.avail_in = avail;
  }
  std::string error() const override { return error_; }
  bool ok() const override { return true; }

 private:
  inflate_state st_{};
  std::string error_;
};

}  // namespace

std::unique_ptr<Inflater> make_isal_inflater() { return std::make_unique<IsalInflater>(); }

bool isal_supported() { return true; }

}  // namespace profile_train::trace::detail
