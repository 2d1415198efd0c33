// load_report: a report.json from a file or a run's output folder (model/report_json.h).
#include <fstream>

#include "profile_train/common/json_bounded.h"
#include "profile_train/common/json_path.h"
#include "profile_train/model/report_json.h"

namespace profile_train::model {

using nlohmann::json;

StatusOr<Report> load_report(const std::filesystem::path& input) {
  std::error_code ec;
  std::filesystem::path file = input;
  if (std::filesystem::is_directory(input, ec)) file = input / "report.json";
  if (!std::filesystem::exists(file, ec))
    return NotFound(file.string() + (file == input ? ": no such file" : ": no report.json in this folder"));
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError(file.string() + ": cannot open");
  json j;
  try {
    j = parse_json_bounded(in);
  } catch (const JsonTooDeep& e) {
    return ResourceExhausted(file.string() + ": not a report (" + e.what() + ")");
  } catch (const json::exception& e) {
    return BadInput(file.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) return BadInput(file.string() + ": not a report (top level is not an object)");
  auto version = string_path(j, {"schema_version"});
  if (!version) return BadInput(file.string() + ": not a report.json (no schema_version)");
  if (version->rfind("1.", 0) != 0 && *version != "1")
    return Unsupported(file.string() + ": report schema_version " + *version + " is not supported (this build reads 1.x)");
  auto report = report_from_json(j);
  if (!report.ok()) {
    std::string why = report.status().message();
    if (why.rfind("report: ", 0) == 0) why.erase(0, 8);
    return Status(report.status().code(), file.string() + ": not a report (" + why + ")");
  }
  return std::move(*report);
}

}  // namespace profile_train::model
