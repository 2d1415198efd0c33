#include "profile_train/tuner/process_runner.h"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "profile_train/common/atomic_file.h"
#include "profile_train/platform/process.h"
#include "runner_util.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
using detail::now_s;
using detail::zero_padded;

namespace {

namespace fs = std::filesystem;

// The placeholder names that map to `def` ({batch_size}, {bs}, ...).
bool names_knob(const std::string& name, const KnobDef& def) {
  if (name == def.name) return true;
  return std::find(def.aliases.begin(), def.aliases.end(), name) != def.aliases.end();
}

// Calls fn(knob, begin, end) for every {name} in `s` that names a known knob.
template <typename Fn>
void for_each_placeholder(const std::string& s, Fn fn) {
  size_t pos = 0;
  while ((pos = s.find('{', pos)) != std::string::npos) {
    const size_t close = s.find('}', pos + 1);
    if (close == std::string::npos) return;
    const std::string name = s.substr(pos + 1, close - pos - 1);
    const KnobDef* def =
        name.empty() || name.find_first_of("{ ") != std::string::npos ? nullptr : find_knob_spelling(name);
    if (def != nullptr && names_knob(name, *def)) {
      fn(*def, pos, close + 1);
      pos = close + 1;
    } else {
      pos = pos + 1;
    }
  }
}

// The last non-empty line of a log, trimmed to a readable length.
std::string last_line(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' ')) --end;
    if (end == 0) break;
    size_t begin = text.rfind('\n', end - 1);
    begin = (begin == std::string::npos) ? 0 : begin + 1;
    std::string line = text.substr(begin, end - begin);
    if (line.size() > 300) line = line.substr(0, 297) + "...";
    return line;
  }
  return "";
}

}  // namespace

std::string failed_command_message(int run_exit_code, const std::string& log, int* exit_code) {
  // `run` exits 4 whenever its command failed: the command's own exit code (or signal) and its last line of
  // output (the Python exception) are what says why, not run's code and its closing summary.
  const detail::CommandEnd end = detail::command_end_from_run_log(log);
  if (!end.found) return "exit code " + std::to_string(run_exit_code) + ": " + last_line(log);
  std::string how;
  if (end.code) {
    if (exit_code != nullptr) *exit_code = *end.code;
    how = "exit code " + std::to_string(*end.code);
  } else {
    how = "killed by " + (end.signal.empty() ? std::string("a signal") : end.signal);
  }
  return end.last_line.empty() ? how + " (no output)" : how + ": " + end.last_line;
}

std::set<std::string> placeholders_in(const std::vector<std::string>& argv) {
  std::set<std::string> out;
  for (const auto& a : argv) for_each_placeholder(a, [&](const KnobDef& d, size_t, size_t) { out.insert(d.name); });
  return out;
}

StatusOr<std::vector<std::string>> substitute_placeholders(const std::vector<std::string>& argv,
                                                           const Config& config) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const auto& a : argv) {
    std::string result;
    size_t copied = 0;
    std::string missing;
    for_each_placeholder(a, [&](const KnobDef& d, size_t begin, size_t end) {
      auto it = config.find(d.name);
      if (it == config.end()) {
        if (missing.empty()) missing = d.name;
        return;
      }
      result.append(a, copied, begin - copied);
      result += it->second;
      copied = end;
    });
    if (!missing.empty()) {
      return InvalidArgument("placeholder {" + missing + "} in '" + a + "' has no value (add --knob " + missing +
                             "=...)");
    }
    result.append(a, copied, std::string::npos);
    out.push_back(std::move(result));
  }
  return out;
}

nlohmann::json overrides_for(const Config& config, const std::set<std::string>& skip) {
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [name, value] : config) {
    if (skip.count(name)) continue;
    const KnobDef* def = find_knob(name);
    if (def == nullptr || def->override_key.empty()) continue;
    switch (def->kind) {
      case KnobKind::kInteger: o[def->override_key] = std::stoll(value); break;
      case KnobKind::kBool: o[def->override_key] = (value == "1"); break;
      case KnobKind::kChoice: o[def->override_key] = value; break;
    }
  }
  return o;
}

std::vector<std::string> workload_args(const TuneTarget& target, const Config& config,
                                       const fs::path& result_file) {
  // Flags that a knob sets, or that the tuner owns, are dropped from the user's flags (with their value).
  std::set<std::string> owned = {"--model", "--result"};
  for (const auto& [name, value] : config) {
    const KnobDef* def = find_knob(name);
    if (def != nullptr && !def->workload_flag.empty()) owned.insert(def->workload_flag);
  }
  std::vector<std::string> out = {"--model", target.model};
  for (size_t i = 0; i < target.args.size(); ++i) {
    const std::string& a = target.args[i];
    const std::string flag = a.substr(0, a.find('='));
    if (owned.count(flag)) {
      if (a.find('=') == std::string::npos && i + 1 < target.args.size()) ++i;  // skip its value too
      continue;
    }
    out.push_back(a);
  }
  for (const auto& [name, value] : config) {
    const KnobDef* def = find_knob(name);
    if (def == nullptr || def->workload_flag.empty()) continue;
    out.push_back(def->workload_flag);
    out.push_back(value);
  }
  out.push_back("--result");
  out.push_back(result_file.string());
  return out;
}

std::string read_tail(const fs::path& file, size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                      const fs::path& log_file, double timeout_s, const std::atomic<bool>* interrupted,
                      double grace_s) {
  ChildResult r;
  platform::ProcessSpec spec;
  spec.argv = argv;
  spec.env = platform::environment_with(extra_env);
  spec.log_file = log_file;
  spec.stdin_from_null = true;
  // Own process group: the timeout stops the whole tree, Ctrl-C reaches only the tuner. A tuner that dies
  // (even by SIGKILL) sends SIGTERM to the trial's `run`, which then stops its command in turn.
  spec.parent_death_signal = SIGTERM;
  platform::StopPolicy policy;
  policy.timeout_s = timeout_s;
  policy.grace_s = grace_s;
  policy.stop = interrupted;
  const double t0 = now_s();
  auto done = platform::run_process(spec, policy);
  if (!done.ok()) {
    r.start_error = done.status().message();
    r.duration_s = now_s() - t0;
    return r;
  }
  r.started = true;
  r.timed_out = done->timed_out;
  r.interrupted = done->interrupted;
  r.exit_code = done->exit_code;
  r.term_signal = done->term_signal;
  r.duration_s = done->duration_s;
  return r;
}

ProcessTrialRunner::ProcessTrialRunner(ProcessRunnerOptions options) : options_(std::move(options)) {}

StatusOr<std::vector<std::string>> ProcessTrialRunner::command_for(const Config& config, const fs::path& dir,
                                                                   std::vector<std::string>* extra_env) const {
  // `run` gets the same grace to stop its command as we give it (see run()).
  std::ostringstream kill_after;
  kill_after << "--kill-after=" << options_.term_grace_s;
  std::vector<std::string> argv = {options_.self_exe.string(), "run", "--out", dir.string(), kill_after.str()};
  for (const auto& a : options_.run_args) argv.push_back(a);
  argv.push_back("--");
  const TuneTarget& target = options_.target;
  if (target.kind == TuneTarget::Kind::kWorkload) {
    argv.push_back(target.workload_binary.string());
    for (auto& a : workload_args(target, config, dir / "workload_result.json")) argv.push_back(std::move(a));
    return argv;
  }
  auto substituted = substitute_placeholders(target.args, config);
  if (!substituted.ok()) return substituted.status();
  for (auto& a : *substituted) argv.push_back(std::move(a));
  const nlohmann::json overrides = overrides_for(config, placeholders_in(target.args));
  if (extra_env != nullptr && !overrides.empty()) extra_env->push_back(std::string(kOverridesEnv) + "=" + overrides.dump());
  return argv;
}

Measurement ProcessTrialRunner::run(const Config& config, const RunContext& ctx) {
  Measurement m;
  const fs::path dir = options_.out_dir / "trials" / (zero_padded(ctx.trial_index, 3) + "-r" + std::to_string(ctx.repeat + 1));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  m.dir = dir.string();
  if (ec) {
    m.status = RunStatus::kCrashed;
    m.message = "cannot create " + dir.string() + ": " + ec.message();
    return m;
  }
  std::vector<std::string> extra_env;
  auto argv = command_for(config, dir, &extra_env);
  if (!argv.ok()) {
    m.status = RunStatus::kCrashed;
    m.message = argv.status().message();
    return m;
  }
  {
    // The exact command, for reproducing one trial by hand (arguments need not be UTF-8: replaced). A failed
    // write only loses this convenience file.
    nlohmann::json cmd = {{"argv", *argv}, {"env", extra_env}};
    (void)write_file_atomic(dir / "command.json", cmd.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  const fs::path log = dir / "trial.log";
  // `run` forwards our SIGTERM to its command, SIGKILLs it term_grace_s later, then writes the report: it gets
  // that long and as long again before it is SIGKILLed itself (which leaves its command to PR_SET_PDEATHSIG).
  const ChildResult child =
      run_child(*argv, extra_env, log, ctx.timeout_s, options_.interrupted, 2 * options_.term_grace_s + 5);
  m.duration_s = child.duration_s;
  m.exit_code = child.exit_code;
  if (!child.started) {
    m.status = RunStatus::kCrashed;
    m.message = child.start_error;
    return m;
  }
  // The report, when `run` wrote one (also after a failure: it may still say something useful).
  {
    std::ifstream in(dir / "report.json", std::ios::binary);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      auto report = read_trial_report(text.str());
      if (report.ok()) m.report = std::move(*report);
      else m.report_error = report.status().message();
    }
  }
  const std::string tail = read_tail(log, 1 << 20);
  if (child.interrupted) {
    m.status = RunStatus::kInterrupted;
    m.message = "interrupted (Ctrl-C)";
    return m;
  }
  if (child.timed_out) {
    m.status = RunStatus::kTimedOut;
    std::ostringstream os;
    os << "killed after " << static_cast<long long>(ctx.timeout_s) << " s ("
       << (ctx.timeout_reason.empty() ? "timeout" : ctx.timeout_reason) << ")";
    m.message = os.str();
    return m;
  }
  RunEnd end;
  end.log = tail;
  end.last_line = last_line(tail);
  end.exit_code = child.exit_code;
  end.sigkill = child.term_signal == SIGKILL;  // not sent by us: most likely the kernel's OOM killer
  if (options_.target.kind == TuneTarget::Kind::kWorkload) {
    end.workload_result = [&dir]() -> std::optional<std::string> {
      std::ifstream in(dir / "workload_result.json");
      if (!in) return std::nullopt;
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    };
  }
  classify_run_end(end, config, &known_batch_, &m);
  return m;
}

void classify_run_end(const RunEnd& end, const Config& config, long long* known_batch, Measurement* m) {
  auto set = [m](RunStatus st, std::string msg) {
    m->status = st;
    m->message = std::move(msg);
  };
  if (looks_like_oom(end.log)) return set(RunStatus::kOom, "out of memory: " + end.last_line);
  if (end.sigkill)
    return set(RunStatus::kOom, "killed by SIGKILL" + end.sigkill_where + " (likely the kernel OOM killer)");
  if (end.exit_code != 0)
    return set(RunStatus::kCrashed, failed_command_message(end.exit_code, std::string(end.log), &m->exit_code));
  if (m->report) {
    if (std::string why = overrides_failed(*m->report); !why.empty()) return set(RunStatus::kOverrideFailed, why);
  }
  if (*known_batch <= 0) *known_batch = batch_from_facts(m->report);
  Status st = metric_from_report(m->report, config, *known_batch, m);
  if (st.ok()) {
    m->status = RunStatus::kOk;
    return;
  }
  // Fallback for the built-in workload: its own result file (samples/s over its measured window).
  if (const auto text = end.workload_result ? end.workload_result() : std::nullopt) {
    const nlohmann::json w = nlohmann::json::parse(*text, nullptr, false);
    if (w.is_object() && w.contains("samples_per_s") && w["samples_per_s"].is_number() &&
        w["samples_per_s"].get<double>() > 0) {
      m->throughput = w["samples_per_s"].get<double>();
      m->per_sample = true;
      if (w.contains("step_ms") && w["step_ms"].is_number()) m->step_ms = w["step_ms"].get<double>();
      return set(RunStatus::kOk, "metric from the workload's result file (" + st.message() + ")");
    }
  }
  set(RunStatus::kNoMetric, st.message());
}

}  // namespace profile_train::tuner
