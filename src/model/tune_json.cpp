// tune.json: the one serialization of a TuneReport (model/tune.h; the format: tuner/tune_report.h).
#include "profile_train/model/tune.h"

#include "profile_train/common/json_path.h"

namespace profile_train::model {
namespace {

using nlohmann::json;

json config_json(const Config& c) {
  json o = json::object();
  for (const auto& [k, v] : c) o[k] = v;
  return o;
}

json to_json(const Diagnosis& d) {
  json o = json::object();
  if (!d.from_report) return o;
  o["bottleneck"] = std::string(name_of(d.bottleneck));
  o["confidence"] = d.confidence;
  o["summary"] = d.summary;
  json recs = json::array();
  for (const DiagnosisRecommendation& r : d.recommendations) {
    recs.push_back({{"id", r.id}, {"title", r.title}, {"knobs", r.knobs}});
  }
  o["recommendations"] = recs;
  return o;
}

json to_json(const TuneTargetInfo& t) {
  if (t.workload) {
    return {{"kind", "workload"}, {"model", t.model}, {"binary", t.binary}, {"args", t.args},
            {"applied_through", t.applied_through}};
  }
  return {{"kind", "command"}, {"argv", t.args}, {"placeholders", t.placeholders},
          {"applied_through", t.applied_through}};
}

json to_json(const LossRow& l) {
  return {{"status", l.status},
          {"compared_by", l.compared_by},
          {"points", l.points},
          {"baseline_runs", l.baseline_runs},
          {"trial_runs", l.trial_runs},
          {"non_finite", l.non_finite},
          {"baseline_mean", or_null(l.baseline_mean)},
          {"trial_mean", or_null(l.trial_mean)},
          {"difference", or_null(l.difference)},
          {"tolerance", or_null(l.tolerance)},
          {"spread", or_null(l.spread)},
          {"spread_dof", l.spread_dof},
          {"note", l.note}};
}

json to_json(const TrialRow& t) {
  json j = {{"index", t.index},
            {"config", config_json(t.config)},
            {"reason", t.reason},
            {"status", t.status},
            {"throughput", or_null(t.throughput)},
            {"stddev", or_null(t.stddev)},
            {"relative_sd", or_null(t.relative_sd)},
            {"values", t.values},
            {"measurements", t.measurements},
            {"early_stopped", t.early_stopped},
            {"accepted", t.accepted},
            {"is_baseline", t.is_baseline},
            {"is_best", t.is_best},
            {"duration_s", t.duration_s},
            {"peak_memory_bytes", or_null(t.peak_memory_bytes)},
            {"message", t.message},
            {"dirs", t.dirs},
            {"diagnosis", t.diagnosis ? to_json(*t.diagnosis) : json(nullptr)}};
  json pairs = json::array();
  for (const PairRow& p : t.pairs) {
    pairs.push_back({{"reference", p.reference}, {"reference_value", p.reference_value}, {"value", p.value},
                     {"phase", p.phase}});
  }
  j["pairs"] = pairs;
  if (t.vs_baseline) j["vs_baseline"] = *t.vs_baseline;
  if (t.compile_s) j["compile_s"] = *t.compile_s;
  j["loss"] = to_json(t.loss);
  if (t.placements) {
    json placements = json::array();
    for (const RayPlacement& p : *t.placements) placements.push_back(to_json(p));
    j["placements"] = placements;
  }
  return j;
}

json to_json(const TrialRef& t) {
  return {{"trial", t.trial}, {"config", config_json(t.config)}, {"throughput", t.throughput},
          {"stddev", t.stddev}, {"repeats", t.repeats}};
}

json to_json(const CodeChange& c) {
  json changes = json::array();
  for (const KnobChange& k : c.changes) changes.push_back({{"knob", k.knob}, {"from", k.from}, {"to", k.to}});
  json python = json::array();
  for (const PythonEdit& e : c.python) python.push_back({{"what", e.what}, {"code", e.code}});
  json o = {{"summary", c.summary}, {"changes", changes}, {"python", python}};
  if (c.command) o["command"] = *c.command;
  if (c.shim_overrides) o["shim_overrides"] = *c.shim_overrides;
  return o;
}

json to_json(const Execution& e) {
  json o = {{"executor", e.executor},
            {"parallel", e.parallel},
            {"wall_s", e.wall_s},
            {"sum_measurement_s", e.sum_measurement_s},
            {"saved_s", e.saved_s},
            {"parallel_speedup", or_null(e.parallel_speedup)}};
  if (e.ray) {
    const RayExecution& r = *e.ray;
    o["address"] = r.address;
    o["ray_version"] = r.ray_version;
    o["trial_gpus"] = r.trial_gpus;
    o["trial_cpus"] = r.trial_cpus;
    o["nodes"] = r.nodes;
    o["gpu_models"] = r.gpu_models;
    o["heterogeneous"] = r.heterogeneous;
    if (r.note) o["note"] = *r.note;
    o["overhead"] = {{"jobs", r.overhead.jobs}, {"submit_s", r.overhead.submit_s},
                     {"queued_s", r.overhead.queued_s}, {"log_fetch_s", r.overhead.log_fetch_s}};
  }
  return o;
}

}  // namespace

json to_json(const RayPlacement& p) {
  json j = {{"trial", p.trial_index},  {"repeat", p.repeat + 1},       {"dir", p.dir},
                      {"job_id", p.submission_id}, {"node_id", p.node_id},      {"host", p.host},
                      {"final_state", p.final_state}, {"submit_s", p.submit_s}, {"queued_s", p.queued_s},
                      {"running_s", p.running_s},   {"log_fetch_s", p.log_fetch_s}, {"polls", p.polls}};
  j["gpu"] = p.cuda_visible_devices.empty() ? json(nullptr) : json(p.cuda_visible_devices);
  j["gpu_name"] = p.gpu_name.empty() ? json(nullptr) : json(p.gpu_name);
  return j;
}

json to_json(const TuneReport& r) {
  json doc;
  doc["schema_version"] = r.schema_version;
  doc["tool"] = {{"name", r.tool.name}, {"version", r.tool.version}};
  doc["created_utc"] = r.created_utc;
  doc["target"] = to_json(r.target);
  doc["strategy"] = r.strategy;
  doc["metric"] = {{"unit", r.metric.unit}, {"note", r.metric.note}};
  json space = json::object();
  for (const auto& [knob, e] : r.space) space[knob] = {{"values", e.values}, {"auto", e.is_auto}};
  doc["space"] = space;
  const TuneBudget& b = r.budget;
  doc["budget"] = {{"max_trials", b.max_trials},         {"time_budget_s", b.time_budget_s},
                   {"trial_timeout_s", b.trial_timeout_s}, {"repeats", b.repeats},
                   {"baseline_repeats", b.baseline_repeats}, {"min_gain", b.min_gain},
                   {"noise_k", b.noise_k},                {"confirm_repeats", b.confirm_repeats}};
  if (b.max_memory_bytes) doc["budget"]["max_memory_bytes"] = *b.max_memory_bytes;
  const TuneStatus& s = r.status;
  doc["status"] = {{"complete", s.complete},         {"partial", s.partial},
                   {"stop_reason", s.stop_reason},   {"trials", s.trials},
                   {"measurements", s.measurements}, {"elapsed_s", s.elapsed_s},
                   {"oom_trials", s.oom_trials},     {"failed_trials", s.failed_trials},
                   {"rerun_pairs", s.rerun_pairs},   {"unreliable_pairs", s.unreliable_pairs}};
  doc["noise"] = {{"pooled_relative_sd", r.noise.pooled_relative_sd},
                  {"degrees_of_freedom", r.noise.degrees_of_freedom},
                  {"method", r.noise.method}};
  json skipped = json::array();
  for (const SkippedKnob& k : r.skipped_knobs) {
    skipped.push_back({{"knob", k.knob}, {"values", k.values}, {"reason", k.reason}});
  }
  doc["skipped_knobs"] = skipped;
  json runs = json::array();
  for (const RunRow& run : r.runs) {
    runs.push_back({{"trial", run.trial},
                    {"repeat", run.repeat},
                    {"phase", run.phase},
                    {"role", run.role},
                    {"status", run.status},
                    {"throughput", or_null(run.throughput)},
                    {"step_ms", or_null(run.step_ms)},
                    {"metric", run.metric},
                    {"warmup_excluded", run.warmup_excluded},
                    {"trimmed", run.trimmed},
                    {"excluded_ms", run.excluded_ms},
                    {"load_1m", or_null(run.load_1m)},
                    {"wall_s", or_null(run.wall_s)},
                    {"cpu_time_s", or_null(run.cpu_time_s)},
                    {"excluded", run.excluded}});
  }
  doc["runs"] = runs;
  json trials = json::array();
  for (const TrialRow& t : r.trials) trials.push_back(to_json(t));
  doc["trials"] = trials;
  json per_knob = json::object();
  for (const auto& [knob, rows] : r.per_knob) {
    json a = json::array();
    for (const PerKnobRow& row : rows) {
      a.push_back({{"value", row.value}, {"trials", row.trials}, {"best_throughput", or_null(row.best_throughput)},
                   {"at_best_config", or_null(row.at_best_config)}});
    }
    per_knob[knob] = a;
  }
  doc["per_knob"] = per_knob;
  doc["baseline"] = r.baseline ? to_json(*r.baseline) : json(nullptr);
  doc["best"] = r.best ? to_json(*r.best) : json(nullptr);
  json confirmation = nullptr;
  if (const auto& c = r.confirmation) {
    confirmation = {{"candidate", c->candidate},
                    {"ran", c->ran},
                    {"status", c->status},
                    {"claimed", c->claimed},
                    {"pairs", c->pairs},
                    {"ratio", or_null(c->ratio)},
                    {"low", or_null(c->low)},
                    {"high", or_null(c->high)},
                    {"degrees_of_freedom", c->degrees_of_freedom},
                    {"method", c->method},
                    {"load_1m", or_null(c->load_1m)},
                    {"search_load_1m", or_null(c->search_load_1m)},
                    {"cpus", c->cpus},
                    {"repeated", c->repeated}};
  }
  doc["confirmation"] = confirmation;
  json speedup = nullptr;
  if (const auto& sp = r.speedup) {
    speedup = {{"value", sp->value}, {"low", or_null(sp->low)}, {"high", or_null(sp->high)},
               {"claimed", sp->claimed}, {"interval", sp->interval}};
  }
  doc["speedup"] = speedup;
  doc["change"] = r.change ? to_json(*r.change) : json(nullptr);
  doc["quality"] = {{"allow_quality_change", r.quality.allow_quality_change},
                    {"method", r.quality.method},
                    {"winner", or_null(r.quality.winner)},
                    {"loss", r.quality.loss ? to_json(*r.quality.loss) : json(nullptr)}};
  doc["log"] = r.log;
  if (r.execution) doc["execution"] = to_json(*r.execution);
  return doc;
}

}  // namespace profile_train::model
