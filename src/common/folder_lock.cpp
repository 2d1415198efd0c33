#include "profile_train/common/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "profile_train/common/terminal.h"

namespace profile_train {

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the flock
}

StatusOr<FolderLock> lock_output_folder(const std::filesystem::path& dir, std::string_view command) {
  const std::filesystem::path file = dir / kLockFileName;
  // O_NOFOLLOW: a lock file planted as a symlink would otherwise have its target truncated and overwritten
  // with our pid (a victim file, or a device as root); O_NONBLOCK: a FIFO planted there must not block the
  // open. Whatever is not a regular file is refused.
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return InvalidArgument(file.string() + ": the lock file is a symbolic link; remove it (profile-train never "
                             "follows it)");
    return IoError(dir.string() + ": cannot create the lock file " + kLockFileName + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(file.string() + ": the lock file is not a regular file; remove it");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    if (err == EWOULDBLOCK) {
      char buf[256];
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      if (n > 0) {
        holder.assign(buf, static_cast<size_t>(n));
        while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
        // The holder wrote "PID COMMAND"; anything else (a hand-made file) is not shown.
        const size_t sp = holder.find(' ');
        const std::string pid = holder.substr(0, sp);
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) holder.clear();
        else holder = "pid " + pid + (sp == std::string::npos ? "" : ", " + terminal_safe(holder.substr(sp + 1)));
      }
    }
    ::close(fd);
    if (err != EWOULDBLOCK) return IoError(file.string() + ": cannot lock: " + std::strerror(err));
    return InvalidArgument(dir.string() + ": output folder is in use by another profile-train" +
                           (holder.empty() ? std::string() : " (" + holder + ")") +
                           "; wait for it to finish or choose another --out");
  }
  // Who holds it, for the message of the next one. A failure here only loses that detail.
  const std::string who = std::to_string(::getpid()) + " " + std::string(command) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, who.data(), who.size(), 0);
  return FolderLock(fd);
}

}  // namespace profile_train
