#include "profile_train/tuner/ray_runner.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "profile_train/common/atomic_file.h"
#include "profile_train/common/format.h"
#include "runner_util.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
using detail::now_s;
using detail::zero_padded;

namespace {

namespace fs = std::filesystem;

// POSIX shell single quoting: 'it'\''s'.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string last_log_line(const std::string& text) {
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' ')) --end;
  if (end == 0) return "";
  size_t begin = text.rfind('\n', end - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = text.substr(begin, end - begin);
  if (line.size() > 300) line = line.substr(0, 297) + "...";
  return line;
}

// Resource amounts: "1", "0.5".
std::string amount_str(double v) { return format_fixed(v, v == std::floor(v) ? 0 : 2); }

std::string seconds(double s) { return format_fixed(s, s < 10 ? 1 : 0) + " s"; }

enum StopWhy { kNotStopped = 0, kStopTimeout, kStopInterrupt, kStopPending, kStopLostContact };

constexpr double kLostContactAfterS = 30;  // status requests failing this long: the dashboard is gone

}  // namespace

std::string ray_entrypoint(const std::vector<std::string>& argv, const std::string& worker_dir, const std::string& token,
                           const std::vector<std::string>& files) {
  const std::string mark = "@@PT " + token;
  std::ostringstream os;
  os << "D=" << sh_quote(worker_dir) << "; mkdir -p \"$D\" || exit 1\n";
  os << "echo \"" << mark << " NODE $(uname -n) ${CUDA_VISIBLE_DEVICES-}\"\n";
  for (size_t i = 0; i < argv.size(); ++i) os << (i ? " " : "") << sh_quote(argv[i]);
  os << " </dev/null; rc=$?\n";
  os << "echo \"" << mark << " EXIT $rc\"\n";
  os << "for f in";
  for (const auto& f : files) os << " " << sh_quote(f);
  os << "; do if [ -f \"$D/$f\" ]; then echo \"" << mark
     << " FILE $f\"; cat \"$D/$f\"; echo; echo \"" << mark << " END\"; fi; done\n";
  os << "rm -rf \"$D\"\nexit $rc\n";
  return os.str();
}

EntrypointOutput parse_entrypoint_output(const std::string& job_log, const std::string& token) {
  EntrypointOutput out;
  const std::string mark = "@@PT " + token + " ";
  std::istringstream in(job_log);
  std::string line, file, body;
  bool in_file = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind(mark, 0) != 0) {
      if (in_file) body += line + "\n";
      else out.log += line + "\n";
      continue;
    }
    std::istringstream words(line.substr(mark.size()));
    std::string what;
    words >> what;
    if (what == "NODE") {
      words >> out.host >> out.cuda_visible_devices;
    } else if (what == "EXIT") {
      out.finished = static_cast<bool>(words >> out.exit_code);
    } else if (what == "FILE") {
      words >> file;
      body.clear();
      in_file = true;
    } else if (what == "END" && in_file) {
      out.files[file] = body;
      in_file = false;
    }
  }
  return out;
}

struct RayTrialRunner::Slot {
  Config config;
  RunContext ctx;
  fs::path dir;
  std::string entrypoint;
  std::map<std::string, std::string> env;
  double submitted_at = -1;
  double running_at = -1;
  double failing_since = -1;     // status requests failing since then
  double stop_sent_at = -1;      // the first stop request
  double stop_resent_at = -1;    // the latest one
  int stop_requests = 0;
  int stop_why = kNotStopped;
  std::string last_error;
  RayJobInfo info;
  bool done = false;
  Measurement m;
  RayPlacement p;
};

StatusOr<std::unique_ptr<RayTrialRunner>> RayTrialRunner::create(RayRunnerOptions options, const std::string& address) {
  auto client = RayClient::connect(address);
  if (!client.ok()) return client.status();
  auto version = (*client)->check_version();
  if (!version.ok()) return version.status();
  if (options.check_resources && (options.trial_gpus > 0 || options.trial_cpus > 0)) {
    auto nodes = (*client)->node_resources();
    if (nodes.ok() && !nodes->empty()) {
      bool fits = false;
      std::string seen;
      for (const auto& node : *nodes) {
        auto amount = [&](const char* k) { return node.count(k) ? node.at(k) : 0.0; };
        if (amount("GPU") >= options.trial_gpus && amount("CPU") >= options.trial_cpus) fits = true;
        seen += (seen.empty() ? "" : "; ") + amount_str(amount("CPU")) + " CPU " + amount_str(amount("GPU")) + " GPU";
      }
      if (!fits) {
        return InvalidArgument("no node of the Ray cluster at " + (*client)->address() + " has " +
                               amount_str(options.trial_gpus) + " GPU and " + amount_str(options.trial_cpus) +
                               " CPU for one trial (nodes: " + seen + "): lower --trial-gpus / --trial-cpus, or pass "
                               "--ray-no-resource-check for an autoscaling cluster that adds such nodes on demand");
      }
    }
  }
  return std::make_unique<RayTrialRunner>(std::move(options), std::move(*client), *version);
}

RayTrialRunner::RayTrialRunner(RayRunnerOptions options, std::unique_ptr<RayClient> client, std::string ray_version)
    : options_(std::move(options)),
      client_(std::move(client)),
      ray_version_(std::move(ray_version)),
      commands_(options_.process) {
  options_.parallel = std::max(1, options_.parallel);
  if (options_.session.empty()) {
    options_.session = "pt-tune-" + std::to_string(::getpid()) + "-" +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch()).count());
  }
}

RayTrialRunner::~RayTrialRunner() { stop_all(); }

Measurement RayTrialRunner::run(const Config& config, const RunContext& context) {
  return run_batch({{config, context}}).front();
}

void RayTrialRunner::submit(Slot& s) {
  s.p.trial_index = s.ctx.trial_index;
  s.p.repeat = s.ctx.repeat;
  s.dir = options_.process.out_dir / "trials" / (zero_padded(s.ctx.trial_index, 3) + "-r" + std::to_string(s.ctx.repeat + 1));
  s.m.dir = s.dir.string();
  s.p.dir = s.dir.string();
  std::error_code ec;
  fs::remove_all(s.dir, ec);
  fs::create_directories(s.dir, ec);
  auto fail = [&](std::string why) {
    s.m.status = RunStatus::kCrashed;
    s.m.message = std::move(why);
    s.done = true;
  };
  if (ec) return fail("cannot create " + s.dir.string() + ": " + ec.message());
  const std::string id = options_.session + "-" + zero_padded(s.ctx.trial_index, 3) + "-r" +
                         std::to_string(s.ctx.repeat + 1) + "-" + std::to_string(++seq_);
  const std::string worker_dir = options_.worker_tmp + "/profile-train-ray/" + id;
  std::vector<std::string> extra_env;
  auto argv = commands_.command_for(s.config, worker_dir, &extra_env);
  if (!argv.ok()) return fail(argv.status().message());
  RayJobSpec spec;
  spec.submission_id = id;
  spec.entrypoint = ray_entrypoint(*argv, worker_dir, id);
  spec.num_cpus = options_.trial_cpus;
  spec.num_gpus = options_.trial_gpus;
  spec.runtime_env = options_.runtime_env;
  for (const auto& kv : extra_env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) spec.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  spec.metadata = {{"profile_train", "tune"}, {"trial", std::to_string(s.ctx.trial_index)},
                   {"repeat", std::to_string(s.ctx.repeat + 1)}};
  {
    // The exact job, for reproducing one trial by hand (`ray job submit` or curl). A failed write only loses that.
    const nlohmann::json cmd = {{"argv", *argv}, {"env", extra_env}, {"ray_address", client_->address()},
                                {"job_request", job_request_body(spec)}};
    (void)write_file_atomic(s.dir / "command.json", cmd.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  const double t0 = now_s();
  auto submitted = client_->submit(spec);
  s.p.submit_s = now_s() - t0;
  if (!submitted.ok()) return fail("cannot submit the Ray job: " + submitted.status().message());
  s.p.submission_id = *submitted;
  s.submitted_at = now_s();
  live_.insert(*submitted);
}

void RayTrialRunner::request_stop(Slot& s, int why) {
  if (s.stop_why == kNotStopped) s.stop_why = why;
  if (s.stop_sent_at >= 0) return;
  s.stop_sent_at = now_s();
  send_stop(s);
}

void RayTrialRunner::send_stop(Slot& s) {
  s.stop_resent_at = now_s();
  ++s.stop_requests;
  if (Status st = client_->stop(s.p.submission_id); !st.ok()) s.last_error = st.message();
}

void RayTrialRunner::poll(Slot& s) {
  const double now = now_s();
  ++s.p.polls;
  auto info = client_->status(s.p.submission_id);
  if (!info.ok()) {
    if (s.failing_since < 0) s.failing_since = now;
    s.last_error = info.status().message();
    if (now - s.failing_since > kLostContactAfterS) {
      request_stop(s, kStopLostContact);
      finish(s);
    }
    return;
  }
  s.failing_since = -1;
  s.info = *info;
  if (s.info.state == "RUNNING" && s.running_at < 0) {
    s.running_at = now;
    s.p.queued_s = now - s.submitted_at;
  }
  if (s.info.terminal()) {
    finish(s);
    return;
  }
  if (s.stop_sent_at >= 0) {
    // A stop request can be lost (a dashboard restart, a busy job supervisor): sent again every quarter of the
    // wait, and once more at its end. Unconfirmed, the job stays in live_ (stop_all tries again at exit) and
    // the trial says that it may still hold its GPU.
    const double resend_every = std::max(options_.poll_interval_s, options_.stop_wait_s / 4);
    if (now - s.stop_sent_at > options_.stop_wait_s) {
      send_stop(s);
      finish(s);
    } else if (now - s.stop_resent_at >= resend_every) {
      send_stop(s);
    }
    return;
  }
  if (options_.process.interrupted != nullptr && options_.process.interrupted->load()) {
    request_stop(s, kStopInterrupt);
  } else if (s.running_at < 0 && options_.pending_timeout_s > 0 && now - s.submitted_at > options_.pending_timeout_s) {
    // Ray queues the stop of a PENDING job until the job could start: not waited for (see abandoned()).
    request_stop(s, kStopPending);
    live_.erase(s.p.submission_id);
    abandoned_.insert(s.p.submission_id);
    finish(s);
  } else if (s.running_at >= 0 && s.ctx.timeout_s > 0 && now - s.running_at > s.ctx.timeout_s) {
    request_stop(s, kStopTimeout);
  }
}

void RayTrialRunner::finish(Slot& s) {
  s.done = true;
  const double now = now_s();
  if (s.running_at >= 0) s.p.running_s = now - s.running_at;
  s.p.final_state = s.info.state.empty() ? "UNKNOWN" : s.info.state;
  s.p.node_id = s.info.node_id;
  if (s.info.terminal()) live_.erase(s.p.submission_id);
  Measurement& m = s.m;
  // End to end, as a one-at-a-time sweep would pay it: submit + queue (job start) + run.
  m.duration_s = s.p.submit_s + (s.submitted_at >= 0 ? now - s.submitted_at : 0.0);
  const double t0 = now_s();
  auto logs = client_->logs(s.p.submission_id);
  s.p.log_fetch_s = now_s() - t0;
  const EntrypointOutput out = parse_entrypoint_output(logs.ok() ? *logs : std::string(), s.p.submission_id);
  s.p.host = out.host;
  s.p.cuda_visible_devices = out.cuda_visible_devices;
  (void)write_file_atomic(s.dir / "trial.log", out.log);
  for (const auto& [name, text] : out.files) {
    (void)write_file_atomic(s.dir / name, text);
  }
  if (auto it = out.files.find("report.json"); it != out.files.end()) {
    auto report = read_trial_report(it->second);
    if (report.ok()) m.report = std::move(*report);
    else m.report_error = report.status().message();
    if (m.report && m.report->device) s.p.gpu_name = m.report->device->name.value_or("");
  }
  const std::string id = s.p.submission_id;
  const std::string ray_says = s.info.message.empty() ? std::string() : " (Ray: " + last_log_line(s.info.message) + ")";
  auto set = [&](RunStatus st, std::string msg) {
    m.status = st;
    m.message = std::move(msg);
  };
  // After a stop request: "stopped" only when Ray confirmed it with a terminal state.
  const std::string stopped =
      s.info.terminal()
          ? "Ray job " + id + " stopped"
          : "Ray job " + id + " did not confirm the stop within " + seconds(options_.stop_wait_s) + " (" +
                std::to_string(s.stop_requests) + " stop request" + (s.stop_requests == 1 ? "" : "s") + "; state " +
                (s.info.state.empty() ? std::string("UNKNOWN") : s.info.state) +
                "): it may still be running and hold its GPU (check with `ray job status " + id + "`, end it with `ray job stop " + id + "`)";
  switch (s.stop_why) {
    case kStopTimeout:
      set(RunStatus::kTimedOut, std::string(s.info.terminal() ? "killed" : "timed out") + " after " + std::to_string(static_cast<long long>(s.ctx.timeout_s)) + " s (" +
                                    (s.ctx.timeout_reason.empty() ? "timeout" : s.ctx.timeout_reason) + "); " + stopped);
      return;
    case kStopInterrupt:
      set(RunStatus::kInterrupted, "interrupted (Ctrl-C); " + stopped);
      return;
    case kStopPending:
      set(RunStatus::kCrashed, "no free resources on the Ray cluster: job " + id + " was still PENDING after " +
                                   seconds(options_.pending_timeout_s) + " waiting for " + amount_str(options_.trial_gpus) +
                                   " GPU / " + amount_str(options_.trial_cpus) + " CPU (--ray-pending-timeout); stop requested (Ray applies it when the job could start)" + ray_says);
      return;
    case kStopLostContact:
      set(RunStatus::kCrashed, "lost contact with the Ray dashboard for " + seconds(kLostContactAfterS) + ": " + s.last_error);
      return;
    default:
      break;
  }
  if (!s.info.terminal()) {
    set(RunStatus::kCrashed, "Ray job " + id + " did not stop within " + seconds(options_.stop_wait_s) + " of the stop request");
    return;
  }
  if (s.info.state == "STOPPED") {
    set(RunStatus::kCrashed, "Ray job " + id + " was stopped outside tune" + ray_says);
    return;
  }
  if (!out.finished) {
    // The entry point never reached its end: the job failed to start (runtime_env, no such node), or the node
    // or the job's driver died mid-trial.
    std::string why = s.info.message.empty() ? last_log_line(out.log) : last_log_line(s.info.message);
    if (!logs.ok() && why.empty()) why = logs.status().message();
    set(RunStatus::kCrashed, "Ray job " + id + " ended " + s.info.state + " before the trial's command finished" +
                                 (why.empty() ? std::string() : ": " + why));
    return;
  }
  m.exit_code = out.exit_code;
  RunEnd end;
  end.log = out.log;
  end.last_line = last_log_line(out.log);
  end.exit_code = out.exit_code;
  end.sigkill = out.exit_code == 128 + 9;
  end.sigkill_where = " on " + (out.host.empty() ? std::string("the worker") : out.host);
  if (auto it = out.files.find("workload_result.json"); it != out.files.end())
    end.workload_result = [&text = it->second] { return std::optional<std::string>(text); };
  classify_run_end(end, s.config, &known_batch_, &m);
}

std::vector<Measurement> RayTrialRunner::run_batch(const std::vector<std::pair<Config, RunContext>>& items) {
  std::vector<Slot> slots(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    slots[i].config = items[i].first;
    slots[i].ctx = items[i].second;
  }
  auto interrupted = [&] { return options_.process.interrupted != nullptr && options_.process.interrupted->load(); };
  size_t next = 0;
  std::vector<Slot*> active;
  while (next < slots.size() || !active.empty()) {
    while (!interrupted() && active.size() < static_cast<size_t>(options_.parallel) && next < slots.size()) {
      Slot& s = slots[next++];
      submit(s);
      if (!s.done) active.push_back(&s);
    }
    if (interrupted()) {
      for (; next < slots.size(); ++next) {
        slots[next].m.status = RunStatus::kInterrupted;
        slots[next].m.message = "interrupted before its Ray job was submitted";
        slots[next].done = true;
      }
    }
    if (active.empty()) continue;
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_interval_s));
    for (Slot* s : active) poll(*s);
    std::erase_if(active, [](const Slot* s) { return s->done; });
  }
  std::vector<Measurement> out;
  out.reserve(slots.size());
  for (Slot& s : slots) {
    if (!s.p.submission_id.empty()) placements_.push_back(s.p);
    out.push_back(std::move(s.m));
  }
  return out;
}

void RayTrialRunner::stop_all() {
  if (live_.empty()) return;
  for (const std::string& id : live_) (void)client_->stop(id);
  const double t0 = now_s();
  double sent_at = t0;
  while (!live_.empty() && now_s() - t0 < options_.stop_wait_s) {
    if (now_s() - sent_at >= std::max(options_.poll_interval_s, options_.stop_wait_s / 4)) {
      for (const std::string& id : live_) (void)client_->stop(id);  // a stop request can be lost: again
      sent_at = now_s();
    }
    for (auto it = live_.begin(); it != live_.end();) {
      auto info = client_->status(*it);
      if (info.ok() && info->terminal()) it = live_.erase(it);
      else ++it;
    }
    if (!live_.empty()) std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_interval_s));
  }
}

}  // namespace profile_train::tuner
