// The data-quality counters: the one list (in the manner of Perfetto's stats.h) from which the trace's
// counters (trace::DataQuality), the report's (model::DataQuality), report.json's keys and the text and HTML
// lists are generated. Adding a counter here adds it everywhere; the order is report.json's declaration order.
#pragma once

// X(NAME, PROBLEM, LABEL)
//   NAME     the member and report.json key (data_quality.NAME), an int64 count
//   PROBLEM  a non-zero count is a data problem (highlighted in report.html); false for totals and for what
//            is skipped on purpose
//   LABEL    the terminal summary's words for a non-zero count ("3 clock anomalies"); nullptr: not listed there
#define PT_DATA_QUALITY_COUNTERS(X)                                                                          \
  X(events_total, false, nullptr)           /* events seen in the source (all phases) */                    \
  X(events_imported, false, nullptr)                                                                        \
  X(malformed_events, true, "malformed events") /* wrong field types / missing required fields */           \
  X(unknown_categories, true, "unknown categories")                                                         \
  X(flow_events_skipped, false, nullptr)    /* ph s/f (joins use correlation ids instead) */                \
  X(negative_durations, true, "negative durations")                                                         \
  X(clock_anomalies, true, "clock anomalies") /* e.g. GPU activity before its launch, out-of-range times */ \
  X(unmatched_correlations, true, "unmatched correlations") /* GPU activity without a runtime call, ... */   \
  X(dropped_records, true, "dropped records") /* capture: records lost (buffers full, process exit) */

// Declares one int64_t member per counter, each 0.
#define PT_DATA_QUALITY_DECLARE_COUNTER(name, problem, label) int64_t name = 0;
