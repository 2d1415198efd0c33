// The dotted report paths that rules may name. This is the single list the rule loader checks `when`, `gain`
// and evidence expressions against: a path not listed here is a load-time error. It is generated from the
// report model's key declaration (model::report_keys(), src/model/report_fields.h: what report.json holds)
// plus the known `facts` leaves (open JSON, listed in src/rules/metric_paths.cpp): a key added to the model
// is a metric path, with its type, without editing this component.
#pragma once

#include <span>
#include <string_view>

namespace profile_train::rules {

// Static type of a metric, used for load-time type checks of expressions. Any value may also be null or
// absent in a given report (see the missing-value semantics in expr.h).
enum class MetricType { kNumber, kBool, kString, kList, kObject };

struct MetricPath {
  std::string_view path;  // e.g. "breakdown.data_loading"
  MetricType type;
};

// Every valid leaf path and every intermediate object path ("gpu.memcpy.h2d", "device"), sorted by path.
std::span<const MetricPath> metric_paths();

// nullptr when `path` is not a valid metric path.
const MetricPath* find_metric(std::string_view path);

std::string_view metric_type_name(MetricType type);

}  // namespace profile_train::rules
