// Gzip decoders behind GzipSource (owner: trace component): zlib, always built, and ISA-L's igzip (about
// 2.8x faster on trace JSON, bench/results/importer-ingest-2026-12-01.md), built when libisal-dev is found
// (CMake PT_WITH_ISAL; inflate_isal_stub.cpp otherwise). Each decodes one gzip member at a time from a
// caller-owned input window and checks its CRC and length. Not thread-safe: one per GzipSource.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace profile_train::trace::detail {

enum class GzipDecoder { kZlib, kIsal };

class Inflater {
 public:
  enum class Result {
    kOk,         // made progress (output, or input consumed); call again
    kMemberEnd,  // the member and its trailer are done; next_in() is just after it
    kNoProgress, // needs more input
    kError,      // corrupt data; error() says why
  };
  virtual ~Inflater() = default;
  virtual void set_input(const unsigned char* data, size_t n) = 0;
  virtual const unsigned char* next_in() const = 0;
  virtual size_t avail_in() const = 0;
  // Decodes into [out, out + n); `*produced` is the number of bytes written.
  virtual Result inflate(unsigned char* out, size_t n, size_t* produced) = 0;
  // Starts the next member (the input window is kept).
  virtual void reset() = 0;
  virtual std::string error() const = 0;
  virtual bool ok() const = 0;  // false when the decoder could not be initialised
};

std::unique_ptr<Inflater> make_zlib_inflater();
// nullptr when this build has no ISA-L.
std::unique_ptr<Inflater> make_isal_inflater();
bool isal_supported();

}  // namespace profile_train::trace::detail
