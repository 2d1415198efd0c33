#include "profile_train/report/writers.h"
namespace profile_train::report {
Status write_html(const nlohmann::json&, const trace::Trace*, const std::filesystem::path& path) {
  return Unsupported(path.string() + ": HTML report not implemented yet");
}
}  // namespace profile_train::report
