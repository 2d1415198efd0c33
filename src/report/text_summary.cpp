#include "profile_train/report/writers.h"
namespace profile_train::report {
void write_text_summary(const nlohmann::json& report, std::ostream& out, const TextOptions&) { out << report.dump(2) << "\n"; }
}  // namespace profile_train::report
