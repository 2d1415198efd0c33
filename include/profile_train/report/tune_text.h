// What `tune` says on the terminal, from the session's documents (model/tune.h): the line naming the space, the
// line naming a Ray cluster, one progress line per finished trial and the final summary. Pure functions over
// plain data; every string from the user or a trial is made terminal-safe. tune.html presents the same
// document (tune_html.h).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "profile_train/model/tune.h"

namespace profile_train::report {

// "profile-train tune: guided over amp{off,bf16} threads{0,1} (4 combinations); results in OUT".
// `space`: each knob with its values, in the space's order.
void write_tune_space(std::ostream& out, const std::string& strategy,
                      const std::vector<std::pair<std::string, std::vector<std::string>>>& space,
                      const std::string& out_dir);

// "profile-train tune: trials run as Ray jobs on ADDRESS (Ray V), N at a time, G GPU / C CPU each" (execution
// with its `ray` keys; nothing without them).
void write_tune_executor(std::ostream& out, const model::Execution& execution);

// "tune [3] amp=bf16 threads=1: 412 samples/s ±1.2% (x1.10 paired vs baseline's 375) [2 runs, 8.1 s] <- why".
void write_tune_trial_line(std::ostream& out, const model::TrialProgress& trial);

// "profile-train tune: Ray job ID was given up while PENDING; ...".
void write_tune_abandoned_job(std::ostream& out, const std::string& submission_id);

// What the summary needs beyond the document.
struct TuneSummaryOptions {
  std::vector<std::string> knob_order;  // the space's knobs in order (model::describe_config names configurations in it)
  std::string out_dir;                  // the session's folder (trials/, tune.json, tune.html)
  bool ray = false;                     // trials ran as Ray jobs: the parallelism line
  // apply.json, when the winner's overrides were written (its path), or why it could not be (one error line).
  std::optional<std::string> apply_file;
  std::string apply_error;
};

// The final summary: trials and noise, skipped knobs, baseline, head to head, best, loss, the change (and how to
// keep it without editing the program), the parallelism of a Ray session, the files written. Without a measured
// baseline (no doc.baseline or doc.best): the one line saying so, and nothing after it.
void write_tune_summary(std::ostream& out, const model::TuneReport& doc, const TuneSummaryOptions& options);

}  // namespace profile_train::report
