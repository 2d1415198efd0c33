// The production TrialRunner: each measurement runs `profile-train run --out DIR -- CMD...` as a child
// process (fork + exec, never through a shell) in its own process group, with a timeout that kills the
// group, output captured to DIR/trial.log, out-of-memory detection, and DIR/report.json read back.
// Knobs reach the target as workload flags, as {placeholders} substituted inside argv elements, or as
// PROFILE_TRAIN_OVERRIDES (JSON) read by the Python shim. Owner: tuner component. Linux only.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/tuner/knobs.h"
#include "profile_train/tuner/trial.h"

namespace profile_train::tuner {

struct TuneTarget {
  enum class Kind {
    kWorkload,  // the built-in LibTorch workload: knobs become its flags
    kCommand,   // any command: knobs become {placeholders} and/or shim overrides
  };
  Kind kind = Kind::kCommand;
  std::filesystem::path workload_binary;     // kWorkload: profile-train-workload
  std::string model;                         // kWorkload: cnn | mlp | transformer
  std::vector<std::string> args;             // kWorkload: extra workload flags; kCommand: argv with placeholders
};

// Placeholders ({name}) of known knobs found in argv, by canonical knob name.
std::set<std::string> placeholders_in(const std::vector<std::string>& argv);
// argv with every {knob} placeholder (canonical name or alias) replaced by the config's value. Braces that
// do not name a known knob are left untouched (e.g. Python f-strings in `-c` code). A placeholder whose knob
// has no value in `config` is an InvalidArgument.
StatusOr<std::vector<std::string>> substitute_placeholders(const std::vector<std::string>& argv,
                                                           const model::Config& config);
// PROFILE_TRAIN_OVERRIDES for the knobs of `config` that the shim can apply, except those in `skip`
// (already passed as placeholders). Typed: integers as numbers, booleans as true/false, amp as a string.
nlohmann::json overrides_for(const model::Config& config, const std::set<std::string>& skip);
// The workload's argv (without the binary): --model M, the user's flags minus those a knob sets, then the
// knobs' flags and --result FILE.
std::vector<std::string> workload_args(const TuneTarget& target, const model::Config& config,
                                       const std::filesystem::path& result_file);

struct ProcessRunnerOptions {
  std::filesystem::path self_exe;              // the profile-train binary (its `run` subcommand is used)
  std::filesystem::path out_dir;               // trials go to out_dir/trials/NNN-rK/
  std::vector<std::string> run_args;           // extra options for `run` (before `--`)
  TuneTarget target;
  const std::atomic<bool>* interrupted = nullptr;
  double term_grace_s = 3;                     // SIGTERM -> SIGKILL delay when stopping a trial
};

class ProcessTrialRunner : public TrialRunner {
 public:
  explicit ProcessTrialRunner(ProcessRunnerOptions options);
  Measurement run(const model::Config& config, const RunContext& context) override;

  // The full argv (argv[0] = self_exe) and the extra environment of one measurement (for tests / dry runs).
  StatusOr<std::vector<std::string>> command_for(const model::Config& config, const std::filesystem::path& dir,
                                                 std::vector<std::string>* extra_env) const;

 private:
  ProcessRunnerOptions options_;
  long long known_batch_ = 0;  // facts.dataloader.batch_size seen in an earlier report
};

// Outcome of one child process (exposed for tests of the process handling).
struct ChildResult {
  bool started = false;
  bool timed_out = false;
  bool interrupted = false;
  int exit_code = 0;       // exit status, or 128 + signal
  int term_signal = 0;     // signal that ended it (0 when it exited)
  double duration_s = 0;
  std::string start_error; // when !started
};
// A trial's process through platform::run_process: argv (no shell) in a new process group, stdout+stderr to
// `log_file`, stdin from /dev/null, with `extra_env` ("K=V") added to the environment. Stops the whole group
// at timeout_s (> 0) or when *interrupted becomes true (SIGTERM, then SIGKILL after grace_s).
ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                      const std::filesystem::path& log_file, double timeout_s,
                      const std::atomic<bool>* interrupted, double grace_s);

// A failed trial's message from the output of `profile-train run` (its log): "exit code N: LAST LINE" with the
// wrapped command's own exit code (or "killed by SIGX") and its last line of output before run's own lines
// (e.g. the Python exception), and *exit_code set to N; `run_exit_code` and the log's last line when run did
// not say how its command ended.
std::string failed_command_message(int run_exit_code, const std::string& log, int* exit_code);

// How a run that ended by itself (not stopped, not timed out) is classified, by every runner alike: out of
// memory (its output says so, or a SIGKILL the tuner did not send), a failed command, overrides that did not
// apply, then the metric from its report, else from the built-in workload's result file. Sets m->status and
// m->message (and m->exit_code through failed_command_message); *known_batch remembers a batch size seen.
struct RunEnd {
  std::string_view log;            // the run's output (or its end) that the checks read; outlives the call
  std::string last_line;           // its last line, as the runner words it
  int exit_code = 0;               // `profile-train run`'s exit code
  bool sigkill = false;            // ended by a SIGKILL nobody here sent
  std::string sigkill_where;       // "" or " on HOST"
  // workload_result.json's text, when the runner has one; asked only when the report gives no metric.
  std::function<std::optional<std::string>()> workload_result;
};
void classify_run_end(const RunEnd& end, const model::Config& config, long long* known_batch, Measurement* m);

// The last `max_bytes` of a file ("" when unreadable).
std::string read_tail(const std::filesystem::path& file, size_t max_bytes);

}  // namespace profile_train::tuner
