// `analyze --executor ray` (analyze_ray.h): shards of rank files as Ray jobs, their records read back from the
// jobs' logs.
#include "analyze_ray.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <thread>

#include "profile_train/common/terminal.h"
#include "profile_train/model/job_json.h"
#include "profile_train/tuner/ray_client.h"
#include "profile_train/tuner/ray_runner.h"

namespace profile_train::cli {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The last lines of a job's log: the reason a shard failed, in one line.
std::string log_tail(const std::string& log, size_t max = 300) {
  std::string t = log;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() > max) t = "..." + t.substr(t.size() - max);
  for (auto& c : t)
    if (c == '\n') c = ' ';
  return t;
}

struct Shard {
  std::vector<size_t> files;  // indices into the command's files
  std::string id, token, dir;
  double submitted_at = 0;
  double failing_since = -1;  // status requests failing since then
  bool done = false;
};
constexpr double kStatusGiveUpS = 60;  // a shard whose status cannot be read this long is given up

}  // namespace

size_t default_shard_size(size_t files, int parallel) {
  const size_t slots = 2 * static_cast<size_t>(std::max(1, parallel));
  return std::max<size_t>(1, (files + slots - 1) / slots);
}

StatusOr<std::vector<RayTraceResult>> analyze_on_ray(const std::vector<std::string>& files, const RayAnalyzeOptions& o,
                                                     std::ostream& progress) {
  auto client = tuner::RayClient::connect(o.address);
  if (!client.ok()) return client.status();
  auto version = (*client)->check_version();
  if (!version.ok()) return version.status();
  std::vector<RayTraceResult> results(files.size());
  std::vector<std::string> abs(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    results[i].file = files[i];
    std::error_code ec;
    const auto p = std::filesystem::absolute(files[i], ec);  // the worker's job runs in a folder of Ray's
    abs[i] = ec ? files[i] : p.lexically_normal().string();
  }
  const size_t per = o.shard_size > 0 ? o.shard_size : default_shard_size(files.size(), o.parallel);
  std::vector<Shard> shards;
  for (size_t i = 0; i < files.size(); i += per) {
    Shard s;
    for (size_t k = i; k < std::min(files.size(), i + per); ++k) s.files.push_back(k);
    s.token = o.session + "-" + std::to_string(shards.size());
    s.id = "profile-train-analyze-" + s.token;
    s.dir = o.worker_tmp + "/profile-train-ray/" + s.id;
    shards.push_back(std::move(s));
  }
  progress << "ray: " << files.size() << " trace(s) in " << shards.size() << " shard(s) of up to " << per
           << ", " << o.parallel << " at a time, on Ray " << terminal_safe(*version) << " at " << terminal_safe(o.address)
           << "\n";

  auto fail_shard = [&](Shard& s, const std::string& why) {
    for (size_t k : s.files) {
      results[k].ok = false;
      results[k].exit_code = kExitBadInput;
      results[k].error = why;
    }
    s.done = true;
  };
  auto submit = [&](Shard& s) {
    std::vector<std::string> argv = {o.self_exe, "analyze"};
    for (size_t k : s.files) argv.push_back(abs[k]);
    argv.insert(argv.end(), o.shard_args.begin(), o.shard_args.end());
    for (const std::string& a : {std::string("--quiet"), std::string("--out"), s.dir + "/out", std::string("--shard-out"),
                                 s.dir + "/shard.json"})
      argv.push_back(a);
    tuner::RayJobSpec spec;
    spec.submission_id = s.id;
    spec.entrypoint = tuner::ray_entrypoint(argv, s.dir, s.token, {"shard.json"});
    spec.num_cpus = 1;
    spec.metadata = {{"profile-train", "analyze shard"}};
    auto id = (*client)->submit(spec);
    s.submitted_at = now_s();
    if (!id.ok()) fail_shard(s, "the shard's Ray job could not be submitted: " + id.status().message());
  };
  // Reads a finished shard's records back; every file of the shard gets a result.
  auto collect = [&](Shard& s, const tuner::RayJobInfo& info) {
    auto log = (*client)->logs(s.id);
    const auto out = tuner::parse_entrypoint_output(log.ok() ? *log : std::string(), s.token);
    auto it = out.files.find("shard.json");
    nlohmann::json shard = it == out.files.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
    if (!shard.is_object() || !shard.contains("traces") || !shard["traces"].is_array()) {
      std::string why = "its Ray job ended " + info.state + (out.host.empty() ? "" : " on " + out.host);
      if (out.finished && out.exit_code > 128)
        why += ": the shard's analyze was killed by signal " + std::to_string(out.exit_code - 128) +
               " before it wrote its results";
      else if (out.finished)
        why += ": the shard's analyze exited " + std::to_string(out.exit_code) + " without writing its results";
      else
        why += ": the shard's analyze did not finish (its worker process or its node was lost)";
      // Ray's own message, without the entry point and the log it quotes.
      std::string msg = info.message.substr(0, info.message.find(", last available logs"));
      if (!msg.empty() && out.host.empty()) why += " (" + log_tail(msg, 200) + ")";
      fail_shard(s, why);
      return;
    }
    const auto& traces = shard["traces"];
    for (size_t j = 0; j < s.files.size(); ++j) {
      RayTraceResult& r = results[s.files[j]];
      if (j >= traces.size() || !traces[j].is_object()) {
        r.error = "the shard returned no record of it";
        r.exit_code = kExitBadInput;
        continue;
      }
      const auto& e = traces[j];
      r.exit_code = e.value("exit_code", kExitBadInput);
      if (e.contains("error") && e["error"].is_string()) r.error = e["error"].get<std::string>();
      if (e.contains("facts")) {
        auto f = model::rank_facts_from_json(e["facts"]);
        if (f.ok()) {
          r.facts = std::move(*f);
          r.facts->file = r.file;  // the path as the user gave it, as the local path names it
        } else {
          r.error = f.status().message();
        }
      }
      if (e.contains("files") && e["files"].is_object()) {
        r.report_json = e["files"].value("report.json", std::string());
        r.report_html = e["files"].value("report.html", std::string());
      }
      if (e.contains("row")) r.row = e["row"];
      r.ok = r.facts.has_value() && r.error.empty();
      if (!r.ok && r.error.empty()) r.error = "the analysis failed (exit " + std::to_string(r.exit_code) + ")";
    }
    s.done = true;
  };

  std::deque<Shard*> queue;
  for (auto& s : shards) queue.push_back(&s);
  std::vector<Shard*> live;
  size_t finished = 0;
  while (finished < shards.size()) {
    while (!queue.empty() && static_cast<int>(live.size()) < std::max(1, o.parallel)) {
      Shard* s = queue.front();
      queue.pop_front();
      submit(*s);
      if (s->done) ++finished;
      else live.push_back(s);
    }
    for (auto it = live.begin(); it != live.end();) {
      Shard& s = **it;
      auto st = (*client)->status(s.id);
      if (!st.ok()) {
        if (s.failing_since < 0) s.failing_since = now_s();
        if (now_s() - s.failing_since > kStatusGiveUpS) {
          (void)(*client)->stop(s.id);
          fail_shard(s, "its Ray job's status could not be read for " + std::to_string(static_cast<int>(kStatusGiveUpS)) +
                            " s: " + st.status().message());
        }
      } else {
        s.failing_since = -1;
      }
      if (s.done) {
        // given up above
      } else if (st.ok() && st->terminal()) {
        collect(s, *st);
      } else if (st.ok() && st->state == "PENDING" && now_s() - s.submitted_at > o.pending_timeout_s) {
        (void)(*client)->stop(s.id);
        fail_shard(s, "its Ray job was still PENDING after " + std::to_string(static_cast<int>(o.pending_timeout_s)) +
                          " s: no node had a free CPU");
      }
      if (s.done) {
        ++finished;
        size_t ok = 0;
        for (size_t k : s.files) ok += results[k].ok ? 1 : 0;
        progress << "ray: shard " << finished << "/" << shards.size() << " (" << s.id << "): " << ok << " of "
                 << s.files.size() << " trace(s) analysed\n";
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    if (finished < shards.size()) std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_interval_s));
  }
  return results;
}

}  // namespace profile_train::cli
