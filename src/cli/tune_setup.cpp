// `profile-train tune`, parsing: options -> TuneSetup, and the checks before the first trial.
#include "tune_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "commands.h"
#include "pipeline.h"
#include "profile_train/common/byte_size.h"
#include "profile_train/platform/host.h"
#include "profile_train/platform/process.h"

namespace profile_train::cli {
namespace {

namespace fs = std::filesystem;
namespace tn = profile_train::tuner;

// Whether this host's CPU computes bf16 natively (AMX or AVX512-BF16 in /proc/cpuinfo); nullopt when unreadable.
// Trials run here, so it stands in for facts.cpu.bf16_native when a report lacks it (the built-in workload).
std::optional<bool> host_bf16_native() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (in && std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1));
    std::string w;
    while (words >> w) {
      if (w == "amx_bf16" || w == "avx512_bf16") return true;
    }
    return false;
  }
  return std::nullopt;
}

// --executor / --ray-* / --parallel / --trial-* into the setup.
Status executor_setup(const TuneArgs& a, const std::vector<std::string>& workload_flags, TuneSetup& s) {
  if (a.executor != "local" && a.executor != "ray") {
    return InvalidArgument("--executor '" + a.executor + "': expected local or ray");
  }
  if (a.parallel < 1) return InvalidArgument("--parallel must be at least 1");
  if (a.executor == "local") {
    if (a.parallel > 1) return InvalidArgument("--parallel needs --executor ray (local trials run one at a time)");
    return Status::Ok();
  }
  if (!tn::kRaySupported) {
    return Unsupported("--executor ray: this build has no Ray support (install libcpp-httplib-dev and reconfigure)");
  }
  s.ray = true;
  s.ray_address = a.ray_address;
  if (s.ray_address.empty()) {
    const char* env = std::getenv("RAY_ADDRESS");
    s.ray_address = env != nullptr ? env : "";
  }
  if (s.ray_address.empty()) {
    return InvalidArgument("--executor ray needs the dashboard address: --ray-address http://HOST:8265 or RAY_ADDRESS");
  }
  if (auto norm = tn::normalize_ray_address(s.ray_address); !norm.ok()) return norm.status();
  tn::RayRunnerOptions& r = s.ray_options;
  r.parallel = a.parallel;
  r.trial_cpus = a.trial_cpus;
  r.trial_gpus = a.trial_gpus;
  if (r.trial_gpus < 0) {
    // One GPU per trial unless the run is on the CPU (the built-in workload with --device cpu).
    bool cpu = false;
    for (size_t i = 0; i < workload_flags.size(); ++i) {
      if (workload_flags[i] == "--device=cpu" || (workload_flags[i] == "--device" && i + 1 < workload_flags.size() &&
                                                  workload_flags[i + 1] == "cpu")) {
        cpu = true;
      }
    }
    r.trial_gpus = cpu ? 0 : 1;
  }
  if (r.trial_cpus < 0 || r.trial_gpus < 0) return InvalidArgument("--trial-cpus / --trial-gpus must not be negative");
  r.pending_timeout_s = a.ray_pending_timeout_s;
  r.check_resources = !a.ray_no_resource_check;
  if (!a.ray_runtime_env.empty()) {
    r.runtime_env = nlohmann::json::parse(a.ray_runtime_env, nullptr, false);
    if (!r.runtime_env.is_object()) {
      return InvalidArgument("--ray-runtime-env: expected a JSON object, e.g. '{\"working_dir\": \".\"}'");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> workload_tail() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  if (!in) return Internal("cannot read /proc/self/cmdline");
  std::vector<std::string> argv;
  std::string item;
  while (std::getline(in, item, '\0')) argv.push_back(item);
  size_t i = 0;
  while (i < argv.size() && argv[i] != "tune") ++i;
  for (; i < argv.size(); ++i) {
    if (argv[i] == "--workload") {
      i += 2;
      break;
    }
    if (argv[i].rfind("--workload=", 0) == 0) {
      i += 1;
      break;
    }
  }
  std::vector<std::string> tail;
  bool dashes_seen = false;  // the first `--` only separates (main() split the command line there)
  for (; i < argv.size(); ++i) {
    if (!dashes_seen && argv[i] == "--") {
      dashes_seen = true;
      continue;
    }
    tail.push_back(argv[i]);
  }
  return tail;
}

// What is tuned: the built-in workload (its binary found) or the command after --.
Status make_target(const TuneArgs& a, const std::vector<std::string>& workload_flags, const fs::path& self_exe,
                   tn::TuneTarget* out) {
  tn::TuneTarget& target = *out;
  if (!a.workload.empty()) {
    if (a.workload != "cnn" && a.workload != "mlp" && a.workload != "transformer") {
      return InvalidArgument("--workload '" + a.workload + "': expected cnn, mlp or transformer");
    }
    target.kind = tn::TuneTarget::Kind::kWorkload;
    target.model = a.workload;
    target.args = workload_flags;
    target.workload_binary = a.workload_binary.empty() ? self_exe.parent_path() / "profile-train-workload"
                                                       : fs::absolute(a.workload_binary);
    if (!fs::exists(target.workload_binary)) {
      return NotFound("built-in workload not found at " + target.workload_binary.string() +
                      " (it needs LibTorch: configure with PT_WITH_TORCH=AUTO/ON)");
    }
  } else {
    if (a.command.empty()) {
      return InvalidArgument("nothing to tune: give --workload MODEL [flags] or -- CMD ARGS... (see --help)");
    }
    target.kind = tn::TuneTarget::Kind::kCommand;
    target.args = a.command;
  }

  return Status::Ok();
}

// The knob space: the explicit --knob values, else the target's default knobs (the guided search's too), each
// checked against what the target can apply; an auto knob starts at the workload's own flag.
StatusOr<tn::KnobSpace> knob_space(const TuneArgs& a, const std::vector<std::string>& workload_flags,
                                   const tn::TuneTarget& target, const std::set<std::string>& placeholders) {
  tn::KnobSpace space;
  const unsigned cpus = platform::online_cpus();
  std::map<std::string, tn::KnobRange> chosen;
  for (const std::string& k : a.knobs) {
    auto r = tn::parse_knob_arg(k);
    if (!r.ok()) return r.status();
    if (r->is_auto) r->values = tn::auto_values_for(*r->def, cpus);
    chosen[r->def->name] = *r;
  }
  for (const tn::KnobDef& def : tn::knob_catalog()) {
    if (chosen.count(def.name)) continue;
    // Defaults only when no --knob was given (an explicit list is the whole space), except placeholders,
    // which always need a value.
    bool want = placeholders.count(def.name) > 0;
    if (a.knobs.empty()) {
      // The guided search also gets the knobs it tries only where the diagnosis points to them (or last), each
      // where this target can apply it.
      const bool dflt = def.in_default_space || (a.strategy == "guided" && def.in_guided_space);
      if (target.kind == tn::TuneTarget::Kind::kWorkload) want = dflt && !def.workload_flag.empty();
      else if (placeholders.empty()) {
        want = dflt && !def.override_key.empty() && def.name != KnobName::kBatchSize;  // shim: asked only
      }
    }
    if (!want) continue;
    tn::KnobRange r;
    r.def = &def;
    r.is_auto = true;
    r.values = tn::auto_values_for(def, cpus);
    chosen[def.name] = r;
  }
  for (const tn::KnobDef& def : tn::knob_catalog()) {
    auto it = chosen.find(def.name);
    if (it == chosen.end()) continue;
    tn::KnobRange r = it->second;
    if (target.kind == tn::TuneTarget::Kind::kWorkload) {
      if (def.workload_flag.empty()) {
        return InvalidArgument("knob " + def.name + " cannot be applied to the built-in workload");
      }
      // The user's own workload flag is the baseline value of an auto knob.
      for (size_t i = 0; r.is_auto && i < workload_flags.size(); ++i) {
        std::string v;
        if (workload_flags[i] == def.workload_flag && i + 1 < workload_flags.size()) v = workload_flags[i + 1];
        else if (workload_flags[i].rfind(def.workload_flag + "=", 0) == 0) v = workload_flags[i].substr(def.workload_flag.size() + 1);
        if (v.empty()) continue;
        auto cv = tn::canonical_value(def, v);
        if (!cv.ok()) return cv.status();
        std::erase(r.values, *cv);
        r.values.insert(r.values.begin(), *cv);
        if (def.kind == tn::KnobKind::kInteger) {  // keep the ladder ascending above the baseline
          std::sort(r.values.begin() + 1, r.values.end(),
                    [](const std::string& x, const std::string& y) { return std::stoll(x) < std::stoll(y); });
        }
      }
    } else if (!placeholders.count(def.name) && def.override_key.empty()) {
      return InvalidArgument("knob " + def.name + " has no {" + def.name +
                             "} placeholder in the command and the Python shim cannot apply it");
    }
    space.push_back(r);
  }
  return space;
}

StatusOr<TuneSetup> make_setup(const TuneArgs& a, const std::vector<std::string>& workload_flags,
                               const std::atomic<bool>* interrupted) {
  TuneSetup s;
  if (a.strategy != "guided" && a.strategy != "grid") {
    return InvalidArgument("--strategy '" + a.strategy + "': expected guided or grid");
  }
  if (a.repeats < 1 || a.baseline_repeats < 1) return InvalidArgument("--repeats must be at least 1");
  if (a.confirm_repeats < 0) return InvalidArgument("--confirm-repeats must be 0 or more");
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return Internal("cannot resolve /proc/self/exe");
  s.runner.self_exe = std::string(buf, static_cast<size_t>(n));
  // An empty --out names no folder (as for `run` and `analyze`): bad usage before anything is created.
  if (a.out.empty()) return InvalidArgument("--out: empty folder name");
  s.out = a.out;
  s.runner.out_dir = s.out;
  // Every trial gets its own folder and tune's grace to stop from tune: a --run-arg cannot set them (run would
  // refuse the option given twice, in words about run's options, not tune's).
  for (const std::string& arg : a.run_args) {
    const std::string name = arg.substr(0, arg.find('='));
    const char* why = name == "--out"             ? "each trial writes into OUT/trials/NNN-rK; use tune's --out"
                      : name == "--kill-after"    ? "a trial gets the same grace to stop as tune gives it"
                      : name == "--validate-only" ? "a trial that launches nothing measures nothing"
                      : arg == "--"               ? "the command goes after tune's own --"
                                                  : nullptr;
    if (why != nullptr)
      return InvalidArgument("--run-arg " + arg + ": tune sets this for every trial itself (" + why + ")");
  }
  s.runner.run_args = a.run_args;
  s.runner.interrupted = interrupted;
  s.quiet = a.quiet;

  tn::TuneTarget& target = s.runner.target;
  if (Status st = make_target(a, workload_flags, s.runner.self_exe, &target); !st.ok()) return st;
  // The knob space: explicit --knob values, then the defaults of the target.
  const std::set<std::string> placeholders =
      target.kind == tn::TuneTarget::Kind::kCommand ? tn::placeholders_in(target.args) : std::set<std::string>{};
  auto space = knob_space(a, workload_flags, target, placeholders);
  if (!space.ok()) return space.status();
  s.space = std::move(*space);
  if (s.space.empty()) return InvalidArgument("no knob to tune");
  if (Status st = executor_setup(a, workload_flags, s); !st.ok()) return st;

  tn::TuneOptions& o = s.options;
  o.strategy = a.strategy;
  o.max_trials = a.max_trials;
  o.time_budget_s = a.time_budget_s;
  o.trial_timeout_s = a.trial_timeout_s;
  o.repeats = a.repeats;
  o.baseline_repeats = std::max(a.repeats, a.baseline_repeats);
  o.confirm_repeats = a.confirm_repeats;
  o.allow_quality_change = a.allow_quality_change;
  o.min_gain = a.min_gain;
  o.host_bf16_native = host_bf16_native();
  o.placeholders = placeholders;
  o.interrupted = interrupted;
  if (!a.max_memory.empty()) {
    auto b = parse_byte_size(a.max_memory);
    if (!b.ok()) return InvalidArgument("--max-memory " + b.status().message());
    o.max_memory_bytes = static_cast<double>(*b);
  }
  return s;
}

Status validate_before_trials(const TuneSetup& s) {
  if (Status st = check_writable_dir(s.out); !st.ok()) return st;
  const tn::TuneTarget& target = s.runner.target;
  if (target.kind == tn::TuneTarget::Kind::kCommand && tn::placeholders_in({target.args[0]}).empty()) {
    if (auto exe = platform::find_program(target.args[0]); !exe.ok()) return exe.status();
  }
  // The baseline trial's `run` command line, checked as `run` checks it before a launch (in this process:
  // options, rules, --perfetto, the agent, the command), into a folder that is removed again.
  tn::ProcessTrialRunner runner(s.runner);
  const fs::path dir = s.out / "trials" / "validate";
  std::error_code ec;
  fs::create_directories(dir, ec);
  auto argv = runner.command_for(tn::baseline_config(s.space), dir, nullptr);
  if (!argv.ok()) return argv.status();
  const Status checked = validate_run_args(std::vector<std::string>(argv->begin() + 2, argv->end()));
  fs::remove_all(dir, ec);
  if (checked.ok()) return Status::Ok();
  const std::string what = "the trial command (" + std::string(s.runner.run_args.empty() ? "" : "--run-arg options, ") +
                           "rules, command): " + checked.message();
  return checked.exit_code() == kExitBadInput ? InvalidArgument(what) : Internal(what);
}

}  // namespace profile_train::cli
