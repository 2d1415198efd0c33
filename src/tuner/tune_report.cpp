#include "profile_train/tuner/tune_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include "profile_train/common/format.h"

namespace profile_train::tuner {

constexpr const char* kIntervalMethod =
    "exp(mean +- t(dof) x sd / sqrt(n)) of ln(winner / baseline) over fresh interleaved pairs, the sd pooling "
    "their spread with the session's paired noise";

namespace {

namespace fs = std::filesystem;
using nlohmann::json;


std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json config_json(const Config& c) {
  json o = json::object();
  for (const auto& [k, v] : c) o[k] = v;
  return o;
}

json trial_ref(const Trial& t) {
  return {{"trial", t.index},
          {"config", config_json(t.config)},
          {"throughput", t.mean},
          {"stddev", t.stddev},
          {"repeats", t.values.size()}};
}

std::string py_bool(const std::string& v) { return v == "1" ? "True" : "False"; }

// Trial / baseline: exp(mean ln ratio) of its search pairs against the baseline, else the ratio of means.
double vs_baseline(const Trial& t, const TuneResult& result) {
  const Trial& base = result.trials.at(result.baseline);
  if (&t == &base) return 1.0;
  double sum = 0;
  int n = 0;
  for (const Pair& p : t.pairs) {
    if (p.reference == result.baseline) {
      sum += p.log_ratio();
      ++n;
    }
  }
  return n > 0 ? std::exp(sum / n) : t.mean / base.mean;
}

std::string interval_text(const PairedEstimate& e) {
  return "x" + format_fixed(e.ratio, 2) + " (95% interval " + format_fixed(e.low, 2) + "-" + format_fixed(e.high, 2) +
         ", " + std::to_string(e.pairs) + " pairs)";
}

}  // namespace


Speedup speedup_of(const Trial& best, const Trial& baseline, double pooled_relative_sd) {
  Speedup s;
  if (!best.ok() || !baseline.ok() || baseline.mean <= 0) return s;
  s.value = best.mean / baseline.mean;
  // Relative standard error of each mean: its own spread when it has repeats, else the pooled noise.
  auto rel_se = [&](const Trial& t) {
    const double n = static_cast<double>(t.values.size());
    const double rel_sd = (t.values.size() >= 2 && t.mean > 0) ? t.stddev / t.mean : pooled_relative_sd;
    return rel_sd / std::sqrt(n);
  };
  const double a = rel_se(best), b = rel_se(baseline);
  s.sigma = s.value * std::sqrt(a * a + b * b);
  s.sigma_known = best.values.size() >= 2 || baseline.values.size() >= 2 || pooled_relative_sd > 0;
  return s;
}

json code_change(const Config& baseline, const Config& best, const TuneTarget& target, bool on_gpu) {
  json out;
  json changes = json::array();
  Config changed;
  for (const auto& [k, v] : best) {
    auto it = baseline.find(k);
    const std::string from = it == baseline.end() ? std::string() : it->second;
    if (from != v) {
      changes.push_back({{"knob", k}, {"from", from}, {"to", v}});
      changed[k] = v;
    }
  }
  out["changes"] = changes;
  if (changed.empty()) {
    out["summary"] = "keep the baseline configuration: no knob gave a gain above the measured noise";
    out["python"] = json::array();
    return out;
  }
  std::string summary;
  for (const auto& c : changes) {
    summary += (summary.empty() ? "" : ", ") + c["knob"].get<std::string>() + " " + c["from"].get<std::string>() +
               " -> " + c["to"].get<std::string>();
  }
  out["summary"] = summary;

  // Python edits that make the best setting permanent in a PyTorch script.
  json py = json::array();
  std::string dl_args;
  auto dl = [&](const char* knob, const std::string& text) {
    if (changed.count(knob)) dl_args += ", " + text;
  };
  dl("batch_size", "batch_size=" + (changed.count("batch_size") ? changed["batch_size"] : ""));
  dl("num_workers", "num_workers=" + (changed.count("num_workers") ? changed["num_workers"] : ""));
  dl("pin_memory", "pin_memory=" + (changed.count("pin_memory") ? py_bool(changed["pin_memory"]) : ""));
  dl("prefetch_factor", "prefetch_factor=" + (changed.count("prefetch_factor") ? changed["prefetch_factor"] : ""));
  dl("persistent_workers",
     "persistent_workers=" + (changed.count("persistent_workers") ? py_bool(changed["persistent_workers"]) : ""));
  if (!dl_args.empty()) {
    py.push_back({{"what", "DataLoader arguments"}, {"code", "DataLoader(..." + dl_args + ")"}});
  }
  const std::string dev = on_gpu ? "cuda" : "cpu";
  if (changed.count("amp")) {
    const std::string a = changed["amp"];
    if (a == "bf16") {
      py.push_back({{"what", "mixed precision (bf16 autocast around forward + loss)"},
                    {"code", "with torch.autocast(\"" + dev + "\", dtype=torch.bfloat16):\n"
                             "    loss = loss_fn(model(inputs), targets)"}});
    } else if (a == "fp16") {
      py.push_back({{"what", "mixed precision (fp16 autocast + gradient scaler)"},
                    {"code", "scaler = torch.amp.GradScaler(\"" + dev + "\")\n"
                             "with torch.autocast(\"" + dev + "\", dtype=torch.float16):\n"
                             "    loss = loss_fn(model(inputs), targets)\n"
                             "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()"}});
    } else {
      py.push_back({{"what", "mixed precision off"}, {"code", "# remove the torch.autocast(...) context"}});
    }
  }
  if (changed.count("channels_last") && changed["channels_last"] == "1") {
    py.push_back({{"what", "channels-last memory format"},
                  {"code", "model = model.to(memory_format=torch.channels_last)\n"
                           "inputs = inputs.to(memory_format=torch.channels_last)"}});
  }
  if (changed.count("cudnn_benchmark")) {
    py.push_back({{"what", "cuDNN autotuner"},
                  {"code", "torch.backends.cudnn.benchmark = " + py_bool(changed["cudnn_benchmark"])}});
  }
  if (changed.count("tf32")) {
    py.push_back({{"what", "TF32 matmul / convolution"},
                  {"code", "torch.backends.cuda.matmul.allow_tf32 = " + py_bool(changed["tf32"]) +
                               "\ntorch.backends.cudnn.allow_tf32 = " + py_bool(changed["tf32"])}});
  }
  out["python"] = py;

  // The command line with the best values (what to run from now on).
  if (target.kind == TuneTarget::Kind::kWorkload) {
    std::vector<std::string> argv = {target.workload_binary.filename().string()};
    for (auto& a : workload_args(target, best, "result.json")) argv.push_back(a);
    argv.resize(argv.size() - 2);  // drop the tuner's --result FILE
    out["command"] = argv;
  } else {
    if (!placeholders_in(target.args).empty()) {
      auto sub = substitute_placeholders(target.args, best);
      if (sub.ok()) out["command"] = *sub;
    }
    const json ov = overrides_for(best, placeholders_in(target.args));
    if (!ov.empty()) out["shim_overrides"] = ov;  // PROFILE_TRAIN_OVERRIDES reproduces it without an edit
  }
  return out;
}

json tune_json(const TuneResult& result, const KnobSpace& space, const TuneReportContext& ctx) {
  json doc;
  doc["schema_version"] = std::string(kTuneSchemaVersion);
  doc["tool"] = {{"name", "profile-train"}, {"version", ctx.tool_version}};
  doc["created_utc"] = utc_now();
  json target;
  if (ctx.target.kind == TuneTarget::Kind::kWorkload) {
    target = {{"kind", "workload"}, {"model", ctx.target.model}, {"binary", ctx.target.workload_binary.string()},
              {"args", ctx.target.args}, {"applied_through", "workload flags"}};
  } else {
    const auto ph = placeholders_in(ctx.target.args);
    bool any_override = false;
    for (const KnobRange& r : space) {
      if (!ph.count(r.def->name)) any_override = true;
    }
    target = {{"kind", "command"}, {"argv", ctx.target.args}, {"placeholders", ph},
              {"applied_through", ph.empty()          ? "shim overrides (PROFILE_TRAIN_OVERRIDES)"
                                  : any_override ? "argv placeholders + shim overrides"
                                                 : "argv placeholders"}};
  }
  doc["target"] = target;
  doc["strategy"] = ctx.strategy;
  bool per_sample = true;
  for (const Trial& t : result.trials) {
    if (t.ok() && !t.per_sample) per_sample = false;
  }
  doc["metric"] = {{"unit", per_sample ? "samples/s" : "steps/s"},
                   {"note", ctx.metric_note.empty()
                                ? std::string("batch_size / steady-state step time of each run's report.json: the "
                                              "10%-trimmed mean of its steps after the leading warm-up steps "
                                              "(those above median + max(3 x 1.4826 MAD, 25%), at most half; "
                                              "runs[].warmup_excluded lists them); steps/s when the batch size "
                                              "is unknown")
                                : ctx.metric_note}};
  json sp = json::object();
  for (const KnobRange& r : space) sp[r.def->name] = {{"values", r.values}, {"auto", r.is_auto}};
  doc["space"] = sp;
  const TuneOptions& o = ctx.options;
  doc["budget"] = {{"max_trials", o.max_trials},         {"time_budget_s", o.time_budget_s},
                   {"trial_timeout_s", o.trial_timeout_s}, {"repeats", o.repeats},
                   {"baseline_repeats", std::max(o.repeats, o.baseline_repeats)},
                   {"min_gain", o.min_gain},             {"noise_k", o.noise_k},
                   {"confirm_repeats", o.confirm_repeats}};
  if (o.max_memory_bytes) doc["budget"]["max_memory_bytes"] = *o.max_memory_bytes;
  int measurements = 0;
  for (const Trial& t : result.trials) measurements += t.measurements;
  doc["status"] = {{"complete", result.complete},
                   {"partial", result.partial},
                   {"stop_reason", result.stop_reason},
                   {"trials", result.trials.size()},
                   {"measurements", measurements},
                   {"elapsed_s", result.elapsed_s},
                   {"oom_trials", result.oom_trials},
                   {"failed_trials", result.failed_trials}};
  doc["noise"] = {{"pooled_relative_sd", result.pooled_relative_sd},
                  {"degrees_of_freedom", result.noise_samples},
                  {"method", "spread of ln(candidate / reference) over interleaved pairs (around each pair group's "
                             "mean) and of consecutive repeats of the baseline, divided by sqrt(2) for one run"}};
  json skipped = json::array();
  for (const SkippedKnob& k : result.skipped) {
    skipped.push_back({{"knob", k.knob}, {"values", k.values}, {"reason", k.reason}});
  }
  doc["skipped_knobs"] = skipped;
  json runs = json::array();
  for (const RunRecord& r : result.runs) {
    runs.push_back({{"trial", r.trial},
                    {"repeat", r.repeat},
                    {"phase", r.phase},
                    {"role", r.role},
                    {"status", std::string(to_string(r.status))},
                    {"throughput", r.throughput > 0 ? json(r.throughput) : json(nullptr)},
                    {"step_ms", r.step_ms > 0 ? json(r.step_ms) : json(nullptr)},
                    {"metric", r.steady.method},
                    {"warmup_excluded", r.steady.warmup_excluded},
                    {"trimmed", r.steady.trimmed},
                    {"excluded_ms", r.steady.excluded_ms}});
  }
  doc["runs"] = runs;

  const Trial* base = result.baseline >= 0 ? &result.trials[result.baseline] : nullptr;
  const Trial* best = result.best >= 0 ? &result.trials[result.best] : nullptr;
  json trials = json::array();
  for (size_t i = 0; i < result.trials.size(); ++i) {
    const Trial& t = result.trials[i];
    json j = {{"index", t.index},
              {"config", config_json(t.config)},
              {"reason", t.reason},
              {"status", std::string(to_string(t.status))},
              {"throughput", t.ok() ? json(t.mean) : json(nullptr)},
              {"stddev", t.ok() ? json(t.stddev) : json(nullptr)},
              {"relative_sd", (t.ok() && t.values.size() > 1 && t.mean > 0) ? json(t.stddev / t.mean) : json(nullptr)},
              {"values", t.values},
              {"measurements", t.measurements},
              {"early_stopped", t.early_stopped},
              {"accepted", t.accepted},
              {"is_baseline", static_cast<int>(i) == result.baseline},
              {"is_best", static_cast<int>(i) == result.best},
              {"duration_s", t.duration_s},
              {"peak_memory_bytes", t.peak_memory_bytes ? json(*t.peak_memory_bytes) : json(nullptr)},
              {"message", t.message},
              {"dirs", t.dirs},
              {"diagnosis", t.diagnosis}};
    json pairs = json::array();
    for (const Pair& p : t.pairs) {
      pairs.push_back({{"reference", result.trials.at(p.reference).index}, {"reference_value", p.reference_value},
                       {"value", p.value}, {"phase", p.confirm ? "confirm" : "search"}});
    }
    j["pairs"] = pairs;
    if (base != nullptr && t.ok() && base->mean > 0) j["vs_baseline"] = vs_baseline(t, result);
    trials.push_back(std::move(j));
  }
  doc["trials"] = trials;

  // Throughput per knob value: the best trial with that value, and the trial that differs from the best
  // configuration only in this knob (the knob's marginal effect at the optimum) when it was measured.
  json per_knob = json::object();
  for (const KnobRange& r : space) {
    json rows = json::array();
    for (const std::string& v : r.values) {
      double best_tp = 0;
      int count = 0;
      json at_best = nullptr;
      for (const Trial& t : result.trials) {
        auto it = t.config.find(r.def->name);
        if (it == t.config.end() || it->second != v) continue;
        ++count;
        if (t.ok()) best_tp = std::max(best_tp, t.mean);
        if (best != nullptr && t.ok()) {
          Config a = t.config, b = best->config;
          a.erase(r.def->name);
          b.erase(r.def->name);
          if (a == b) at_best = t.mean;
        }
      }
      if (count == 0) continue;
      rows.push_back({{"value", v}, {"trials", count}, {"best_throughput", best_tp > 0 ? json(best_tp) : json(nullptr)},
                      {"at_best_config", at_best}});
    }
    per_knob[r.def->name] = rows;
  }
  doc["per_knob"] = per_knob;
  doc["baseline"] = base ? trial_ref(*base) : json(nullptr);
  doc["best"] = best ? trial_ref(*best) : json(nullptr);
  const Confirmation& cf = result.confirmation;
  json confirmation = nullptr;
  if (cf.candidate >= 0) {
    confirmation = {{"candidate", result.trials.at(cf.candidate).index},
                    {"ran", cf.ran},
                    {"status", cf.status},
                    {"claimed", cf.claimed},
                    {"pairs", cf.estimate.pairs},
                    {"ratio", cf.ran ? json(cf.estimate.ratio) : json(nullptr)},
                    {"low", cf.ran && cf.estimate.interval_known() ? json(cf.estimate.low) : json(nullptr)},
                    {"high", cf.ran && cf.estimate.interval_known() ? json(cf.estimate.high) : json(nullptr)},
                    {"degrees_of_freedom", cf.estimate.dof},
                    {"method", kIntervalMethod}};
  }
  doc["confirmation"] = confirmation;
  if (base != nullptr && best != nullptr) {
    json sp;
    if (best == base) {
      sp = {{"value", 1.0}, {"low", nullptr}, {"high", nullptr}, {"claimed", false},
            {"interval", "none: the baseline is kept"}};
    } else if (cf.ran && cf.candidate == result.best) {
      sp = {{"value", cf.estimate.ratio}, {"low", cf.estimate.low}, {"high", cf.estimate.high},
            {"claimed", cf.claimed}, {"interval", "95%, head to head: " + std::string(kIntervalMethod)}};
    } else {
      sp = {{"value", vs_baseline(*best, result)}, {"low", nullptr}, {"high", nullptr}, {"claimed", false},
            {"interval", "not measured: the head-to-head check was " + (cf.status.empty() ? std::string("not run") : cf.status)}};
    }
    doc["speedup"] = sp;
    json change = code_change(base->config, best->config, ctx.target, ran_on_gpu(best->report).value_or(false));
    if (best == base && cf.ran && !cf.claimed) {
      const Trial& c = result.trials.at(cf.candidate);
      change["summary"] = "keep the baseline configuration: trial #" + std::to_string(c.index) + " (" +
                          describe_config(c.config, space) + ") looked faster in the search, but the head-to-head "
                          "check did not confirm it: " + interval_text(cf.estimate);
    } else if (best != base && !cf.claimed) {
      change["summary"] = "unconfirmed (" + sp["interval"].get<std::string>() + "): " + change["summary"].get<std::string>();
    }
    doc["change"] = change;
  } else {
    doc["speedup"] = nullptr;
    doc["change"] = nullptr;
  }
  doc["log"] = result.log;
  return doc;
}

}  // namespace profile_train::tuner
