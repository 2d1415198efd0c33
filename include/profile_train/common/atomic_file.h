// Output files are replaced, never rewritten in place: the content goes to a temporary file in the same
// folder, which is renamed over the destination only once it is complete. A failure (full disk, size limit,
// crash, kill) therefore never leaves a truncated or empty report behind, and never destroys the previous
// one. Not fsync'ed: the guarantee is against our own failures, not against a power cut.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "profile_train/common/status.h"

namespace profile_train {

// OK when `path` does not exist or is a regular file (not through a symlink). Anything else (a FIFO, a
// device node, a symlink, a folder, a socket) would be replaced by the rename: the writers refuse it with
// InvalidArgument (exit 2) naming the path and what it is, rather than destroy it.
Status check_replaceable(const std::filesystem::path& path);

class AtomicFile {
 public:
  // Creates the temporary file ".NAME.tmp-PID-N" beside `path`. IoError names `path` and the reason;
  // InvalidArgument when `path` exists and is not a regular file (check_replaceable).
  static StatusOr<AtomicFile> create(const std::filesystem::path& path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless commit() succeeded

  // Appends `data`. After the first failure further writes are skipped; commit() reports that failure.
  void write(std::string_view data);
  bool ok() const { return error_.ok(); }

  // Closes the temporary file and renames it over the destination. On any failure (earlier writes included)
  // the destination is untouched and the IoError says why, e.g. "out/report.html: cannot write: No space
  // left on device".
  Status commit();

  const std::filesystem::path& path() const { return path_; }

 private:
  AtomicFile(std::filesystem::path path, std::filesystem::path tmp, int fd);
  void discard();

  std::filesystem::path path_;
  std::filesystem::path tmp_;
  int fd_ = -1;
  Status error_;
};

// `content` written to `path` through an AtomicFile.
Status write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace profile_train
