// tune.html: the self-contained page of a tuning session, written from its typed tune report (the data of
// tune.json: include/profile_train/model/tune.h). Pure functions; every string is escaped.
// Owner: report component.
#pragma once

#include <string>

#include "profile_train/model/tune.h"

namespace profile_train::report {

// The whole page of a tune report.
std::string tune_html(const model::TuneReport& tune);

// Its "Where the trials ran" section ("" when the report has no `execution` section).
std::string execution_html(const model::TuneReport& tune);

}  // namespace profile_train::report
