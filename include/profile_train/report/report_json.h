// report.json <-> analysis::Report. Exact: for a report this tool wrote, report_from_json then to_json gives
// back equal JSON, and dump(2) the same bytes (integers stay integers, nulls stay null, absent keys absent).
// Owner: report component.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/report.h"
#include "profile_train/common/status.h"

namespace profile_train::report {

nlohmann::json to_json(const analysis::Report& report);

// Reads a report (format 1.x). Lenient with keys that older or hand-made reports leave out (they keep the
// member's default: null, empty, false, 0); strict with types. BadInput names the key path and what was
// expected ("report: steps.count: expected an integer, got string"); Unsupported for another major version.
StatusOr<analysis::Report> report_from_json(const nlohmann::json& json);

// The same for the parts the rules engine writes (report["recommendations"], report["plan"]).
StatusOr<std::vector<analysis::Recommendation>> recommendations_from_json(const nlohmann::json& json);
StatusOr<std::optional<analysis::Plan>> plan_from_json(const nlohmann::json& json);

// Writes `report` as report.json at `path` (temporary file + rename: a failed write leaves the previous file).
// Strings that are not valid UTF-8 (file names, command arguments, trace names) are repaired first, in
// `report` too, with U+FFFD, and data_quality.notes says how many were.
Status write_report_json(const std::filesystem::path& path, nlohmann::json& report);

}  // namespace profile_train::report
