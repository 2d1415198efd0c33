#include "profile_train/trace/importer.h"

namespace profile_train::trace {
// Stub: filled by the trace component owner.
StatusOr<Trace> load_trace(const std::filesystem::path& path, const LoadOptions&) {
  return Unsupported(path.string() + ": no importer implemented yet");
}
}  // namespace profile_train::trace
