#include "profile_train/report/writers.h"
namespace profile_train::report {
Status write_perfetto(const trace::Trace&, const std::filesystem::path& path) {
  return Unsupported(path.string() + ": Perfetto export not implemented yet");
}
}  // namespace profile_train::report
