// One error model for library APIs: Status / StatusOr<T>. Exceptions from third-party libraries
// (nlohmann, CLI11, zlib wrappers) are caught at component edges and turned into a Status.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace profile_train {

// Process exit codes of the `profile-train` CLI (documented in README.md). Keep in sync.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,        // internal error / unexpected failure
  kExitBadInput = 2,       // bad usage or bad input: one clear line naming the file and the problem
  kExitThreshold = 3,      // a --fail-on threshold (CI gate) was crossed
  kExitChildFailed = 4,    // `run`: the wrapped command failed (its own code is in the report)
  kExitInterrupted = 130,  // SIGINT: partial results were written
  kExitTerminated = 143,   // SIGTERM (128 + 15, the shell's convention): partial results were written
};

// The exit code for a run stopped by `sig` (SIGINT or SIGTERM).
inline int exit_code_for_stop_signal(int sig) { return sig == 15 ? kExitTerminated : kExitInterrupted; }

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad usage
  kBadInput,          // malformed / truncated / hostile input file
  kNotFound,
  kUnsupported,       // e.g. unknown major format version
  kIoError,
  kResourceExhausted, // size / depth / memory limits hit
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // The exit code a CLI should use when this status ends a command.
  int exit_code() const {
    switch (code_) {
      case StatusCode::kOk: return kExitOk;
      case StatusCode::kInvalidArgument:
      case StatusCode::kBadInput:
      case StatusCode::kNotFound:
      case StatusCode::kUnsupported:
      case StatusCode::kResourceExhausted:
      case StatusCode::kIoError: return kExitBadInput;
      case StatusCode::kInternal: return kExitFailure;
    }
    return kExitFailure;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status BadInput(std::string msg) { return {StatusCode::kBadInput, std::move(msg)}; }
inline Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
inline Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
inline Status Unsupported(std::string msg) { return {StatusCode::kUnsupported, std::move(msg)}; }
inline Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
inline Status ResourceExhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }

// Returns the Status of `expr` (evaluated once) from the enclosing function when it is not ok. The function
// returns Status or a StatusOr<T>.
#define PT_RETURN_IF_ERROR(expr)                                                       \
  do {                                                                                 \
    if (::profile_train::Status pt_status_ = (expr); !pt_status_.ok()) return pt_status_; \
  } while (false)

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}                 // NOLINT(implicit)
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace profile_train
