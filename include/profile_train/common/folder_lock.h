// An exclusive, non-blocking lock on an output folder, so that two commands writing into the same --out
// (two `run`s sharing capture/, an `analyze` racing a `run`) fail fast instead of mixing their data.
// flock(2) on DIR/.profile-train.lock: the kernel releases it when the holder exits, however it exits, so a
// killed profile-train never leaves a stale lock. The file stays in the folder (deleting a lock file races
// with a process that has just opened it); it holds the holder's pid and command for the error message.
#pragma once

#include <filesystem>
#include <string_view>

#include "profile_train/common/status.h"

namespace profile_train {

inline constexpr const char* kLockFileName = ".profile-train.lock";

class FolderLock {
 public:
  FolderLock() = default;
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();  // releases the lock

  bool held() const { return fd_ >= 0; }

 private:
  friend StatusOr<FolderLock> lock_output_folder(const std::filesystem::path&, std::string_view);
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Locks `dir` (which must exist) for `command` ("run", "analyze", ...). The lock file is opened close-on-exec:
// a command launched by `run` does not inherit it. A folder locked by another process gives
// InvalidArgument (exit code 2): "DIR: output folder is in use by another profile-train (pid P, run); wait
// for it to finish or choose another --out". Failing to create the lock file is an IoError naming the reason.
StatusOr<FolderLock> lock_output_folder(const std::filesystem::path& dir, std::string_view command);

}  // namespace profile_train
