// report.json <-> Report, both directions walking the one key declaration of report_fields.h.
#include "profile_train/model/report_json.h"

#include <cstdint>
#include <string>
#include <utility>

#include "profile_train/common/atomic_file.h"
#include "profile_train/common/utf8.h"
#include "report_fields.h"

namespace profile_train::model {

using nlohmann::json;

namespace {

using namespace detail;

// ---- writing --------------------------------------------------------------------------------------------------
json write(const std::string& v) { return v; }
json write(double v) { return v; }
json write(int64_t v) { return v; }
json write(bool v) { return v; }
json write(Bottleneck b) { return std::string(name_of(b)); }
json write(Role r) { return std::string(name_of(r)); }
json write(const json& v) { return v; }
json write(const RoleValues& v);
json write(const PhaseValues& v);
template <class T>
json write(const std::optional<T>& v);
template <class T>
json write(const std::vector<T>& v);
template <ReportStruct T>
json write(const T& s);

struct Writer {
  json& o;
  template <class T>
  void operator()(const char* key, const T& value) { o[key] = write(value); }
  template <class T>
  void absent_if_unset(const char* key, const std::optional<T>& value) {
    if (value) o[key] = write(*value);
  }
  template <class T>
  void inline_group(const std::optional<T>& group) {
    if (group) fields(*this, *group);
  }
};

json write(const RoleValues& v) {
  json o = json::object();
  for (Role r : kAllRoles) o[std::string(name_of(r))] = write(v[r]);
  return o;
}
json write(const PhaseValues& v) {
  json o = json::object();
  for (Phase p : kAllPhases) o[std::string(name_of(p))] = write(v[p]);
  return o;
}
template <class T>
json write(const std::optional<T>& v) { return v ? write(*v) : json(nullptr); }
template <class T>
json write(const std::vector<T>& v) {
  json a = json::array();
  for (const auto& x : v) a.push_back(write(x));
  return a;
}
template <ReportStruct T>
json write(const T& s) {
  json o = json::object();
  Writer w{o};
  fields(w, s);
  return o;
}

// ---- reading --------------------------------------------------------------------------------------------------
// The first error wins; later reads are skipped.
struct ReadState {
  Status error;
  bool failed() const { return !error.ok(); }
  void fail(const std::string& path, const char* expected, const json& got) {
    if (!failed()) error = BadInput("report: " + path + ": expected " + expected + ", got " + got.type_name());
  }
};

void read(const json& j, std::string& out, const std::string& path, ReadState& st) {
  if (!j.is_string()) return st.fail(path, "a string", j);
  out = j.get<std::string>();
}
void read(const json& j, double& out, const std::string& path, ReadState& st) {
  if (!j.is_number()) return st.fail(path, "a number", j);
  out = j.get<double>();
}
void read(const json& j, int64_t& out, const std::string& path, ReadState& st) {
  if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)))
    return st.fail(path, "an integer", j);
  out = j.get<int64_t>();
}
void read(const json& j, bool& out, const std::string& path, ReadState& st) {
  if (!j.is_boolean()) return st.fail(path, "true or false", j);
  out = j.get<bool>();
}
void read(const json& j, json& out, const std::string&, ReadState&) { out = j; }
void read(const json& j, Bottleneck& out, const std::string& path, ReadState& st) {
  const auto b = j.is_string() ? bottleneck_from_name(j.get_ref<const std::string&>()) : std::nullopt;
  if (!b) return st.fail(path, "a bottleneck class (input_pipeline, ..., unknown)", j);
  out = *b;
}
void read(const json& j, Role& out, const std::string& path, ReadState& st) {
  const auto r = j.is_string() ? role_from_name(j.get_ref<const std::string&>()) : std::nullopt;
  if (!r) return st.fail(path, "a breakdown role (kernel, memcpy, ..., other)", j);
  out = *r;
}
void read(const json& j, RoleValues& out, const std::string& path, ReadState& st);
void read(const json& j, PhaseValues& out, const std::string& path, ReadState& st);
template <class T>
void read(const json& j, std::optional<T>& out, const std::string& path, ReadState& st);
template <class T>
void read(const json& j, std::vector<T>& out, const std::string& path, ReadState& st);
template <ReportStruct T>
void read(const json& j, T& out, const std::string& path, ReadState& st);

template <class T>
constexpr bool kIsOptional = false;
template <class T>
constexpr bool kIsOptional<std::optional<T>> = true;

// A key that is missing, or null where the model has no null, keeps the member's default: older and
// hand-made reports leave keys out (this tool writes every key the model has, and null only for optionals).
struct Reader {
  const json& o;
  const std::string& path;
  ReadState& st;
  template <class T>
  void operator()(const char* key, T& out) {
    if (st.failed()) return;
    auto it = o.find(key);
    if (it == o.end() || (!kIsOptional<T> && it->is_null())) return;
    read(*it, out, path + "." + key, st);
  }
  template <class T>
  void absent_if_unset(const char* key, std::optional<T>& out) { (*this)(key, out); }
  // The group is there when its first key is.
  template <class T>
  void inline_group(std::optional<T>& group) {
    if (st.failed() || !o.contains("command")) return;
    group.emplace();
    fields(*this, *group);
  }
};

template <class Values, class Names>
void read_named(const json& j, Values& out, const Names& names, const std::string& path, ReadState& st) {
  if (!j.is_object()) return st.fail(path, "an object", j);
  for (size_t i = 0; i < names.size() && !st.failed(); ++i) {
    auto it = j.find(std::string(names[i]));
    if (it != j.end()) read(*it, out.values[i], path + "." + std::string(names[i]), st);
  }
}
void read(const json& j, RoleValues& out, const std::string& path, ReadState& st) {
  read_named(j, out, kBreakdownRoleNames, path, st);
}
void read(const json& j, PhaseValues& out, const std::string& path, ReadState& st) {
  read_named(j, out, kPhaseNames, path, st);
}
template <class T>
void read(const json& j, std::optional<T>& out, const std::string& path, ReadState& st) {
  if (j.is_null()) {
    out.reset();
    return;
  }
  out.emplace();
  read(j, *out, path, st);
}
template <class T>
void read(const json& j, std::vector<T>& out, const std::string& path, ReadState& st) {
  if (!j.is_array()) return st.fail(path, "an array", j);
  out.clear();
  out.reserve(j.size());
  for (size_t i = 0; i < j.size() && !st.failed(); ++i) {
    out.emplace_back();
    read(j[i], out.back(), path + "[" + std::to_string(i) + "]", st);
  }
}
template <ReportStruct T>
void read(const json& j, T& out, const std::string& path, ReadState& st) {
  if (!j.is_object()) return st.fail(path, "an object", j);
  Reader r{j, path, st};
  fields(r, out);
}

template <class T>
StatusOr<T> read_part(const json& j, const std::string& path) {
  T out{};
  ReadState st;
  read(j, out, path, st);
  if (st.failed()) return st.error;
  return out;
}

// ---- UTF-8 repair ---------------------------------------------------------------------------------------------
// Counts as profile_train::repair_utf8 counts over the JSON: each string value once, and the keys of facts.
struct Utf8Repair {
  size_t changed = 0;
  void fix(std::string& s) {
    if (is_valid_utf8(s)) return;
    s = to_valid_utf8(s);
    ++changed;
  }
  void fix(json& j) { changed += repair_utf8(j); }
  template <class T>
  void fix(std::optional<T>& v) {
    if (v) fix(*v);
  }
  template <class T>
  void fix(std::vector<T>& v) {
    for (auto& x : v) fix(x);
  }
  template <ReportStruct T>
  void fix(T& s) { fields(*this, s); }
  template <class T>
  void fix(T&) {}  // numbers, booleans, enums, per-role and per-phase values: no text
  template <class T>
  void operator()(const char*, T& member) { fix(member); }
  template <class T>
  void absent_if_unset(const char*, std::optional<T>& member) { fix(member); }
  template <class T>
  void inline_group(std::optional<T>& group) { fix(group); }
};

}  // namespace

json to_json(const Report& report) { return write(report); }
json to_json(const std::vector<Recommendation>& recommendations) { return write(recommendations); }
json to_json(const Plan& plan) { return write(plan); }

StatusOr<Report> report_from_json(const json& j) {
  if (!j.is_object()) return BadInput(std::string("report: expected a JSON object, got ") + j.type_name());
  if (auto it = j.find("schema_version"); it != j.end() && it->is_string()) {
    const std::string& v = it->get_ref<const std::string&>();
    if (v.substr(0, v.find('.')) != "1")
      return Unsupported("report: schema_version " + v + " is not supported (this build reads 1.x)");
  }
  return read_part<Report>(j, "report");
}

StatusOr<std::vector<Recommendation>> recommendations_from_json(const json& j) {
  return read_part<std::vector<Recommendation>>(j, "recommendations");
}

StatusOr<std::optional<Plan>> plan_from_json(const json& j) {
  return read_part<std::optional<Plan>>(j, "plan");
}

size_t repair_report_utf8(Report& report) {
  Utf8Repair repair;
  repair.fix(report);
  if (repair.changed > 0)
    report.data_quality.notes.push_back(std::to_string(repair.changed) + " string(s) (file names, command arguments "
                                        "or trace names) were not valid UTF-8; the invalid bytes were replaced with "
                                        "U+FFFD");
  return repair.changed;
}

Status write_report_json(const std::filesystem::path& path, const Report& report) {
  std::string text;
  try {
    text = to_json(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  } catch (const std::exception& e) {  // allocation failure
    return Internal(path.string() + ": cannot serialize the report: " + e.what());
  }
  return write_file_atomic(path, text);
}

}  // namespace profile_train::model
