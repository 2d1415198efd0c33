// job.json both ways: the typed job summary as JSON. Every key is always written (null when unknown) except
// communication_measured, which is absent when fewer than two ranks have a step time.
#include "profile_train/model/job_json.h"

#include <algorithm>
#include <string>

#include "profile_train/common/atomic_file.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/utf8.h"

namespace profile_train::model {

using nlohmann::json;

namespace {

json rank_json(const JobRank& r) {
  return {{"rank", r.rank},
          {"file", r.file},
          {"verdict", std::string(name_of(r.verdict))},
          {"mean_step_ms", or_null(r.mean_step_ms)},
          {"input_ms", or_null(r.input_ms)},
          {"compute_ms", or_null(r.compute_ms)},
          {"communication_wait_ms", or_null(r.communication_wait_ms)},
          {"work_ms", or_null(r.work_ms)}};
}

json straggler_json(const Straggler& s) {
  return {{"rank", s.rank},
          {"file", s.file},
          {"phase", std::string(name_of(s.phase))},
          {"excess_ms", s.excess_ms},
          {"phase_excess_ms", s.phase_excess_ms},
          {"others_wait_ms", or_null(s.others_wait_ms)}};
}

json collectives_json(const JobCollectives& c) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"kind", r.kind},
                    {"process_group", or_null(r.process_group)},
                    {"bytes", or_null(r.bytes)},
                    {"size_bucket", r.size_bucket},
                    {"matched", r.matched},
                    {"ranks", r.ranks},
                    {"calls_per_step", r.calls_per_step},
                    {"transfer_ms", r.transfer_ms},
                    {"wait_ms", r.wait_ms},
                    {"wait_share", r.wait_share},
                    {"busbw_gbps", or_null(r.busbw_gbps)},
                    {"last_rank", r.last_rank},
                    {"last_rank_share", r.last_rank_share},
                    {"last_rank_phase", r.last_rank_phase ? json(std::string(name_of(*r.last_rank_phase))) : json(nullptr)},
                    {"wait_ms_by_rank", r.wait_ms_by_rank}});
  }
  return {{"matched_by", c.matched_by},
          {"matched", c.matched},
          {"unmatched", c.unmatched},
          {"wait_ms_per_step", c.wait_ms_per_step},
          {"transfer_ms_per_step", c.transfer_ms_per_step},
          {"last_rank", or_null(c.last_rank)},
          {"last_rank_phase", c.last_rank_phase ? json(std::string(name_of(*c.last_rank_phase))) : json(nullptr)},
          {"rows", std::move(rows)},
          {"summary", c.summary}};
}

}  // namespace

json to_json(const JobSummary& job) {
  json out = {{"ranks", json::array()},
              {"slowest_rank", or_null(job.slowest_rank)},
              {"slowdown", or_null(job.slowdown)},
              {"step_skew", or_null(job.step_skew)},
              {"communication_skew_ms", or_null(job.communication_skew_ms)},
              {"straggler", job.straggler ? straggler_json(*job.straggler) : json(nullptr)},
              {"verdict", std::string(name_of(job.verdict))},
              {"straggler_threshold", job.straggler_threshold},
              {"summary", job.summary}};
  for (const auto& r : job.ranks) out["ranks"].push_back(rank_json(r));
  if (job.communication_measured) out["communication_measured"] = *job.communication_measured;
  if (job.collectives) out["collectives"] = collectives_json(*job.collectives);
  if (!job.missing.empty()) {
    out["missing"] = json::array();
    for (const auto& m : job.missing) out["missing"].push_back({{"file", m.file}, {"reason", m.reason}});
  }
  return out;
}

Status write_job_json(const std::filesystem::path& path, const JobSummary& job) {
  json doc = to_json(job);
  repair_utf8(doc);  // file names need not be UTF-8
  return write_file_atomic(path, doc.dump(2) + "\n");
}

namespace {

// Reads the keys of one job.json object; the first key of the wrong type is kept as the error.
struct JobReader {
  const json& o;
  std::string where;  // "" at the top, "ranks[1]." / "straggler." inside
  std::string* error;

  const json* get(const char* key) const {
    auto it = o.find(key);
    return it == o.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(const char* key, const char* what) const {
    if (error->empty()) *error = where + key + " is not " + what;
  }
  void number(const char* key, std::optional<double>& out) const {
    if (const json* v = get(key)) v->is_number() ? void(out = v->get<double>()) : fail(key, "a number");
  }
  void number(const char* key, double& out) const {
    std::optional<double> v;
    number(key, v);
    if (v) out = *v;
  }
  void integer(const char* key, std::optional<int64_t>& out) const {
    if (const json* v = get(key)) v->is_number_integer() ? void(out = v->get<int64_t>()) : fail(key, "an integer");
  }
  void integer(const char* key, int64_t& out) const {
    std::optional<int64_t> v;
    integer(key, v);
    if (v) out = *v;
  }
  void text(const char* key, std::string& out) const {
    if (const json* v = get(key)) v->is_string() ? void(out = v->get<std::string>()) : fail(key, "a string");
  }
  void boolean(const char* key, std::optional<bool>& out) const {
    if (const json* v = get(key)) v->is_boolean() ? void(out = v->get<bool>()) : fail(key, "true or false");
  }
  void text(const char* key, std::optional<std::string>& out) const {
    if (!get(key)) return;
    std::string v;
    text(key, v);
    out = std::move(v);
  }
  template <class E, size_t N>
  void name(const char* key, const std::array<std::string_view, N>& names, std::optional<E>& out) const {
    if (!get(key)) return;
    E v{};
    name(key, names, v);
    out = v;
  }
  template <class E, size_t N>
  void name(const char* key, const std::array<std::string_view, N>& names, E& out) const {
    const json* v = get(key);
    if (v == nullptr) return;
    const auto it = v->is_string() ? std::find(names.begin(), names.end(), v->get<std::string>()) : names.end();
    if (it == names.end()) return fail(key, "a known name");
    out = static_cast<E>(it - names.begin());
  }
};

}  // namespace

StatusOr<JobSummary> job_summary_from_json(const json& j) {
  if (!j.is_object()) return BadInput("job.json: not a job summary (top level is not an object)");
  std::string error;
  JobSummary out;
  const JobReader top{j, "", &error};
  if (const json* ranks = top.get("ranks")) {
    if (!ranks->is_array()) {
      top.fail("ranks", "an array");
    } else {
      for (size_t i = 0; i < ranks->size() && error.empty(); ++i) {
        const json& r = (*ranks)[i];
        const std::string where = "ranks[" + std::to_string(i) + "]";
        if (!r.is_object()) {
          error = where + " is not an object";
          break;
        }
        const JobReader k{r, where + ".", &error};
        JobRank row;
        k.integer("rank", row.rank);
        k.text("file", row.file);
        k.name("verdict", kBottleneckNames, row.verdict);
        k.number("mean_step_ms", row.mean_step_ms);
        k.number("input_ms", row.input_ms);
        k.number("compute_ms", row.compute_ms);
        k.number("communication_wait_ms", row.communication_wait_ms);
        k.number("work_ms", row.work_ms);
        out.ranks.push_back(std::move(row));
      }
    }
  }
  top.integer("slowest_rank", out.slowest_rank);
  top.number("slowdown", out.slowdown);
  top.number("step_skew", out.step_skew);
  top.number("communication_skew_ms", out.communication_skew_ms);
  if (const json* s = top.get("straggler")) {
    if (!s->is_object()) {
      top.fail("straggler", "an object");
    } else {
      const JobReader k{*s, "straggler.", &error};
      Straggler st;
      k.integer("rank", st.rank);
      k.text("file", st.file);
      k.name("phase", kStragglerPhaseNames, st.phase);
      k.number("excess_ms", st.excess_ms);
      k.number("phase_excess_ms", st.phase_excess_ms);
      k.number("others_wait_ms", st.others_wait_ms);
      out.straggler = std::move(st);
    }
  }
  top.name("verdict", kJobVerdictNames, out.verdict);
  top.number("straggler_threshold", out.straggler_threshold);
  top.boolean("communication_measured", out.communication_measured);
  top.text("summary", out.summary);
  if (const json* m = top.get("missing"); m != nullptr && m->is_array()) {
    for (const auto& x : *m)
      if (x.is_object())
        out.missing.push_back({x.value("file", std::string()), x.value("reason", std::string())});
  }
  if (const json* c = top.get("collectives")) {
    if (!c->is_object()) {
      top.fail("collectives", "an object");
    } else {
      const JobReader k{*c, "collectives.", &error};
      JobCollectives jc;
      k.text("matched_by", jc.matched_by);
      k.integer("matched", jc.matched);
      k.integer("unmatched", jc.unmatched);
      k.number("wait_ms_per_step", jc.wait_ms_per_step);
      k.number("transfer_ms_per_step", jc.transfer_ms_per_step);
      k.integer("last_rank", jc.last_rank);
      k.name("last_rank_phase", kStragglerPhaseNames, jc.last_rank_phase);
      k.text("summary", jc.summary);
      if (const json* rows = k.get("rows"); rows != nullptr && rows->is_array()) {
        for (size_t i = 0; i < rows->size() && error.empty(); ++i) {
          if (!(*rows)[i].is_object()) {
            error = "collectives.rows[" + std::to_string(i) + "] is not an object";
            break;
          }
          const JobReader rr{(*rows)[i], "collectives.rows[" + std::to_string(i) + "].", &error};
          JobCollectiveRow row;
          rr.text("kind", row.kind);
          rr.text("process_group", row.process_group);
          rr.integer("bytes", row.bytes);
          rr.text("size_bucket", row.size_bucket);
          rr.integer("matched", row.matched);
          rr.integer("ranks", row.ranks);
          rr.number("calls_per_step", row.calls_per_step);
          rr.number("transfer_ms", row.transfer_ms);
          rr.number("wait_ms", row.wait_ms);
          rr.number("wait_share", row.wait_share);
          rr.number("busbw_gbps", row.busbw_gbps);
          rr.integer("last_rank", row.last_rank);
          rr.number("last_rank_share", row.last_rank_share);
          rr.name("last_rank_phase", kStragglerPhaseNames, row.last_rank_phase);
          if (const json* w = rr.get("wait_ms_by_rank"); w != nullptr && w->is_array())
            for (const auto& x : *w) row.wait_ms_by_rank.push_back(x.is_number() ? x.get<double>() : 0.0);
          jc.rows.push_back(std::move(row));
        }
      }
      out.collectives = std::move(jc);
    }
  }
  if (!error.empty()) return BadInput("job.json: not a job summary (" + error + ")");
  return out;
}

json to_json(const RankFacts& f) {
  json rows = json::array();
  for (const auto& c : f.collectives)
    rows.push_back(json::array({c.kind, c.process_group, c.seq, c.ordinal, c.step, c.step_index, c.start_ns, c.dur_ns,
                                c.exposed_ns, or_null(c.bytes), c.group_size}));
  return {{"file", f.file},
          {"rank", or_null(f.rank)},
          {"world_size", or_null(f.world_size)},
          {"verdict", std::string(name_of(f.verdict))},
          {"mean_step_ms", or_null(f.mean_step_ms)},
          {"input_ms", f.input_ms},
          {"communication_ms", f.communication_ms},
          {"communication_measured", f.communication_measured},
          {"exposed_fraction", or_null(f.exposed_fraction)},
          {"collectives", std::move(rows)}};
}

StatusOr<RankFacts> rank_facts_from_json(const json& j) {
  if (!j.is_object()) return BadInput("rank facts: not an object");
  std::string error;
  const JobReader k{j, "", &error};
  RankFacts f;
  k.text("file", f.file);
  k.integer("rank", f.rank);
  k.integer("world_size", f.world_size);
  k.name("verdict", kBottleneckNames, f.verdict);
  k.number("mean_step_ms", f.mean_step_ms);
  k.number("input_ms", f.input_ms);
  k.number("communication_ms", f.communication_ms);
  if (const json* m = k.get("communication_measured")) {
    if (m->is_boolean()) f.communication_measured = m->get<bool>();
    else k.fail("communication_measured", "true or false");
  }
  k.number("exposed_fraction", f.exposed_fraction);
  if (const json* rows = k.get("collectives")) {
    if (!rows->is_array()) return BadInput("rank facts: collectives is not an array");
    f.collectives.reserve(rows->size());
    for (size_t i = 0; i < rows->size(); ++i) {
      const json& r = (*rows)[i];
      auto bad = [&] { return BadInput("rank facts: collectives[" + std::to_string(i) + "] is not a collective row"); };
      if (!r.is_array() || r.size() != 11 || !r[0].is_string() || !r[1].is_string() || !r[4].is_string()) return bad();
      for (size_t c : {2u, 3u, 5u, 6u, 7u, 8u, 10u})
        if (!r[c].is_number_integer()) return bad();
      if (!r[9].is_null() && !r[9].is_number_integer()) return bad();
      CollectiveInstance in;
      in.kind = r[0].get<std::string>();
      in.process_group = r[1].get<std::string>();
      in.seq = r[2].get<int64_t>();
      in.ordinal = r[3].get<int64_t>();
      in.step = r[4].get<std::string>();
      in.step_index = r[5].get<int64_t>();
      in.start_ns = r[6].get<int64_t>();
      in.dur_ns = r[7].get<int64_t>();
      in.exposed_ns = r[8].get<int64_t>();
      if (!r[9].is_null()) in.bytes = r[9].get<int64_t>();
      in.group_size = static_cast<int32_t>(r[10].get<int64_t>());
      f.collectives.push_back(std::move(in));
    }
  }
  if (!error.empty()) return BadInput("rank facts: " + error);
  return f;
}

}  // namespace profile_train::model
