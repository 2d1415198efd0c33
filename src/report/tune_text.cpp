// tune's terminal text (tune_text.h): the space, the Ray cluster, one line per trial, the final summary.
#include "profile_train/report/tune_text.h"

#include <filesystem>

#include "profile_train/common/format.h"
#include "profile_train/common/terminal.h"

namespace profile_train::report {

void write_tune_space(std::ostream& out, const std::string& strategy,
                      const std::vector<std::pair<std::string, std::vector<std::string>>>& space,
                      const std::string& out_dir) {
  out << "profile-train tune: " << strategy << " over";
  size_t grid = 1;
  for (const auto& [knob, values] : space) {
    out << " " << knob << "{";
    for (size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << terminal_safe(values[i]);
    out << "}";
    grid *= values.size();
  }
  out << " (" << grid << " combinations); results in " << terminal_safe(out_dir) << "\n";
}

void write_tune_executor(std::ostream& out, const model::Execution& e) {
  if (!e.ray) return;
  out << "profile-train tune: trials run as Ray jobs on " << terminal_safe(e.ray->address) << " (Ray "
      << terminal_safe(e.ray->ray_version) << "), " << e.parallel << " at a time, " << format_fixed(e.ray->trial_gpus, 0)
      << " GPU / " << format_fixed(e.ray->trial_cpus, 0) << " CPU each\n";
}

void write_tune_trial_line(std::ostream& out, const model::TrialProgress& t) {
  out << "tune [" << t.index << "] " << terminal_safe(t.config) << ": ";
  if (t.ok) {
    out << format_significant(t.mean) << (t.per_sample ? " samples/s" : " steps/s");
    if (t.values > 1 && t.mean > 0) out << " ±" << format_fixed(100.0 * t.stddev / t.mean) << "%";
    if (t.paired_ratio) {
      // The paired ratio next to both absolute figures: means of different runs and a ratio of interleaved
      // pairs need not agree, and must not read as a contradiction.
      out << " (x" << format_fixed(*t.paired_ratio, 2) << " paired vs baseline's " << format_significant(t.baseline_mean)
          << ")";
      if (t.changes_loss) out << " [changes the loss" << (t.loss_non_finite ? ": not finite" : "") << "]";
    }
    if (t.early_stopped) out << " [early stop: clearly slower]";
    if (t.compile_s) out << " [+" << format_fixed(*t.compile_s, 1) << " s compiling per run, not in the rate]";
  } else {
    out << t.status << (t.message.empty() ? "" : " (" + terminal_safe(t.message) + ")");
  }
  out << " [" << t.measurements << " run" << (t.measurements == 1 ? "" : "s") << ", " << format_fixed(t.duration_s)
      << " s]";
  if (!t.reason.empty()) out << " <- " << terminal_safe(t.reason);
  out << "\n";
}

void write_tune_abandoned_job(std::ostream& out, const std::string& submission_id) {
  out << "profile-train tune: Ray job " << terminal_safe(submission_id)
      << " was given up while PENDING; Ray applies its stop when it could start\n";
}

namespace {

// "head to head #2 vs #1: x1.35 (95% interval 0.96-1.89) over 2 interleaved pairs at a 1-minute load of ...".
void write_confirmation(std::ostream& out, const model::TuneReport& doc) {
  if (!doc.confirmation) return;
  const model::ConfirmationRow& cf = *doc.confirmation;
  out << "  head to head #" << cf.candidate << " vs #" << doc.baseline->trial << ": ";
  if (cf.ran) {
    out << "x" << format_fixed(cf.ratio.value_or(0), 2);
    if (cf.low && cf.high) out << " (95% interval " << format_fixed(*cf.low, 2) << "-" << format_fixed(*cf.high, 2) << ")";
    out << " over " << cf.pairs << " interleaved pairs";
    if (cf.load_1m) {
      out << " at a 1-minute load of " << format_significant(*cf.load_1m, 2) << " on " << cf.cpus << " CPUs";
      if (cf.search_load_1m) out << " (search: " << format_significant(*cf.search_load_1m, 2) << ")";
    }
    out << ": ";
  }
  out << terminal_safe(cf.status) << "\n";
}

// What compiling costs the winner, apart from its steady-state rate: the seconds per run against the baseline's,
// and the work after which a faster rate has paid them back.
void write_compile_cost(std::ostream& out, const model::TuneReport& doc) {
  const model::TrialRow* best = nullptr;
  const model::TrialRow* base = nullptr;
  for (const model::TrialRow& t : doc.trials) {
    if (t.index == doc.best->trial) best = &t;
    if (t.index == doc.baseline->trial) base = &t;
  }
  if (best == nullptr || base == nullptr || !best->compile_s || best == base) return;
  const double extra = *best->compile_s - base->compile_s.value_or(0);
  out << "  compile  #" << best->index << " spends " << format_fixed(*best->compile_s, 1) << " s compiling per run";
  if (base->compile_s) out << " (baseline: " << format_fixed(*base->compile_s, 1) << " s)";
  out << ", not counted in its rate";
  const double a = doc.baseline->throughput, b = doc.best->throughput;
  if (extra > 0 && a > 0 && b > a) {
    const double units = extra / (1.0 / a - 1.0 / b);  // work after which the faster rate has saved `extra`
    const std::string what = doc.metric.unit == "samples/s" ? " samples" : " steps";
    out << "; it pays back after about " << format_significant(units) << what << " (" << format_fixed(units / b / 60.0, 1)
        << " min at the best rate)";
  }
  out << "\n";
}

// The winner's loss against the baseline's, and every trial that changes the loss.
void write_loss(std::ostream& out, const model::TuneReport& doc) {
  const model::TrialRef& base = *doc.baseline;
  const model::TrialRef& best = *doc.best;
  if (const auto& l = doc.quality.loss) {
    out << "  loss     #" << best.trial << " vs #" << base.trial << ": " << terminal_safe(l->status);
    if (l->trial_mean && l->baseline_mean && l->tolerance) {
      out << " (" << format_significant(*l->trial_mean) << " vs " << format_significant(*l->baseline_mean) << ", bar "
          << format_significant(*l->tolerance) << ", per " << (l->compared_by == "step" ? "step" : "sample seen") << ")";
    }
    out << "\n";
    if (l->compared_by == "samples seen" && !l->note.empty()) out << "    note: " << terminal_safe(l->note) << "\n";
  }
  for (const model::TrialRow& t : doc.trials) {
    if (t.loss.status != "changes the loss") continue;
    const bool compared = t.loss.trial_mean && t.loss.baseline_mean && t.loss.tolerance;
    out << "  trial #" << t.index << " changes the loss ("
        << (t.loss.non_finite ? std::string("not finite")
            : compared        ? format_significant(*t.loss.trial_mean) + " vs " +
                                    format_significant(*t.loss.baseline_mean) + ", bar " +
                                    format_significant(*t.loss.tolerance)
                              : std::string("not compared"))
        << ")" << (doc.quality.allow_quality_change ? "" : ": not eligible as the winner") << "\n";
  }
}

// The change that keeps the winner: its summary, the Python edits of a command, how to apply it, the command.
void write_change(std::ostream& out, const model::TuneReport& doc, const TuneSummaryOptions& o) {
  const model::CodeChange& change = *doc.change;
  out << "  change: " << terminal_safe(change.summary) << "\n";
  if (!doc.target.workload) {
    for (const auto& e : change.python) out << "    " << terminal_safe(e.code, true) << "\n";
  }
  if (!o.apply_error.empty()) {
    out << "profile-train tune: " << terminal_safe(o.apply_error) << "\n";
  } else if (o.apply_file) {
    out << "  keep it without editing the program: profile-train run --apply " << terminal_safe(*o.apply_file) << " -- "
        << terminal_safe(doc.target.args.empty() ? std::string("CMD") : doc.target.args[0])
        << " ... (or PROFILE_TRAIN_APPLY=" << terminal_safe(*o.apply_file) << " in its environment)\n";
  }
  if (change.command) {
    out << "  command:";
    for (const auto& a : *change.command) out << " " << terminal_safe(a);
    out << "\n";
  }
}

}  // namespace

void write_tune_summary(std::ostream& out, const model::TuneReport& doc, const TuneSummaryOptions& o) {
  namespace fs = std::filesystem;
  const model::TuneStatus& st = doc.status;
  out << "profile-train tune: " << st.trials << " trials, " << terminal_safe(st.stop_reason);
  if (st.partial) out << " (partial results)";
  if (doc.noise.degrees_of_freedom > 0) out << "; measured noise ±" << format_fixed(100.0 * doc.noise.pooled_relative_sd) << "%";
  if (st.rerun_pairs > 0 || st.unreliable_pairs > 0) {
    out << "; " << st.rerun_pairs << " pair(s) re-run and " << st.unreliable_pairs
        << " left out as unreliable: their two runs saw different load";
  }
  out << "\n";
  for (const auto& k : doc.skipped_knobs) {
    std::string values;
    for (const auto& v : k.values) values += (values.empty() ? "" : ",") + v;
    out << "  skipped " << terminal_safe(k.knob) << "=" << terminal_safe(values) << ": " << terminal_safe(k.reason) << "\n";
  }
  if (!doc.baseline || !doc.best || !doc.speedup || !doc.change) {
    out << "profile-train tune: the baseline could not be measured";
    if (!doc.trials.empty()) {
      out << " (" << doc.trials.front().status << ": " << terminal_safe(doc.trials.front().message) << ")";
      out << "; see " << terminal_safe((fs::path(o.out_dir) / "trials").string());
    }
    out << "\n";
    return;
  }
  const model::TrialRef& base = *doc.baseline;
  const model::TrialRef& best = *doc.best;
  const std::string unit = " " + doc.metric.unit;
  out << "  baseline #" << base.trial << "  " << terminal_safe(model::describe_config(base.config, o.knob_order)) << ": "
      << format_significant(base.throughput) << unit << "\n";
  write_confirmation(out, doc);
  const model::SpeedupRow& sp = *doc.speedup;
  out << "  best     #" << best.trial << "  " << terminal_safe(model::describe_config(best.config, o.knob_order)) << ": "
      << format_significant(best.throughput) << unit << "  (x" << format_fixed(sp.value, 2);
  if (sp.low && sp.high) out << ", 95% interval " << format_fixed(*sp.low, 2) << "-" << format_fixed(*sp.high, 2);
  out << (best.trial == base.trial ? "" : sp.claimed ? ", confirmed" : ", not confirmed") << ")\n";
  write_compile_cost(out, doc);
  write_loss(out, doc);
  write_change(out, doc, o);
  if (o.ray && doc.execution) {
    const model::Execution& e = *doc.execution;
    out << "  parallelism: " << format_fixed(e.sum_measurement_s) << " s of measurements in " << format_fixed(e.wall_s)
        << " s wall time (" << format_fixed(e.saved_s) << " s saved)\n";
    if (e.ray && e.ray->note) out << "  note: " << terminal_safe(*e.ray->note) << "\n";
  }
  out << "  wrote " << terminal_safe((fs::path(o.out_dir) / "tune.json").string()) << " and "
      << terminal_safe((fs::path(o.out_dir) / "tune.html").string()) << "\n";
}

}  // namespace profile_train::report
