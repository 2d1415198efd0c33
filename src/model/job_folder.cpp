// load_diff_input: a report or a job folder (one report per rank, job.json), as `diff` reads them
// (model/job_json.h).
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "profile_train/common/json_bounded.h"
#include "profile_train/model/job_json.h"
#include "profile_train/model/report_json.h"

namespace profile_train::model {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Natural order of folder names: runs of digits compare as numbers (rank2 < rank10), the rest byte by byte.
bool natural_less(const std::string& x, const std::string& y) {
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    const bool dx = std::isdigit(static_cast<unsigned char>(x[i])), dy = std::isdigit(static_cast<unsigned char>(y[j]));
    if (dx && dy) {
      size_t ei = i, ej = j;
      while (ei < x.size() && std::isdigit(static_cast<unsigned char>(x[ei]))) ++ei;
      while (ej < y.size() && std::isdigit(static_cast<unsigned char>(y[ej]))) ++ej;
      std::string a = x.substr(i, ei - i), b = y.substr(j, ej - j);
      a.erase(0, std::min(a.find_first_not_of('0'), a.size()));
      b.erase(0, std::min(b.find_first_not_of('0'), b.size()));
      if (a.size() != b.size()) return a.size() < b.size();
      if (a != b) return a < b;
      i = ei, j = ej;
      continue;
    }
    if (x[i] != y[j]) return static_cast<unsigned char>(x[i]) < static_cast<unsigned char>(y[j]);
    ++i, ++j;
  }
  return x.size() - i < y.size() - j || (x.size() - i == y.size() - j && x < y);
}

StatusOr<JobSummary> load_job_json(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError(file.string() + ": cannot open");
  json j;
  try {
    j = parse_json_bounded(in);
  } catch (const JsonTooDeep& e) {
    return ResourceExhausted(file.string() + ": not a job summary (" + e.what() + ")");
  } catch (const json::exception& e) {
    return BadInput(file.string() + ": not valid JSON (" + e.what() + ")");
  }
  auto summary = job_summary_from_json(j);
  if (!summary.ok()) {
    std::string why = summary.status().message();
    if (why.rfind("job.json: ", 0) == 0) why.erase(0, 10);
    return Status(summary.status().code(), file.string() + ": " + why);
  }
  return summary;
}

// The sub-folders of `dir` that hold a report.json, in natural name order.
std::vector<fs::path> rank_folders(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code e;
    if (it->is_directory(e) && fs::exists(it->path() / "report.json", e)) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end(), natural_less);
  std::vector<fs::path> out;
  for (const auto& n : names) out.push_back(dir / n);
  return out;
}

std::optional<int64_t> recorded_rank(const Report& r) {
  return r.source.distributed ? r.source.distributed->rank : std::nullopt;
}

}  // namespace

StatusOr<DiffInput> load_diff_input(const fs::path& path) {
  std::error_code ec;
  DiffInput input;
  if (!fs::is_directory(path, ec) || fs::exists(path / "report.json", ec)) {
    auto report = load_report(path);
    if (!report.ok()) return report.status();
    input.report = std::move(*report);
    return input;
  }
  JobFolder job;
  const bool has_job_json = fs::exists(path / "job.json", ec);
  if (has_job_json) {
    auto summary = load_job_json(path / "job.json");
    if (!summary.ok()) return summary.status();
    if (summary->ranks.empty()) return BadInput((path / "job.json").string() + ": lists no ranks");
    job.summary = std::move(*summary);
  }
  const std::vector<fs::path> folders = rank_folders(path);
  if (folders.empty() && !has_job_json)
    return NotFound(path.string() + ": no report.json, job.json or sub-folder with a report.json in this folder");
  std::vector<RankReport> found;
  for (const fs::path& f : folders) {
    auto report = load_report(f);
    if (!report.ok()) return report.status();
    found.push_back({f.string(), std::move(*report)});
  }
  if (!job.summary) {
    job.ranks = std::move(found);
    input.job = std::move(job);
    return input;
  }
  // job.json names the ranks: each one's report by its recorded rank, else by its folder (run's DIR/rankN, whose
  // job.json file is DIR/rankN/report.json).
  std::set<size_t> used;
  for (const JobRank& r : job.summary->ranks) {
    std::optional<size_t> match;
    for (size_t i = 0; i < found.size() && !match; ++i)
      if (!used.count(i) && recorded_rank(found[i].report) == r.rank) match = i;
    for (size_t i = 0; i < found.size() && !match; ++i)
      if (!used.count(i) && !recorded_rank(found[i].report) &&
          fs::path(r.file).parent_path().filename() == fs::path(found[i].file).filename())
        match = i;
    if (!match)
      return NotFound(path.string() + ": job.json lists rank " + std::to_string(r.rank) + " (" + r.file +
                      ") but no sub-folder holds its report.json");
    used.insert(*match);
    job.ranks.push_back(std::move(found[*match]));
  }
  input.job = std::move(job);
  return input;
}

}  // namespace profile_train::model
