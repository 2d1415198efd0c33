// Byte sources used by load_trace: a plain file, bytes in memory, a streaming gzip decoder over either, and
// a guard that enforces the size limit, reports progress and replays the sniffed head.
// Owner: trace component. None of these are thread-safe; each is used by one loader at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/inflate.h"
#include "profile_train/trace/importer.h"

namespace profile_train::trace::detail {

// Reads a file with stdio. Owns the FILE*.
class FileSource final : public ByteSource {
 public:
  // Opens `path`; NotFound / IoError / BadInput (directory) name the file.
  static StatusOr<std::unique_ptr<FileSource>> open(const std::string& path);
  ~FileSource() override;
  StatusOr<size_t> read(char* buf, size_t n) override;
  const std::string& name() const override { return name_; }
  uint64_t known_size() const override { return size_; }
  std::unique_ptr<ByteSource> reopen_at(uint64_t offset) const override;  // regular files only
  std::filesystem::path file() const override { return name_; }
  uint64_t consumed() const { return consumed_; }
  uint64_t size() const { return size_; }  // 0 when unknown (pipes)

 private:
  FileSource(std::FILE* f, std::string name, uint64_t size) : f_(f), name_(std::move(name)), size_(size) {}
  std::FILE* f_;
  std::string name_;
  uint64_t size_ = 0;
  uint64_t consumed_ = 0;
};

// Reads from a caller-owned buffer that must outlive the source.
class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view data, std::string name) : data_(data), name_(std::move(name)) {}
  StatusOr<size_t> read(char* buf, size_t n) override;
  const std::string& name() const override { return name_; }
  uint64_t known_size() const override { return data_.size(); }
  std::unique_ptr<ByteSource> reopen_at(uint64_t offset) const override;
  uint64_t consumed() const { return pos_; }

 private:
  std::string_view data_;
  std::string name_;
  size_t pos_ = 0;
};

// Streaming gzip decoder over another source; handles multi-member files. A stream that ends before the
// gzip trailer is BadInput "NAME: truncated gzip stream"; corrupt data is BadInput "NAME: corrupt gzip
// stream (REASON)", REASON in the decoder's words (load_trace decodes a file that failed with ISA-L again
// with zlib, so that what a user sees does not depend on the build).
class GzipSource final : public ByteSource {
 public:
  // ISA-L when built with it, else zlib.
  static GzipDecoder default_decoder();
  explicit GzipSource(ByteSource& compressed, GzipDecoder decoder = default_decoder());
  GzipDecoder decoder() const { return decoder_; }  // the one in use (zlib when ISA-L is not built)
  ~GzipSource() override;
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;
  StatusOr<size_t> read(char* buf, size_t n) override;
  const std::string& name() const override { return in_.name(); }
  std::filesystem::path file() const override { return in_.file(); }

 private:
  Status fill();
  ByteSource& in_;
  GzipDecoder decoder_ = GzipDecoder::kZlib;
  struct State;
  std::unique_ptr<State> st_;
};

// Reads `inner` on a thread of its own, at most `buffers` buffers of `buffer_bytes` ahead of the reader, so that
// reading the file and inflating it overlap the parsing on another core. The bytes, their order, the end and
// any error (at the point of the stream where `inner` gave it) are exactly what `inner` gives. `raw_position`
// (may be null) is called on that thread after each read: raw_position() returns its value for the bytes read
// so far. For regular files and memory only: the destructor waits for the read in progress, which a FIFO could
// block forever. Only read() and raw_position() may be called, from one thread.
class ReadAheadSource final : public ByteSource {
 public:
  ReadAheadSource(ByteSource& inner, std::function<uint64_t()> raw_position, size_t buffer_bytes = size_t{4} << 20,
                  int buffers = 3);
  ~ReadAheadSource() override;
  ReadAheadSource(const ReadAheadSource&) = delete;
  ReadAheadSource& operator=(const ReadAheadSource&) = delete;
  StatusOr<size_t> read(char* buf, size_t n) override;
  const std::string& name() const override { return name_; }
  uint64_t known_size() const override;
  std::unique_ptr<ByteSource> reopen_at(uint64_t offset) const override;  // a plain reader of `inner`'s stream
  std::filesystem::path file() const override { return file_; }
  uint64_t raw_position() const { return raw_position_now_; }

 private:
  struct Shared;
  void produce();
  std::string name_;
  std::filesystem::path file_;
  std::unique_ptr<Shared> sh_;
  uint64_t raw_position_now_ = 0;
};

// Wraps the decompressed stream: enforces `limit` and an optional time limit (ResourceExhausted), calls
// `progress` about every 16 MiB with the raw (compressed) position, and first replays the bytes read by
// peek(). A reader made by reopen_at() keeps the same limits (the deadline included) and adds the bytes it
// reads to this one's progress.
class GuardSource final : public ByteSource {
 public:
  GuardSource(ByteSource& inner, uint64_t limit, std::function<void(uint64_t, uint64_t)> progress,
              std::function<uint64_t()> raw_position, uint64_t raw_total)
      : inner_(inner), limit_(limit), progress_(std::move(progress)), raw_position_(std::move(raw_position)),
        raw_total_(raw_total), side_bytes_(std::make_shared<std::atomic<uint64_t>>(0)) {}
  uint64_t known_size() const override { return inner_.known_size(); }
  std::unique_ptr<ByteSource> reopen_at(uint64_t offset) const override;
  // Fails reads (ResourceExhausted) once `seconds` have passed since this call; checked about every 16 MiB.
  void set_time_limit(double seconds);
  // Reads up to `n` bytes ahead without consuming them (they are returned again by read()).
  StatusOr<std::string_view> peek(size_t n);
  StatusOr<size_t> read(char* buf, size_t n) override;
  const std::string& name() const override { return inner_.name(); }
  std::filesystem::path file() const override { return inner_.file(); }

 private:
  StatusOr<size_t> read_inner(char* buf, size_t n);
  ByteSource& inner_;
  uint64_t limit_;
  std::function<void(uint64_t, uint64_t)> progress_;
  std::function<uint64_t()> raw_position_;
  uint64_t raw_total_;
  uint64_t produced_ = 0;
  uint64_t next_progress_ = 0;  // next produced_ at which progress and the time limit are checked
  double time_limit_s_ = 0;     // 0 = none
  std::chrono::steady_clock::time_point deadline_{};
  std::string head_;
  size_t head_pos_ = 0;
  // Bytes read by the readers reopen_at() made (counted in progress); for such a reader: its parent's count
  // (`counts_into_`) and the source it reads (`owned_`).
  std::shared_ptr<std::atomic<uint64_t>> side_bytes_;
  std::shared_ptr<std::atomic<uint64_t>> counts_into_;
  std::unique_ptr<ByteSource> owned_;
};

}  // namespace profile_train::trace::detail
