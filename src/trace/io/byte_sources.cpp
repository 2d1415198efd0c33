#include "io/byte_sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace profile_train::trace::detail {

// ---- FileSource ---------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<FileSource>> FileSource::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever if none comes. Open, then see what
  // it is; reads block again as usual (a FIFO with no writer reads as empty).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(err));
  }
  auto failed = [&](Status s) {
    ::close(fd);
    return s;
  };
  auto cannot_open = [&] {
    const int err = errno;
    return failed(IoError(path + ": cannot open: " + std::strerror(err)));
  };
  struct stat st{};
  if (::fstat(fd, &st) != 0) return cannot_open();
  if (S_ISDIR(st.st_mode)) return failed(BadInput(path + ": is a directory, not a trace file"));
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags == -1 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) return cannot_open();
  std::FILE* f = ::fdopen(fd, "rb");
  if (f == nullptr) return cannot_open();
  const uint64_t size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  return std::unique_ptr<FileSource>(new FileSource(f, path, size));
}

FileSource::~FileSource() {
  if (f_ != nullptr) std::fclose(f_);
}

StatusOr<size_t> FileSource::read(char* buf, size_t n) {
  const size_t got = std::fread(buf, 1, n, f_);
  if (got < n && std::ferror(f_)) return IoError(name_ + ": read error: " + std::strerror(errno));
  consumed_ += got;
  return got;
}

std::unique_ptr<ByteSource> FileSource::reopen_at(uint64_t offset) const {
  if (size_ == 0 || offset > size_) return nullptr;
  auto f = open(name_);
  if (!f.ok()) return nullptr;
  if (::fseeko((*f)->f_, static_cast<off_t>(offset), SEEK_SET) != 0) return nullptr;
  return std::move(*f);
}

// ---- MemorySource -------------------------------------------------------------------------------------

StatusOr<size_t> MemorySource::read(char* buf, size_t n) {
  const size_t k = std::min(n, data_.size() - pos_);
  if (k > 0) std::memcpy(buf, data_.data() + pos_, k);
  pos_ += k;
  return k;
}

std::unique_ptr<ByteSource> MemorySource::reopen_at(uint64_t offset) const {
  if (offset > data_.size()) return nullptr;
  return std::make_unique<MemorySource>(data_.substr(static_cast<size_t>(offset)), name_);
}

// ---- ReadAheadSource ----------------------------------------------------------------------------------

struct ReadAheadSource::Shared {
  struct Buffer {
    std::unique_ptr<char[]> bytes;  // capacity: Shared::capacity (left uninitialized)
    size_t size = 0, pos = 0;
    uint64_t raw_position = 0;
  };
  ByteSource& inner;
  std::function<uint64_t()> raw_position;
  size_t capacity = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Buffer> ready;          // filled, in stream order
  std::vector<Buffer> free;          // empty, to be filled
  bool stop = false;                 // the reader is gone: the thread ends after its current read
  bool done = false;                 // the thread has put its last buffer (and the end or the error)
  std::optional<Status> error;       // what `inner` failed with, after the ready buffers
  std::thread thread;
  Shared(ByteSource& in, std::function<uint64_t()> rp) : inner(in), raw_position(std::move(rp)) {}
};

ReadAheadSource::ReadAheadSource(ByteSource& inner, std::function<uint64_t()> raw_position, size_t buffer_bytes,
                                 int buffers)
    : name_(inner.name()), file_(inner.file()), sh_(std::make_unique<Shared>(inner, std::move(raw_position))) {
  sh_->capacity = std::max<size_t>(buffer_bytes, 4096);
  for (int i = 0; i < std::max(2, buffers); ++i) {
    Shared::Buffer b;
    b.bytes.reset(new char[sh_->capacity]);
    sh_->free.push_back(std::move(b));
  }
  sh_->thread = std::thread([this] { produce(); });
}

ReadAheadSource::~ReadAheadSource() {
  {
    std::lock_guard<std::mutex> g(sh_->mu);
    sh_->stop = true;
  }
  sh_->cv.notify_all();
  sh_->thread.join();
}

void ReadAheadSource::produce() {
  Shared& s = *sh_;
  for (;;) {
    Shared::Buffer b;
    {
      std::unique_lock<std::mutex> g(s.mu);
      s.cv.wait(g, [&] { return s.stop || !s.free.empty(); });
      if (s.stop) break;
      b = std::move(s.free.back());
      s.free.pop_back();
    }
    std::optional<Status> failed;
    b.size = b.pos = 0;
    try {
      // Fill the buffer (fewer, larger hand-overs); a short read is kept as it is only at the end.
      while (b.size < s.capacity) {
        StatusOr<size_t> got = s.inner.read(b.bytes.get() + b.size, s.capacity - b.size);
        if (!got.ok()) {
          failed = got.status();
          break;
        }
        if (*got == 0) break;
        b.size += *got;
      }
      if (s.raw_position) b.raw_position = s.raw_position();
    } catch (const std::exception& e) {
      failed = Internal(s.inner.name() + ": read failed (" + e.what() + ")");
    }
    const bool last = failed.has_value() || b.size < s.capacity;
    {
      std::lock_guard<std::mutex> g(s.mu);
      if (b.size > 0) s.ready.push_back(std::move(b));
      else s.free.push_back(std::move(b));
      if (failed) s.error = std::move(failed);
    }
    s.cv.notify_all();
    if (last) break;
  }
  {
    std::lock_guard<std::mutex> g(s.mu);
    s.done = true;  // after the end, an error, or a stop
  }
  s.cv.notify_all();
}

StatusOr<size_t> ReadAheadSource::read(char* buf, size_t n) {
  Shared& s = *sh_;
  std::unique_lock<std::mutex> g(s.mu);
  s.cv.wait(g, [&] { return !s.ready.empty() || s.done; });
  if (s.ready.empty()) {
    if (s.error) return *s.error;
    return size_t{0};
  }
  // The front buffer is this thread's until it is handed back: the producer only appends to `ready` (which
  // keeps references to its elements valid), so the copy runs without the lock.
  Shared::Buffer& b = s.ready.front();
  g.unlock();
  const size_t k = std::min(n, b.size - b.pos);
  std::memcpy(buf, b.bytes.get() + b.pos, k);
  b.pos += k;
  raw_position_now_ = b.raw_position;
  if (b.pos == b.size) {
    g.lock();
    s.free.push_back(std::move(b));
    s.ready.pop_front();
    g.unlock();
    s.cv.notify_all();
  }
  return k;
}

// ---- GzipSource ---------------------------------------------------------------------------------------

struct GzipSource::State {
  std::unique_ptr<Inflater> inflater;
  std::vector<unsigned char> in;  // compressed input window
  bool in_eof = false;            // the compressed source is exhausted
  bool done = false;              // last member finished
};

namespace {
constexpr size_t kGzipInBuf = size_t{256} << 10;
}

GzipDecoder GzipSource::default_decoder() { return isal_supported() ? GzipDecoder::kIsal : GzipDecoder::kZlib; }

GzipSource::GzipSource(ByteSource& compressed, GzipDecoder decoder)
    : in_(compressed), st_(std::make_unique<State>()) {
  st_->in.resize(kGzipInBuf);
  if (decoder == GzipDecoder::kIsal) st_->inflater = make_isal_inflater();
  if (st_->inflater == nullptr) st_->inflater = make_zlib_inflater();
  decoder_ = decoder == GzipDecoder::kIsal && isal_supported() ? GzipDecoder::kIsal : GzipDecoder::kZlib;
  st_->inflater->set_input(st_->in.data(), 0);
}

GzipSource::~GzipSource() = default;

Status GzipSource::fill() {
  auto& s = *st_;
  if (s.in_eof) return Status::Ok();
  // Keep unconsumed input at the front.
  Inflater& z = *s.inflater;
  const size_t keep = z.avail_in();
  if (keep > 0 && z.next_in() != s.in.data()) std::memmove(s.in.data(), z.next_in(), keep);
  auto got = in_.read(reinterpret_cast<char*>(s.in.data()) + keep, s.in.size() - keep);
  if (!got.ok()) return got.status();
  if (*got == 0) s.in_eof = true;
  z.set_input(s.in.data(), keep + *got);
  return Status::Ok();
}

StatusOr<size_t> GzipSource::read(char* buf, size_t n) {
  auto& s = *st_;
  Inflater& z = *s.inflater;
  if (!z.ok()) return Internal(name() + ": cannot initialise zlib");
  if (s.done || n == 0) return size_t{0};
  auto* out = reinterpret_cast<unsigned char*>(buf);
  size_t total = 0;
  while (total == 0) {  // loop until at least one byte came out
    if (z.avail_in() == 0) PT_RETURN_IF_ERROR(fill());
    size_t produced = 0;
    const Inflater::Result rc = z.inflate(out, n, &produced);
    total += produced;
    if (rc == Inflater::Result::kMemberEnd) {
      // Another gzip member may follow (concatenated .gz files); anything else after the trailer is ignored.
      if (z.avail_in() < 2) {
        PT_RETURN_IF_ERROR(fill());
      }
      if (z.avail_in() >= 2 && z.next_in()[0] == 0x1f && z.next_in()[1] == 0x8b) {
        z.reset();
        continue;
      }
      s.done = true;
      break;
    }
    if (rc == Inflater::Result::kError) return BadInput(name() + ": corrupt gzip stream (" + z.error() + ")");
    if (rc == Inflater::Result::kNoProgress || (produced == 0 && z.avail_in() == 0)) {
      // Needs more input (a decoder may hold the last bytes and still have output: it was called once more).
      if (s.in_eof) return BadInput(name() + ": truncated gzip stream");
      PT_RETURN_IF_ERROR(fill());
    }
  }
  return total;
}

uint64_t ReadAheadSource::known_size() const { return sh_->inner.known_size(); }

std::unique_ptr<ByteSource> ReadAheadSource::reopen_at(uint64_t offset) const { return sh_->inner.reopen_at(offset); }

// ---- GuardSource --------------------------------------------------------------------------------------

StatusOr<size_t> GuardSource::read_inner(char* buf, size_t n) {
  auto got = inner_.read(buf, n);
  if (!got.ok()) return got;
  produced_ += *got;
  if (counts_into_) counts_into_->fetch_add(*got, std::memory_order_relaxed);
  if (produced_ > limit_) {
    return ResourceExhausted(name() + ": more than " + std::to_string(limit_) +
                             " bytes after decompression (limit: analyze --max-input-size)");
  }
  if (produced_ >= next_progress_) {
    next_progress_ = produced_ + (uint64_t{16} << 20);
    if (progress_) {
      // Readers of parts read a little past where the next part starts: never more than the whole.
      const uint64_t side = side_bytes_->load(std::memory_order_relaxed);
      const uint64_t done = (raw_position_ ? raw_position_() : produced_) + side;
      progress_(raw_total_ > 0 ? std::min(done, raw_total_) : done, raw_total_);
    }
    if (time_limit_s_ > 0 && std::chrono::steady_clock::now() > deadline_) {
      std::ostringstream s;
      s << name() << ": still loading after " << time_limit_s_ << " s (" << produced_
        << " bytes read after decompression; limit: analyze --max-load-seconds)";
      return ResourceExhausted(s.str());
    }
  }
  return got;
}

std::unique_ptr<ByteSource> GuardSource::reopen_at(uint64_t offset) const {
  std::unique_ptr<ByteSource> in = inner_.reopen_at(offset);
  if (!in) return nullptr;
  auto g = std::make_unique<GuardSource>(*in, limit_, nullptr, nullptr, 0);
  g->owned_ = std::move(in);
  g->time_limit_s_ = time_limit_s_;
  g->deadline_ = deadline_;
  g->counts_into_ = side_bytes_;
  return g;
}

void GuardSource::set_time_limit(double seconds) {
  time_limit_s_ = seconds;
  // steady_clock counts int64 nanoseconds (292 years): a limit of about 9.2e9 s or more (or inf) would
  // overflow the cast into a deadline in the past. Anything beyond 1e9 s (31 years) is no limit at all.
  if (!(seconds < 1e9)) {
    deadline_ = std::chrono::steady_clock::time_point::max();
    return;
  }
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

StatusOr<std::string_view> GuardSource::peek(size_t n) {
  while (head_.size() < n) {
    const size_t old = head_.size();
    head_.resize(n);
    auto got = read_inner(head_.data() + old, n - old);
    if (!got.ok()) {
      head_.resize(old);
      return got.status();
    }
    head_.resize(old + *got);
    if (*got == 0) break;
  }
  return std::string_view(head_).substr(0, std::min(n, head_.size()));
}

StatusOr<size_t> GuardSource::read(char* buf, size_t n) {
  if (head_pos_ < head_.size()) {
    const size_t k = std::min(n, head_.size() - head_pos_);
    std::memcpy(buf, head_.data() + head_pos_, k);
    head_pos_ += k;
    if (head_pos_ == head_.size()) {
      head_.clear();
      head_.shrink_to_fit();
      head_pos_ = 0;
    }
    return k;
  }
  return read_inner(buf, n);
}

}  // namespace profile_train::trace::detail
