// Selection and summarization of one step's events for the HTML timeline. Internal to the report component.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::report::detail {

struct TimelineLimits {
  size_t max_events = 40000;   // drawn rectangles after merging (bounds the HTML size for any input)
  int max_cpu_depth = 10;      // deeper nesting levels (per track) are dropped (counted)
  size_t max_name_bytes = 400; // longer names are cut (full kernel template names can be kilobytes)
  size_t max_tracks = 64;      // further tracks are dropped (counted)
};

// Picks the representative step (the one closest to the median step time in report.steps.per_step; the
// analysis window or the whole trace when there are no steps) and returns the timeline data:
//   {window:{start_ns,end_ns,label}, tracks:[{name,kind,depth}], names:[...], cats:[...],
//    stride:8, ev:[track, start_rel_ns, dur_ns, name, depth, cat, merged_count, bytes, ...],
//    total, drawn, merged_blocks, merged_events, dropped_depth, dropped_tracks}
// Events shorter than a resolution that grows until the budget fits are merged per (track, depth) with
// their short neighbours into one block that keeps the count. Returns null when nothing can be shown.
nlohmann::json build_timeline(const model::Report& report, const trace::Trace& trace,
                              const TimelineLimits& limits = {});

}  // namespace profile_train::report::detail
