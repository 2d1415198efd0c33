#include "profile_train/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace profile_train {
namespace {

std::string reason(int err) { return std::strerror(err); }

const char* file_type(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Status check_replaceable(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();  // a new path (or one we cannot see: create() says)
  if (S_ISREG(st.st_mode)) return Status::Ok();
  return InvalidArgument(path.string() + ": is " + file_type(st.st_mode) +
                         "; profile-train writes only regular files or new paths (it would be replaced)");
}

AtomicFile::AtomicFile(std::filesystem::path path, std::filesystem::path tmp, int fd)
    : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}

StatusOr<AtomicFile> AtomicFile::create(const std::filesystem::path& path) {
  if (Status s = check_replaceable(path); !s.ok()) return s;
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::string base = "." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::filesystem::path tmp = dir / (base + std::to_string(counter++));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return AtomicFile(path, tmp, fd);
    if (errno != EEXIST) return IoError(path.string() + ": cannot create: " + reason(errno));
  }
  return IoError(path.string() + ": cannot create a temporary file beside it");
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)), fd_(other.fd_), error_(std::move(other.error_)) {
  other.fd_ = -1;
  other.tmp_.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    tmp_ = std::move(other.tmp_);
    fd_ = other.fd_;
    error_ = std::move(other.error_);
    other.fd_ = -1;
    other.tmp_.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::write(std::string_view data) {
  if (!error_.ok() || fd_ < 0) return;
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = IoError(path_.string() + ": cannot write: " + reason(errno));
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

Status AtomicFile::commit() {
  if (fd_ < 0 && tmp_.empty()) return Internal(path_.string() + ": already committed or discarded");
  if (!error_.ok()) {
    discard();
    return error_;
  }
  // close() can be the first to report a full disk (delayed allocation, network file systems).
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    const Status s = IoError(path_.string() + ": cannot write: " + reason(errno));
    discard();
    return s;
  }
  // Checked again at the end: the path may have become a FIFO, a device or a symlink meanwhile.
  if (Status s = check_replaceable(path_); !s.ok()) {
    discard();
    return s;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const Status s = IoError(path_.string() + ": cannot replace: " + reason(errno));
    discard();
    return s;
  }
  tmp_.clear();
  return Status::Ok();
}

Status write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  auto file = AtomicFile::create(path);
  if (!file.ok()) return file.status();
  file->write(content);
  return file->commit();
}

}  // namespace profile_train
