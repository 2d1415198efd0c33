// `profile-train analyze TRACE... [--out DIR] [--format text,json,html] [--perfetto FILE] [--rules DIR]...
//                                 [--explain RULE_ID] [--fail-on BOTTLENECK,...]`
// Parsing is declared in add_analyze(); the runner loads each trace and hands it to report_trace().
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "analyze_ray.h"
#include "commands.h"
#include "job_summary.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/model/job_json.h"
#include "profile_train/tuner/ray_client.h"
#include "pipeline.h"
#include "profile_train/platform/host.h"
#include "profile_train/analysis/job.h"
#include "profile_train/common/byte_size.h"
#include "profile_train/common/folder_lock.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/vocabulary.h"
#include "profile_train/report/writers.h"
#include "profile_train/rules/engine.h"
#include "profile_train/trace/importer.h"

namespace profile_train::cli {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> traces;
  std::string out = "profile-train-out";
  std::vector<std::string> formats = {"text", "json", "html"};
  std::string perfetto;
  std::vector<std::string> rules_dirs;
  std::string explain;
  std::vector<std::string> fail_on;
  bool all_steps = false;
  std::string device;  // --device NAME
  bool quiet = false;
  std::string gpu_spec;  // --gpu-spec FILE: extra GPU peak-table entries
  // Bounds per input file against decompression bombs (see README "Limits").
  std::string max_input_size = "16G";  // bytes after decompression; K/M/G/T suffixes are powers of 1024
  double max_load_seconds = 300;       // 0 = no limit
  double max_analysis_seconds = 300;   // the analysis of one loaded trace; 0 = no limit
  int jobs = 0;                        // traces loaded at once; 0 = auto (cores, memory)
  // --executor ray (analyze_ray.h): the rank files analysed in shards, each a Ray job; --parallel jobs at once.
  std::string executor = "local";
  std::string ray_address;             // --ray-address, else RAY_ADDRESS
  int parallel = 2;
  size_t ray_shard_size = 0;           // files per shard (0: ceil(files / (2 x parallel)))
  // Internal (a shard of --executor ray): each trace's report.json / report.html texts, its summary row and its
  // rank facts, or its error, in one JSON file (analyze_ray.h "shard.json"); no job summary.
  std::string shard_out;
};

// How many traces to load at once: the cores, at most 8, and no more than half the available memory holds
// (a loaded trace takes about 0.35x its uncompressed size; a .gz inflates about 10x). Reports are still written
// one at a time, in the order given, so the output is the same as a sequential run.
int load_parallelism(const std::vector<std::string>& files, int requested) {
  if (files.size() <= 1) return 1;
  if (requested > 0) return std::min<int>(requested, static_cast<int>(files.size()));
  int n = static_cast<int>(std::min<size_t>({platform::online_cpus(), files.size(), size_t{8}}));
  uint64_t largest = 0;
  for (const auto& f : files) {
    std::error_code ec;
    const uint64_t sz = std::filesystem::file_size(f, ec);
    if (ec) continue;
    const bool gz = f.size() > 3 && f.ends_with(".gz");
    largest = std::max<uint64_t>(largest, gz ? sz * 10 : sz);
  }
  // Each slot holds one loaded trace waiting for its report, plus the one being reported.
  const uint64_t per_trace = largest * 35 / 100 + 1;
  if (auto avail = platform::memory_available_bytes(); avail && *avail > 0)
    n = static_cast<int>(std::clamp<uint64_t>(*avail / 2 / per_trace, 1, static_cast<uint64_t>(n)));
  return std::max(1, n);
}

// "runs/worker0.123.pt.trace.json.gz" -> "worker0.123"; only [A-Za-z0-9._-], never empty.
std::string safe_name(const std::filesystem::path& p) {
  std::string s = p.filename().string();
  for (const char* ext : {".gz", ".json", ".pt.trace", ".trace", ".sqlite", ".nsys-rep"})
    if (s.size() > std::strlen(ext) && s.ends_with(ext)) s.resize(s.size() - std::strlen(ext));
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (s.empty() || s == "." || s == "..") s = "trace";
  return s;
}

// One line naming the file and the problem; the importer's message usually starts with the path already.
void print_load_error(std::ostream& err, const std::string& file, const Status& s) {
  const std::string& m = s.message();
  if (m.rfind(file, 0) == 0) err << "profile-train: " << terminal_safe(m) << "\n";
  else err << "profile-train: " << terminal_safe(file) << ": " << terminal_safe(m) << "\n";
}

// What the traces of one `analyze` command add up to: the summary rows, the rank reports of a job, the worst
// exit code and whether --fail-on matched.
struct AnalyzeJob {
  bool multi = false;  // several reports: each in its own sub-folder
  std::set<std::string> used_names;
  // A trace's sub-folder: `stem`, else stem-2, stem-3, ... when an earlier trace of the command took it.
  std::string folder_for(const std::string& stem) {
    std::string folder = stem;
    for (int k = 2; used_names.count(folder); ++k) folder = stem + "-" + std::to_string(k);
    used_names.insert(folder);
    return folder;
  }
  std::vector<report::TraceRow> rows;
  // For the job summary, when the traces are ranks of one job: what it needs of each report, not the reports
  // (a job of hundreds of ranks is summarized in bounded memory).
  std::vector<model::RankFacts> rank_facts;
  std::vector<model::MissingRank> missing;  // traces of the job that could not be analysed, and why
  nlohmann::json shard = nlohmann::json::array();  // --shard-out: one entry per trace
  int worst = kExitOk;
  bool gate = false;
};

// The options that need more than CLI11's checks; exit 2 with one line on the first bad one, else kExitOk.
int check_analyze_args(std::ostream& err, const AnalyzeArgs& a, uint64_t* max_input_bytes, Formats* formats) {
  if (auto f = parse_formats(a.formats); f.ok()) {
    *formats = *f;
  } else {
    err << "profile-train: " << terminal_safe(f.status().message()) << "\n";
    return kExitBadInput;
  }
  for (const auto& b : a.fail_on) {
    if (!is_bottleneck_name(b)) {
      err << "profile-train: --fail-on: unknown bottleneck '" << terminal_safe(b) << "'\n";
      return kExitBadInput;
    }
  }
  if (auto size = parse_byte_size(a.max_input_size); size.ok()) {
    *max_input_bytes = *size;
  } else {
    err << "profile-train: --max-input-size: " << terminal_safe(size.status().message()) << "\n";
    return kExitBadInput;
  }
  if (!(a.max_load_seconds >= 0)) {
    err << "profile-train: --max-load-seconds: must be >= 0 (0 = no limit)\n";
    return kExitBadInput;
  }
  if (a.executor != "local" && a.executor != "ray") {
    err << "profile-train: --executor: must be local or ray\n";
    return kExitBadInput;
  }
  if (a.executor == "ray" && (!a.perfetto.empty() || !a.explain.empty())) {
    err << "profile-train: --executor ray: --perfetto and --explain work with the local executor only\n";
    return kExitBadInput;
  }
  if (a.executor == "ray" && !tuner::kRaySupported) {
    err << "profile-train: --executor ray: this binary was built without the HTTP client (cpp-httplib)\n";
    return kExitBadInput;
  }
  if (!(a.max_analysis_seconds >= 0)) {
    err << "profile-train: --max-analysis-seconds: must be >= 0 (0 = no limit)\n";
    return kExitBadInput;
  }
  return kExitOk;
}

// One trace's report into its folder (a sub-folder `stem` when the command has several), its summary row and,
// for a job, its rank report; returns report_trace's exit code.
int report_one(const AnalyzeArgs& a, const OutputOptions& base, const rules::RuleSet& rules, trace::Trace& one,
               const std::string& label, const std::string& stem, AnalyzeJob& job) {
  OutputOptions o = base;
  std::string folder;
  if (job.multi) {
    folder = job.folder_for(stem);
    o.out_dir = base.out_dir / folder;
    if (o.perfetto) o.perfetto = o.out_dir / base.perfetto->filename();
    o.outputs_checked = false;  // another folder than the command probed: report_trace probes it
    if (!a.quiet && base.formats.text) *base.io.out << "== " << terminal_safe(label) << " ==\n";
  }
  std::optional<model::Report> report;
  const int rc = report_trace(one, o, &report);
  if (!report) job.missing.push_back({label, "the analysis failed (exit " + std::to_string(rc) + ")"});
  if (!a.shard_out.empty()) {
    // The shard's record of this trace: the files as written (the driver writes the same bytes), the summary row
    // and the rank facts; or the error.
    nlohmann::json e = {{"file", label}, {"exit_code", rc}};
    if (rc == kExitOk && report) {
      auto slurp = [](const std::filesystem::path& f) {
        std::ifstream in(f, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
      };
      nlohmann::json files = nlohmann::json::object();
      for (const char* name : {"report.json", "report.html"})
        if (std::filesystem::exists(o.out_dir / name)) files[name] = slurp(o.out_dir / name);
      e["files"] = std::move(files);
      e["row"] = {{"verdict", std::string(name_of(report->verdict.bottleneck))},
                  {"confidence", report->verdict.confidence},
                  {"mean_ms", report->steps.mean_ms.value_or(-1)},
                  {"util", report->gpu.utilization.value_or(-1)}};
      e["facts"] = model::to_json(analysis::rank_facts(label, model::Report(*report)));
    } else {
      e["error"] = "the analysis failed (exit " + std::to_string(rc) + ")";
    }
    job.shard.push_back(std::move(e));
  }
  if (rc != kExitOk) return rc;
  if (!a.explain.empty())  // the rules evaluate over report.json
    *base.io.out << terminal_safe(rules::explain_rule(rules, a.explain, model::to_json(*report)), true) << "\n";
  report::TraceRow row;
  row.file = label;
  row.folder = folder;
  row.verdict = std::string(name_of(report->verdict.bottleneck));
  row.confidence = report->verdict.confidence;
  row.mean_ms = report->steps.mean_ms.value_or(-1);
  row.util = report->gpu.utilization.value_or(-1);
  if (std::find(a.fail_on.begin(), a.fail_on.end(), row.verdict) != a.fail_on.end()) job.gate = true;
  job.rows.push_back(row);
  if (job.multi) job.rank_facts.push_back(analysis::rank_facts(label, std::move(*report)));
  if (job.multi && !a.quiet) *base.io.out << "\n";
  return kExitOk;
}

// The output options shared by every trace of the command (--gpu-spec read here: exit 2 when bad).
int output_options(const AnalyzeArgs& a, const Formats& formats, OutputOptions* out) {
  OutputOptions& base = *out;
  base.out_dir = a.out;
  base.formats = formats;
  base.quiet = a.quiet;
  base.all_steps = a.all_steps;
  base.max_analysis_seconds = a.max_analysis_seconds;
  if (!a.device.empty()) base.device_name = a.device;
  for (const auto& d : a.rules_dirs) base.rules_dirs.emplace_back(d);
  if (!a.gpu_spec.empty()) {
    auto specs = analysis::load_gpu_spec_file(a.gpu_spec);
    if (!specs.ok()) return print_failure(*base.io.err, "profile-train: --gpu-spec", specs.status());
    base.gpu_specs = std::make_shared<const std::vector<analysis::GpuSpec>>(std::move(*specs));
  }
  if (!a.perfetto.empty()) base.perfetto = std::filesystem::path(a.perfetto);

  return kExitOk;
}

// After the last trace: the job summary when the traces are ranks of one job, then the exit code (the worst
// trace's, else --fail-on's).
int finish_analyze(const AnalyzeArgs& a, const OutputOptions& base, AnalyzeJob& job) {
  if (!a.shard_out.empty()) {
    // A shard of --executor ray: its records for the driver, no job summary (it holds part of the job).
    if (Status s = write_file_atomic(a.shard_out, nlohmann::json({{"format_version", "1"}, {"traces", job.shard}}).dump());
        !s.ok())
      return print_failure(*base.io.err, "profile-train", s);
    return job.worst;
  }
  if (analysis::is_one_job(job.rank_facts)) {
    const Formats& f = base.formats;
    job.worst = std::max(job.worst, report_job(base.io, job.rank_facts, base.out_dir, f.json, f.html, a.quiet || !f.text,
                                               job.missing));
  }
  if (job.worst != kExitOk) return job.worst;
  if (job.gate) {
    std::ostream& err = *base.io.err;
    err << "profile-train: --fail-on: verdict in {";
    for (size_t i = 0; i < a.fail_on.size(); ++i) err << (i ? "," : "") << terminal_safe(a.fail_on[i]);
    err << "}\n";
    return kExitThreshold;
  }
  return kExitOk;
}

// Before any trace is loaded: the output paths, the output folder (locked for this command while `lock` lives),
// the rules and --explain's rule id. Exit 2 (or the failure's code) with one line, else kExitOk.
int check_outputs_and_rules(const AnalyzeArgs& a, const OutputOptions& base, FolderLock* lock,
                            std::shared_ptr<const rules::RuleSet>* rules) {
  // Fail fast, before any work: output paths, output folder (locked for this command), rules. With several
  // traces the timeline goes into each trace's sub-folder; report_trace() checks it there.
  const std::vector<std::filesystem::path> inputs(a.traces.begin(), a.traces.end());
  if (Status s = a.traces.size() > 1 ? Status::Ok() : check_perfetto_path(base, inputs); !s.ok())
    return print_failure(*base.io.err, "profile-train", s);
  if (base.formats.writes_files() || base.perfetto) {
    if (Status s = check_writable_dir(base.out_dir); !s.ok()) {
      *base.io.err << "profile-train: " << terminal_safe(s.message()) << "\n";
      return kExitBadInput;
    }
    auto locked = lock_output_folder(base.out_dir, "analyze");
    if (!locked.ok()) return print_failure(*base.io.err, "profile-train", locked.status());
    *lock = std::move(*locked);
  }
  auto loaded = rules::load_rules(base.rules_dirs);
  if (!loaded.ok()) return print_failure(*base.io.err, "profile-train", loaded.status());
  *rules = std::move(*loaded);
  // An unknown rule id is bad usage (exit 2, as `rules show`), found before any trace is loaded.
  if (!a.explain.empty())
    if (auto known = rules::rule_json(**rules, a.explain); !known.ok())
      return print_failure(*base.io.err, "profile-train: --explain", known.status());

  return kExitOk;
}

// --executor ray: the traces analysed by shards on a Ray cluster (analyze_ray.h); their reports written here with
// the bytes the workers wrote, the job summary from their rank facts, as the local path would.
int run_analyze_ray(const AnalyzeArgs& a, const OutputOptions& base, AnalyzeJob& job) {
  std::ostream& err = *base.io.err;
  RayAnalyzeOptions ro;
  const char* env_address = std::getenv("RAY_ADDRESS");
  auto address = tuner::normalize_ray_address(!a.ray_address.empty() ? a.ray_address : env_address ? env_address : "");
  if (!address.ok()) return print_failure(err, "profile-train: --ray-address", address.status());
  ro.address = *address;
  ro.parallel = std::max(1, a.parallel);
  ro.shard_size = a.ray_shard_size;
  std::error_code ec;
  ro.self_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || ro.self_exe.empty()) {
    err << "profile-train: cannot find this binary (/proc/self/exe): " << ec.message() << "\n";
    return kExitFailure;
  }
  ro.session = std::to_string(::getpid()) + "-" +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count());
  std::string fmts;
  if (base.formats.json) fmts += "json";
  if (base.formats.html) fmts += std::string(fmts.empty() ? "" : ",") + "html";
  if (fmts.empty()) fmts = "json";
  auto absolute = [](const std::string& p) {
    std::error_code e;
    const auto q = std::filesystem::absolute(p, e);
    return e ? p : q.lexically_normal().string();
  };
  ro.shard_args = {"--format", fmts, "--max-input-size", a.max_input_size, "--max-load-seconds",
                   std::to_string(a.max_load_seconds), "--max-analysis-seconds", std::to_string(a.max_analysis_seconds),
                   "--jobs", "1"};
  for (const auto& d : a.rules_dirs) ro.shard_args.insert(ro.shard_args.end(), {"--rules", absolute(d)});
  if (!a.gpu_spec.empty()) ro.shard_args.insert(ro.shard_args.end(), {"--gpu-spec", absolute(a.gpu_spec)});
  if (!a.device.empty()) ro.shard_args.insert(ro.shard_args.end(), {"--device", a.device});
  if (a.all_steps) ro.shard_args.push_back("--all-steps");
  auto results = analyze_on_ray(a.traces, ro, a.quiet ? err : *base.io.out);
  if (!results.ok()) return print_failure(err, "profile-train: --executor ray", results.status());
  for (size_t i = 0; i < results->size(); ++i) {
    RayTraceResult& r = (*results)[i];
    std::string folder;
    std::filesystem::path dir = base.out_dir;
    if (job.multi) {
      folder = job.folder_for(safe_name(r.file));
      dir = base.out_dir / folder;
    }
    if (!r.ok) {
      err << "profile-train: " << terminal_safe(r.file) << ": " << terminal_safe(r.error) << "\n";
      job.worst = std::max(job.worst, r.exit_code != kExitOk ? r.exit_code : static_cast<int>(kExitBadInput));
      job.missing.push_back({r.file, r.error});
      continue;
    }
    for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"report.json", &r.report_json},
                                     {"report.html", &r.report_html}}) {
      if (text->empty()) continue;
      std::error_code mk;
      std::filesystem::create_directories(dir, mk);
      if (Status st = write_file_atomic(dir / name, *text); !st.ok()) {
        job.worst = std::max(job.worst, print_failure(err, "profile-train", st));
      } else if (!a.quiet) {
        *base.io.out << "Wrote " << terminal_safe((dir / name).string()) << "\n";
      }
    }
    report::TraceRow row;
    row.file = r.file;
    row.folder = folder;
    row.verdict = r.row.value("verdict", std::string("unknown"));
    row.confidence = r.row.value("confidence", 0.0);
    row.mean_ms = r.row.value("mean_ms", -1.0);
    row.util = r.row.value("util", -1.0);
    if (std::find(a.fail_on.begin(), a.fail_on.end(), row.verdict) != a.fail_on.end()) job.gate = true;
    job.rows.push_back(row);
    if (job.multi) job.rank_facts.push_back(std::move(*r.facts));
  }
  if (job.multi && !job.rows.empty() && !a.quiet) report::write_trace_table(job.rows, base.out_dir, *base.io.out);
  return finish_analyze(a, base, job);
}

int run_analyze(const AnalyzeArgs& a, const Io& io) {
  uint64_t max_input_bytes = 0;
  Formats formats;
  if (int rc = check_analyze_args(*io.err, a, &max_input_bytes, &formats); rc != kExitOk) return rc;
  OutputOptions base;
  base.io = io;
  if (int rc = output_options(a, formats, &base); rc != kExitOk) return rc;
  // Fail fast, before any work: output paths, output folder (locked for this command), rules, each once.
  FolderLock lock;
  std::shared_ptr<const rules::RuleSet> rules;
  if (int rc = check_outputs_and_rules(a, base, &lock, &rules); rc != kExitOk) return rc;
  base.rules = rules;
  base.outputs_checked = a.traces.size() == 1;  // several traces: each report_one checks its own sub-folder
  AnalyzeJob job;
  job.multi = a.traces.size() > 1;
  if (a.executor == "ray") return run_analyze_ray(a, base, job);
  // Loading dominates; the files of a multi-rank job are loaded `jobs` at a time in a sliding window (each
  // thread parses one file), the reports follow in input order.
  const int jobs = load_parallelism(a.traces, a.jobs);
  std::mutex progress_mu;
  std::vector<uint64_t> done_bytes(a.traces.size(), 0), total_bytes(a.traces.size(), 0);
  auto progress = std::make_shared<Progress>(
      *io.err,
      job.multi ? "loading " + std::to_string(a.traces.size()) + " traces (" + std::to_string(jobs) + " at a time)"
            : "loading " + terminal_safe(std::filesystem::path(a.traces[0]).filename().string()),
      io.err_tty);
  auto start_load = [&](size_t i) {
    return std::async(std::launch::async, [&, i]() -> StatusOr<std::vector<trace::Trace>> {
      trace::LoadOptions lo;
      lo.max_uncompressed_bytes = max_input_bytes;
      lo.max_load_seconds = a.max_load_seconds;
      lo.progress = [&, i](uint64_t done, uint64_t total) {
        std::lock_guard<std::mutex> g(progress_mu);
        done_bytes[i] = done;
        total_bytes[i] = total;
        uint64_t d = 0, t = 0;
        for (size_t k = 0; k < done_bytes.size(); ++k) {
          d += done_bytes[k];
          t += total_bytes[k];
        }
        progress->update(d, t, "B");
      };
      return trace::load_trace_set(a.traces[i], lo);  // several for an nsys export of several processes
    });
  };
  std::deque<std::future<StatusOr<std::vector<trace::Trace>>>> window;
  size_t next = 0;
  for (; next < a.traces.size() && window.size() < static_cast<size_t>(jobs); ++next) window.push_back(start_load(next));
  for (size_t index = 0; index < a.traces.size(); ++index) {
    const std::string& file = a.traces[index];
    auto loaded = window.front().get();
    window.pop_front();
    if (next < a.traces.size()) window.push_back(start_load(next++));
    {
      // This trace's output comes next: the progress line makes way, and a new one follows the rest.
      std::lock_guard<std::mutex> g(progress_mu);
      progress->finish();
      done_bytes[index] = total_bytes[index] = 0;
      if (index + 1 < a.traces.size())
        progress = std::make_shared<Progress>(
            *io.err, "loading traces " + std::to_string(index + 2) + "-" + std::to_string(a.traces.size()), io.err_tty);
    }
    if (!loaded.ok()) {
      print_load_error(*io.err, file, loaded.status());
      job.worst = kExitBadInput;
      job.missing.push_back({file, loaded.status().message()});
      if (!a.shard_out.empty())
        job.shard.push_back({{"file", file}, {"exit_code", kExitBadInput}, {"error", loaded.status().message()}});
      continue;
    }
    // An Nsight Systems export of several processes gives one report per process, as rank files do.
    if (loaded->size() > 1) job.multi = true;
    for (trace::Trace& one : *loaded) {
      const std::string label = loaded->size() > 1 ? file + " (pid " + std::to_string(one.meta.main_pid) + ")" : file;
      const std::string stem = loaded->size() > 1 ? safe_name(file) + ".pid" + std::to_string(one.meta.main_pid) : safe_name(file);
      job.worst = std::max(job.worst, report_one(a, base, *rules, one, label, stem, job));
    }
  }
  if (job.multi && !job.rows.empty() && !a.quiet) report::write_trace_table(job.rows, base.out_dir, *io.out);
  return finish_analyze(a, base, job);
}

}  // namespace

Runner add_analyze(CLI::App& app, Io io) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* sub = app.add_subcommand("analyze", "Diagnose existing profiler traces (Kineto JSON .json/.json.gz, native captures, Nsight Systems .sqlite exports / .nsys-rep)");
  sub->add_option("TRACE", args->traces, "Trace file(s)")->required();
  sub->add_option("--out,-o", args->out, "Output folder (one sub-folder per trace when several)")->capture_default_str();
  sub->add_option("--format", args->formats, "Outputs: text,json,html")->delimiter(',')->capture_default_str();
  sub->add_option("--perfetto", args->perfetto, "Also write the timeline as Chrome-trace JSON to FILE");
  sub->add_option("--rules", args->rules_dirs, "Extra rules folder (repeatable; same id overrides a built-in rule)");
  sub->add_option("--gpu-spec", args->gpu_spec,
                  "GPU peak table entries (data/gpu_specs.json's format) matched before the built-in ones");
  sub->add_option("--explain", args->explain, "Explain why rule RULE_ID did or did not fire");
  sub->add_option("--fail-on", args->fail_on, "Exit 3 when the verdict is one of these bottlenecks (CI gate)")
      ->delimiter(',');
  sub->add_option("--device", args->device,
                  "GPU model (e.g. \"Tesla V100-SXM2-32GB\") for traces that do not record it (no deviceProperties)");
  sub->add_flag("--all-steps", args->all_steps,
                "List every step in report.json steps.per_step (default: the first, last and slowest 50)");
  sub->add_option("--max-input-size", args->max_input_size,
                  "Refuse a trace larger than this after decompression (K/M/G/T = powers of 1024)")
      ->capture_default_str();
  sub->add_option("--max-load-seconds", args->max_load_seconds, "Give up loading one trace after this long (0 = no limit)")
      ->capture_default_str();
  sub->add_option("--max-analysis-seconds", args->max_analysis_seconds,
                  "Give up the analysis of one loaded trace after this long (0 = no limit)")
      ->capture_default_str();
  sub->add_option("--jobs,-j", args->jobs, "Traces loaded at once (default: the cores, at most 8, within memory)")
      ->check(non_negative());
  sub->add_option("--executor", args->executor,
                  "local (default) or ray: the traces analysed in shards on a Ray cluster, where they are readable")
      ->capture_default_str();
  sub->add_option("--ray-address", args->ray_address,
                  "Ray dashboard (Jobs API) address, http://host:8265 (default: RAY_ADDRESS)");
  sub->add_option("--parallel", args->parallel, "--executor ray: shards in flight at once")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--ray-shard-size", args->ray_shard_size,
                  "--executor ray: trace files per shard (default: enough for two shards per parallel slot)");
  sub->add_option("--shard-out", args->shard_out, "")->group("");  // internal: a shard of --executor ray
  sub->add_flag("--quiet,-q", args->quiet, "No terminal summary");
  return [args, io] { return run_analyze(*args, io); };
}

}  // namespace profile_train::cli
