// The keys of report.json as the report model declares them (src/model/report_fields.h, the declaration the
// JSON writer and reader walk): every key path with its JSON type. The rules' metric-path table is built from
// it, and a test checks reports/report.schema.json against it. Owner: model room.
#pragma once

#include <string>
#include <vector>

namespace profile_train::model {

enum class KeyType { kNumber, kInteger, kBoolean, kString, kArray, kObject };

struct ReportKey {
  // Dotted from the top ("steps.steady_state.count"); "[]" stands for the items of an array
  // ("steps.per_step[].index", "source.files[]").
  std::string path;
  KeyType type = KeyType::kObject;
  bool nullable = false;  // the value may be null (std::optional members)
  bool always = true;     // false: the key is left out when unset (absent_if_unset, or in an inline group)
  bool free_form = false;  // an open-ended JSON object (facts): the model declares no keys under it
};

// Every declared key, in declaration order, each object before its keys. Per-role and per-phase objects
// (breakdown, phases.ms_per_step, ...) list their role and phase names (common/vocabulary.h).
const std::vector<ReportKey>& report_keys();

}  // namespace profile_train::model
