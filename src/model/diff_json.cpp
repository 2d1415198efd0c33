// diff.json: the one serialization of a Diff (model/diff.h).
#include "profile_train/common/json_path.h"
#include "profile_train/model/diff.h"

namespace profile_train::model {

using nlohmann::json;

namespace {
const char* presence_name(KernelPresence p) {
  switch (p) {
    case KernelPresence::kInBoth: return "in_both";
    case KernelPresence::kOnlyInATop: return "only_in_a_top";
    case KernelPresence::kOnlyInBTop: return "only_in_b_top";
  }
  return "in_both";
}

json step_time_json(const DiffStepTime& st) {
  return {{"a_ms", or_null(st.a_ms)},   {"b_ms", or_null(st.b_ms)},       {"delta_ms", or_null(st.delta_ms)},
          {"ratio", or_null(st.ratio)}, {"speedup", or_null(st.speedup)}};
}

json breakdown_json(const std::vector<DiffCategory>& breakdown) {
  json cats = json::array();
  for (const DiffCategory& c : breakdown)
    cats.push_back({{"category", name_of(c.role)},
                    {"a_ms", or_null(c.a_ms)},
                    {"b_ms", or_null(c.b_ms)},
                    {"delta_ms", or_null(c.delta_ms)},
                    {"a_fraction", or_null(c.a_fraction)},
                    {"b_fraction", or_null(c.b_fraction)}});
  return cats;
}

json verdict_json(const Diff& d) {
  return {{"a", std::string(name_of(d.a.bottleneck))}, {"b", std::string(name_of(d.b.bottleneck))},
          {"changed", d.verdict_changed()}};
}

json headline_json(const DiffHeadline& h) {
  json cats = json::array();
  for (Role r : h.changed_categories) cats.push_back(name_of(r));
  return {{"step_time", name_of(h.step_time)},
          {"relative_change", or_null(h.relative_change)},
          {"threshold", or_null(h.threshold)},
          {"changed_categories", std::move(cats)}};
}

json window_json(const DiffWindow& w) {
  return {{"steps", w.steps},
          {"steady_steps", w.steady_steps},
          {"mean_ms", or_null(w.mean_ms)},
          {"stddev_ms", or_null(w.stddev_ms)},
          {"relative_stddev", or_null(w.relative_stddev)},
          {"window_ms", or_null(w.window_ms)},
          {"kernel_ms", or_null(w.kernel_ms)},
          {"shared_kernel_fraction", or_null(w.shared_kernel_fraction)}};
}

json comparability_json(const DiffComparability& c) { return {{"a", window_json(c.a)}, {"b", window_json(c.b)}}; }

json straggler_json(const std::optional<Straggler>& s) {
  if (!s) return nullptr;
  return {{"rank", s->rank}, {"phase", std::string(name_of(s->phase))}, {"excess_ms", s->excess_ms}};
}

json job_side_json(const JobDiffSide& s) {
  const JobSummary& j = s.summary;
  return {{"label", s.label},
          {"ranks", s.ranks},
          {"from_job_json", s.from_job_json},
          {"verdict", std::string(name_of(j.verdict))},
          {"straggler", straggler_json(j.straggler)},
          {"slowest_work_rank", or_null(j.slowest_rank)},
          {"slowdown", or_null(j.slowdown)},
          {"step_skew", or_null(j.step_skew)},
          {"summary", j.summary},
          {"slowest_rank", or_null(s.slowest_rank)},
          {"slowest_label", s.slowest_label},
          {"step_ms", or_null(s.step_ms)}};
}

json one_side_json(const std::vector<RankOnOneSide>& ranks) {
  json out = json::array();
  for (const auto& r : ranks) out.push_back({{"rank", r.rank}, {"label", r.label}});
  return out;
}
}  // namespace

json to_json(const Diff& d) {
  auto side = [](const DiffSide& s) {
    return json{{"label", s.label},
                {"bottleneck", name_of(s.bottleneck)},
                {"confidence", s.confidence},
                {"summary", s.summary},
                // a float in diff.json, as diff 1.0 wrote it
                {"steps", static_cast<double>(s.steps)},
                {"device", s.device}};
  };
  json out;
  out["diff_version"] = kDiffVersion;
  out["tool"] = {{"name", "profile-train"}};
  out["a"] = side(d.a);
  out["b"] = side(d.b);
  out["kind"] = "reports";
  out["step_time"] = step_time_json(d.step_time);
  out["headline"] = headline_json(d.headline);
  out["comparability"] = comparability_json(d.comparability);
  out["gpu_utilization"] = {
      {"a", or_null(d.gpu_utilization.a)}, {"b", or_null(d.gpu_utilization.b)}, {"delta", or_null(d.gpu_utilization.delta)}};
  out["breakdown"] = breakdown_json(d.breakdown);
  out["verdict"] = verdict_json(d);
  json kernels = json::array();
  for (const DiffKernel& k : d.kernels)
    kernels.push_back({{"name", k.name},
                       {"a_ms_per_step", or_null(k.a_ms_per_step)},
                       {"b_ms_per_step", or_null(k.b_ms_per_step)},
                       {"delta_ms_per_step", or_null(k.delta_ms_per_step)},
                       {"a_count_per_step", or_null(k.a_count_per_step)},
                       {"b_count_per_step", or_null(k.b_count_per_step)},
                       {"status", presence_name(k.presence)}});
  out["kernels"] = std::move(kernels);
  json copies = json::array();
  for (const DiffCopy& c : d.copies)
    copies.push_back({{"direction", c.direction},
                      {"a_ms_per_step", or_null(c.a_ms_per_step)},
                      {"b_ms_per_step", or_null(c.b_ms_per_step)},
                      {"delta_ms_per_step", or_null(c.delta_ms_per_step)},
                      {"a_bytes_per_step", or_null(c.a_bytes_per_step)},
                      {"b_bytes_per_step", or_null(c.b_bytes_per_step)},
                      {"a_count_per_step", or_null(c.a_count_per_step)},
                      {"b_count_per_step", or_null(c.b_count_per_step)},
                      {"a_bandwidth_gbps", or_null(c.a_bandwidth_gbps)},
                      {"b_bandwidth_gbps", or_null(c.b_bandwidth_gbps)},
                      {"a_pageable_fraction", or_null(c.a_pageable_fraction)},
                      {"b_pageable_fraction", or_null(c.b_pageable_fraction)}});
  out["copies"] = std::move(copies);
  const DiffRecommendations& r = d.recommendations;
  out["recommendations"] = {{"a", r.a}, {"b", r.b}, {"resolved", r.resolved}, {"new", r.added}};
  out["job"] = nullptr;
  return out;
}

json to_json(const JobDiff& d) {
  json out = to_json(d.slowest);
  out["kind"] = "job";
  json ranks = json::array();
  for (const RankDiff& r : d.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"a", r.diff.a.label},
                     {"b", r.diff.b.label},
                     {"step_time", step_time_json(r.diff.step_time)},
                     {"headline", headline_json(r.diff.headline)},
                     {"comparability", comparability_json(r.diff.comparability)},
                     {"breakdown", breakdown_json(r.diff.breakdown)},
                     {"verdict", verdict_json(r.diff)}});
  const auto straggler_rank = [](const JobDiffSide& s) {
    return s.summary.straggler ? json(s.summary.straggler->rank) : json(nullptr);
  };
  out["job"] = {{"pairing", std::string(name_of(d.pairing))},
                {"a", job_side_json(d.a)},
                {"b", job_side_json(d.b)},
                {"step_time", step_time_json(d.slowest.step_time)},
                {"verdict",
                 {{"a", std::string(name_of(d.a.summary.verdict))},
                  {"b", std::string(name_of(d.b.summary.verdict))},
                  {"changed", d.verdict_changed()}}},
                {"straggler", {{"a", straggler_rank(d.a)}, {"b", straggler_rank(d.b)}, {"changed", d.straggler_changed()}}},
                {"ranks", std::move(ranks)},
                {"only_in_a", one_side_json(d.only_in_a)},
                {"only_in_b", one_side_json(d.only_in_b)}};
  return out;
}

}  // namespace profile_train::model
