// One rule evaluated on a report: evidence formats, the condition, the gain bound with its mechanism caps, the
// rule's assumptions when a fact is unknown (the ranking and the plan: engine.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "profile_train/common/format.h"
#include "engine_internal.h"
#include "rule_set.h"

namespace profile_train::rules {
namespace detail {

bool is_known_format(const std::string& f) {
  static const char* kFormats[] = {"", "pct", "pct0", "f0", "f1", "f2", "f3", "int", "ms", "us", "bytes", "gbps", "x"};
  return std::any_of(std::begin(kFormats), std::end(kFormats), [&](const char* k) { return f == k; });
}

using profile_train::format_fixed;

std::optional<std::string> format_value(const expr::Value& v, const std::string& f) {
  using expr::ValueKind;
  if (!v.known()) return std::nullopt;
  if (v.kind != ValueKind::kNumber) {
    if (v.kind == ValueKind::kString) return v.string;
    if (v.kind == ValueKind::kBool) return std::string(v.boolean ? "true" : "false");
    if (f.empty() && v.kind == ValueKind::kList) {
      std::string out;
      for (const auto& item : *v.ref) {
        if (!out.empty()) out += ", ";
        out += item.is_string() ? item.get<std::string>() : item.dump();
      }
      return out;
    }
    return std::nullopt;  // a list/object cannot be rendered with a numeric format
  }
  const double n = v.number;
  if (f == "pct") return format_fixed(n * 100.0, 1) + "%";
  if (f == "pct0") return format_fixed(n * 100.0, 0) + "%";
  if (f == "f0") return format_fixed(n, 0);
  if (f == "f1") return format_fixed(n, 1);
  if (f == "f2") return format_fixed(n, 2);
  if (f == "f3") return format_fixed(n, 3);
  if (f == "int") return format_fixed(std::round(n), 0);
  if (f == "ms") return format_fixed(n, n >= 100 ? 0 : 1) + " ms";
  if (f == "us") return format_fixed(n, n >= 100 ? 0 : 1) + " us";
  if (f == "gbps") return format_fixed(n, 1) + " GB/s";
  if (f == "x") return format_fixed(n, 2) + "x";
  if (f == "bytes") {
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = n;
    int u = 0;
    while (std::fabs(x) >= 1024.0 && u < 4) {
      x /= 1024.0;
      ++u;
    }
    return u == 0 ? format_fixed(x, 0) + " B" : format_fixed(x, 1) + " " + kUnits[u];
  }
  return v.describe();
}

const std::map<std::string, expr::StaticType, std::less<>>& assume_locals() {
  static const std::map<std::string, expr::StaticType, std::less<>> k = {{"kernel_arch_min", expr::StaticType::kNumber}};
  return k;
}

}  // namespace detail

namespace {

// The least compute capability the GPU kernel names allow: cuBLAS/cuDNN/CUTLASS kernels carry the architecture
// they were built for (a kernel built for sm_90 does not run on an older GPU), so the highest one named is a
// lower bound on the device. Unknown (nullopt) when no top kernel's name tells.
std::optional<double> kernel_arch_min(const nlohmann::json& report) {
  static const std::pair<const char*, double> kPrefixes[] = {
      {"volta_", 7.0}, {"turing_", 7.5}, {"ampere_", 8.0}, {"sm80_", 8.0}, {"sm86_", 8.6}, {"sm89_", 8.9},
      {"hopper_", 9.0}, {"sm90_", 9.0}, {"sm90a_", 9.0}, {"sm100_", 10.0}, {"sm120_", 12.0}};
  std::optional<double> best;
  auto gpu = report.find("gpu");
  if (gpu == report.end() || !gpu->is_object()) return best;
  auto top = gpu->find("top_kernels");
  if (top == gpu->end() || !top->is_array()) return best;
  for (const auto& k : *top) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string()) continue;
    std::string_view name = k["name"].get_ref<const std::string&>();
    if (name.starts_with("void ")) name.remove_prefix(5);
    for (const auto& [prefix, cc] : kPrefixes)
      if (name.starts_with(prefix)) best = std::max(best.value_or(0.0), cc);
  }
  return best;
}

std::optional<double> number_at(const nlohmann::json& report, std::initializer_list<const char*> path) {
  const nlohmann::json* j = &report;
  for (const char* key : path) {
    if (!j->is_object()) return std::nullopt;
    auto it = j->find(key);
    if (it == j->end()) return std::nullopt;
    j = &*it;
  }
  if (!j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string pct_text(double share) { return detail::format_value(expr::Value::Number(share), "pct").value_or("?"); }

// The most the rule's mechanism can free, as a share of the step, and why (nullopt: no cap known).
// A host-side fix (gain.mechanism "host") cannot make the step shorter than the GPU's busy time: it frees at most
// the GPU idle share (on steps with GPU activity). A communication fix frees at most the exposed communication.
// Every fix frees at most the breakdown roles its share comes out of (gain.from).
std::optional<std::pair<double, std::string>> mechanism_cap(const detail::Rule& r, const nlohmann::json& report) {
  std::optional<std::pair<double, std::string>> cap;
  auto lower = [&](double v, std::string why) {
    v = std::max(0.0, v);
    if (!cap || v < cap->first) cap = std::make_pair(v, std::move(why));
  };
  if (!r.gain_from.empty()) {
    if (auto b = report.find("breakdown"); b != report.end() && b->is_object()) {
      double sum = 0;
      bool all = true;
      for (const auto& role : r.gain_from) {
        auto it = b->find(role);
        if (it == b->end() || !it->is_number()) all = false;
        else sum += std::max(0.0, it->get<double>());
      }
      std::string roles;
      for (const auto& role : r.gain_from) roles += (roles.empty() ? "" : " + ") + role;
      if (all) lower(sum, "the breakdown roles it acts on (" + roles + ") are " + pct_text(sum) + " of the step");
    }
  }
  if (r.mechanism == detail::Mechanism::kHost) {
    auto has_gpu = report.find("source");
    const bool gpu = has_gpu != report.end() && has_gpu->is_object() && has_gpu->value("has_gpu_activity", false) == true;
    if (auto idle = number_at(report, {"gpu", "idle", "fraction"}); gpu && idle)
      lower(*idle, "a host-side fix can free only the GPU idle time it causes, and the GPU idles " + pct_text(*idle) +
                       " of the step");
  } else if (r.mechanism == detail::Mechanism::kCommunication) {
    auto exposed = number_at(report, {"communication", "exposed_fraction"});
    if (!exposed) exposed = number_at(report, {"collectives", "exposed_share"});
    if (!exposed) exposed = number_at(report, {"breakdown", "communication"});
    if (exposed)
      lower(*exposed, "a communication fix can free only the exposed communication, " + pct_text(*exposed) +
                          " of the step");
  }
  return cap;
}

}  // namespace

double round3(double x) { return std::round(x * 1000.0) / 1000.0; }

double round6(double x) { return std::round(x * 1e6) / 1e6; }

std::optional<std::string> render(const detail::Template& t, const nlohmann::json& report, const expr::Locals& locals) {
  std::string line;
  for (const auto& part : t.parts) {
    if (!part.expression) {
      line += part.literal;
      continue;
    }
    auto s = detail::format_value(part.expression->Evaluate(report, locals), part.format);
    if (!s) return std::nullopt;
    line += *s;
  }
  return line;
}

Outcome evaluate(const detail::Rule& r, const nlohmann::json& report) {
  Outcome o;
  o.when = r.when.Evaluate(report);
  o.removable = r.removable_share.Evaluate(report);
  if (o.removable.kind == expr::ValueKind::kNumber && std::isfinite(o.removable.number)) {
    double share = std::clamp(o.removable.number, 0.0, detail::kMaxRemovable);
    if (auto cap = mechanism_cap(r, report); cap && share > cap->first + 1e-9) {
      share = cap->first;
      o.cap_note = "Bound capped at " + pct_text(share) + " of the step (the rule's estimate was " +
                   pct_text(std::min(o.removable.number, detail::kMaxRemovable)) + "): " + cap->second;
      o.removable = expr::Value::Number(share);
    }
    // One rounding, used by the recommendation and the plan alike: both show the same bound.
    o.share = round6(share);
    o.speedup = round3(1.0 / (1.0 - o.share));
    o.gain_known = true;
  }
  expr::Locals locals;
  locals["speedup_max"] = o.gain_known ? expr::Value::Number(o.speedup) : expr::Value::Unknown();
  locals["removable_share"] = o.removable;
  for (const auto& t : r.evidence) {
    if (t.when && !t.when->Evaluate(report, locals).is_true()) continue;
    auto line = render(t, report, locals);
    if (line) o.evidence.push_back(*line);
    else o.evidence_dropped.push_back(t.source);
  }
  if (!o.cap_note.empty()) o.evidence.push_back(o.cap_note);
  return o;
}

namespace {

void set_path(nlohmann::json& root, const std::string& dotted, const expr::Value& v) {
  nlohmann::json* cur = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    if (!cur->is_object()) *cur = nlohmann::json::object();
    cur = &(*cur)[dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  switch (v.kind) {
    case expr::ValueKind::kNumber: *cur = v.number; break;
    case expr::ValueKind::kBool: *cur = v.boolean; break;
    case expr::ValueKind::kString: *cur = v.string; break;
    default: *cur = v.ref != nullptr ? *v.ref : nlohmann::json(nullptr); break;
  }
}

bool path_known(const nlohmann::json& report, const std::string& dotted) {
  const nlohmann::json* cur = &report;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    if (!cur->is_object()) return false;
    auto it = cur->find(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (it == cur->end()) return false;
    cur = &*it;
    if (dot == std::string::npos) return !cur->is_null();
    start = dot + 1;
  }
}

}  // namespace

// The report with the rule's assumptions applied to the facts it lacks; nullopt when none applies.
std::optional<AssumedEval> assume(const detail::Rule& r, const nlohmann::json& report) {
  if (r.assume.empty()) return std::nullopt;
  expr::Locals locals;
  const auto arch = kernel_arch_min(report);
  locals["kernel_arch_min"] = arch ? expr::Value::Number(*arch) : expr::Value::Unknown();
  auto out = std::make_shared<nlohmann::json>();
  std::vector<std::string> done;
  std::string note;
  for (const auto& a : r.assume) {
    if (std::find(done.begin(), done.end(), a.metric) != done.end() || path_known(report, a.metric)) continue;
    if (a.when && !a.when->Evaluate(report, locals).is_true()) continue;
    const expr::Value v = a.value.Evaluate(report, locals);
    if (!v.known()) continue;
    if (done.empty()) *out = report;
    set_path(*out, a.metric, v);
    done.push_back(a.metric);
    expr::Locals text_locals = locals;
    text_locals["assumed"] = v;
    note += (note.empty() ? "Assumed, since the trace does not record " : "; and, since it does not record ") +
            a.metric + ": " + render(a.text, report, text_locals).value_or(a.text.source) + ".";
    if (!a.confirm.empty()) note += " Confirm first: " + a.confirm;
  }
  if (done.empty()) return std::nullopt;
  return AssumedEval{std::move(out), note};
}

}  // namespace profile_train::rules
