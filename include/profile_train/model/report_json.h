// report.json <-> Report. Exact: for a report this tool wrote, report_from_json then to_json gives
// back equal JSON, and dump(2) the same bytes (integers stay integers, nulls stay null, absent keys absent).
// Owner: model room.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
#include "profile_train/common/status.h"

namespace profile_train::model {

nlohmann::json to_json(const Report& report);

// Reads a report (format 1.x). Lenient with keys that older or hand-made reports leave out (they keep the
// member's default: null, empty, false, 0); strict with types. BadInput names the key path and what was
// expected ("report: steps.count: expected an integer, got string"); Unsupported for another major version.
StatusOr<Report> report_from_json(const nlohmann::json& json);

// Loads a report.json given the file itself or a run output folder that contains one (report_from_json).
// Rejects an unknown major schema_version and a document that is not a report (a key of the wrong type:
// BadInput naming the file and the key). Errors name the path (BadInput / NotFound / Unsupported).
StatusOr<Report> load_report(const std::filesystem::path& file_or_dir);

// The parts the rules engine fills (report["recommendations"], report["plan"]), written as in report.json.
nlohmann::json to_json(const std::vector<Recommendation>& recommendations);
nlohmann::json to_json(const Plan& plan);

// The same for the parts the rules engine writes (report["recommendations"], report["plan"]).
StatusOr<std::vector<Recommendation>> recommendations_from_json(const nlohmann::json& json);
StatusOr<std::optional<Plan>> plan_from_json(const nlohmann::json& json);

// Replaces invalid UTF-8 in every string of `report` (file names, command arguments, trace names, facts keys
// and values) with U+FFFD and, when any was, adds a data_quality note saying how many. Returns that number.
// Called once on the finished report, before any writer: then every writer gets valid text.
size_t repair_report_utf8(Report& report);

// Writes to_json(report) as report.json at `path` (temporary file + rename: a failed write leaves the previous
// file). Invalid UTF-8 left in the report (repair_report_utf8 not called) is written as U+FFFD, never thrown.
Status write_report_json(const std::filesystem::path& path, const Report& report);

}  // namespace profile_train::model
