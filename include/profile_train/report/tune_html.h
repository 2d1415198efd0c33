// tune.html: the self-contained page of a tuning session, written from its tune.json document (format:
// include/profile_train/tuner/tune_report.h). Pure functions; every string from the document is escaped.
// Owner: report component.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace profile_train::report {

// The whole page for a tune.json document.
std::string tune_html(const nlohmann::json& tune);

// Its "Where the trials ran" section ("" when the document has no `execution` section).
std::string execution_html(const nlohmann::json& tune);

}  // namespace profile_train::report
