// Golden reports: `profile-train analyze` of every trace of the shared corpus, report.json, report.html and
// the terminal summary, compared with tests/golden/reports/. A refactor must leave them identical; a change that alters a
// report on purpose updates them, and the diff of the golden files shows what changed for users:
//   PT_UPDATE_GOLDEN=1 ctest -R ReportGolden      (or build/tests/cli/report_golden_tests with the variable)
// The comparison is structural (a JSON patch of the differences is printed), the terminal text byte for byte
// after the output folder and the corpus folder are replaced with OUT and TRACES. report.html is compared
// byte for byte after each large inline block (the embedded CSS and scripts, the timeline data) is replaced
// with its length and hash (html_digest): the golden file stays small and reviewable, and any changed byte
// still shows.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The corpus's trace files (relative to PT_TRACES_DIR), sorted; reference outputs (_derived, expected) aside.
std::vector<std::string> corpus_traces() {
  std::vector<std::string> out;
  const fs::path root = PT_TRACES_DIR;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), root).generic_string();
    if (rel.rfind("_derived/", 0) == 0 || rel.find("/expected/") != std::string::npos) continue;
    const bool trace = rel.size() > 8 && (rel.ends_with(".json.gz") || rel.ends_with(".pt.trace.json"));
    if (trace) out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The "loading NAME: 42.0% (...)" lines analyze prints on stderr when a load takes over 500 ms: they depend on
// the machine's load, not on the report.
std::string without_progress_lines(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    const bool progress = line.rfind("loading ", 0) == 0 && line.find("% (") != std::string::npos;
    if (!progress) out += line + "\n";
  }
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

std::string golden_name(std::string rel) {
  for (char& c : rel)
    if (c == '/') c = '_';
  const std::string gz = ".json.gz";
  if (rel.ends_with(gz)) rel.resize(rel.size() - gz.size());
  else if (rel.ends_with(".json")) rel.resize(rel.size() - 5);
  return rel;
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// report.html with the content of every <script> or <style> block longer than kInlineMax bytes replaced by
// "[N bytes, fnv1a64 HEX]". The blocks end at the first "</script>" / "</style>" (the writer escapes them
// inside its data).
std::string html_digest(const std::string& html) {
  constexpr size_t kInlineMax = 2048;
  std::string out;
  size_t at = 0;
  while (at < html.size()) {
    const size_t script = html.find("<script", at), style = html.find("<style", at);
    const size_t open = std::min(script, style);
    if (open == std::string::npos) break;
    const bool is_script = open == script;
    const size_t body = html.find('>', open);
    const size_t close = body == std::string::npos ? body : html.find(is_script ? "</script>" : "</style>", body);
    if (close == std::string::npos) break;
    out.append(html, at, body + 1 - at);
    const std::string_view content(html.data() + body + 1, close - body - 1);
    if (content.size() > kInlineMax) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "[%zu bytes, fnv1a64 %016llx]", content.size(),
                    static_cast<unsigned long long>(fnv1a64(content)));
      out += buf;
    } else {
      out.append(content);
    }
    at = close;
  }
  out.append(html, at, std::string::npos);
  return out;
}

class ReportGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportGolden, ReportHtmlAndSummaryUnchanged) {
  const std::string rel = GetParam();
  const fs::path traces = PT_TRACES_DIR;
  const fs::path dir = fs::temp_directory_path() / ("pt_golden_" + std::to_string(::getpid()) + "_" + golden_name(rel));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  const fs::path text_file = dir / "stdout.txt";
  const std::string cmd = std::string("cd '") + traces.string() + "' && NO_COLOR=1 COLUMNS=100 '" + PT_BINARY_DIR +
                          "/profile-train' analyze '" + rel + "' --format text,json,html --out '" + out.string() + "' >'" +
                          text_file.string() + "' 2>'" + (dir / "stderr.txt").string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  // stderr holds progress lines whose presence depends on timing: only stdout is compared.
  ASSERT_EQ(WEXITSTATUS(status), 0) << slurp(text_file) << slurp(dir / "stderr.txt");

  nlohmann::json report = nlohmann::json::parse(slurp(out / "report.json"));
  std::string html = html_digest(slurp(out / "report.html"));
  replace_all(html, out.string(), "OUT");
  std::string text = without_progress_lines(slurp(text_file));
  replace_all(text, out.string(), "OUT");
  fs::remove_all(dir);

  const fs::path golden_dir = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";
  const fs::path golden_json = golden_dir / (golden_name(rel) + ".json");
  const fs::path golden_text = golden_dir / (golden_name(rel) + ".txt");
  const fs::path golden_html = golden_dir / (golden_name(rel) + ".html.txt");
  const char* update = std::getenv("PT_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    spit(golden_json, report.dump(1) + "\n");
    spit(golden_text, text);
    spit(golden_html, html);
    GTEST_SKIP() << "updated " << golden_json.filename() << ", " << golden_text.filename() << " and "
                 << golden_html.filename();
  }
  ASSERT_TRUE(fs::exists(golden_json)) << "no golden report for " << rel
                                       << ": run with PT_UPDATE_GOLDEN=1 to create it, then review and commit it";
  const nlohmann::json expected = nlohmann::json::parse(slurp(golden_json));
  if (report != expected) {
    const nlohmann::json patch = nlohmann::json::diff(expected, report);
    std::string shown;
    for (size_t i = 0; i < patch.size() && i < 25; ++i) shown += "  " + patch[i].dump().substr(0, 300) + "\n";
    ADD_FAILURE() << rel << ": report.json differs from " << golden_json << " in " << patch.size()
                  << " place(s) (golden -> now):\n"
                  << shown << "If the change is intended, rerun with PT_UPDATE_GOLDEN=1 and commit the golden files.";
  }
  EXPECT_EQ(text, slurp(golden_text)) << rel << ": the terminal summary differs from " << golden_text;
  ASSERT_TRUE(fs::exists(golden_html)) << "no golden report.html for " << rel
                                       << ": run with PT_UPDATE_GOLDEN=1 to create it, then review and commit it";
  EXPECT_EQ(html, slurp(golden_html)) << rel << ": report.html differs from " << golden_html;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = golden_name(info.param);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Corpus, ReportGolden, ::testing::ValuesIn(corpus_traces()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReportGolden);

// Golden diffs: `profile-train diff A B` of pairs of the golden reports above (diff.json, diff.html digest and
// the terminal text), compared with tests/golden/diffs/. The pairs are a before/after of one model (4 workers
// vs none), HTA's trace-diff pair, two models, and a CPU-only run against a GPU one (nulls on one side).
struct DiffPair {
  const char* name;
  const char* a;
  const char* b;
};
const DiffPair kDiffPairs[] = {
    {"resnet50_workers_0_vs_4", "kineto_tb_plugin_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json",
     "kineto_tb_plugin_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json"},
    {"hta_trace_diff_control_vs_test", "hta_trace_diff_control_control.json", "hta_trace_diff_test_test.json"},
    {"param_linear_vs_resnet", "param_linear_kineto.json", "param_resnet_kineto.json"},
    {"cpu_only_vs_amd", "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json",
     "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json"},
};

class DiffGolden : public ::testing::TestWithParam<DiffPair> {};

TEST_P(DiffGolden, DiffJsonHtmlAndTextUnchanged) {
  const DiffPair& pair = GetParam();
  const fs::path reports = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";
  const fs::path dir = fs::temp_directory_path() / ("pt_golden_diff_" + std::to_string(::getpid()) + "_" + pair.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  const fs::path text_file = dir / "stdout.txt";
  const std::string cmd = std::string("cd '") + reports.string() + "' && NO_COLOR=1 COLUMNS=100 '" + PT_BINARY_DIR +
                          "/profile-train' diff '" + pair.a + "' '" + pair.b + "' --format text,json,html --out '" +
                          out.string() + "' >'" + text_file.string() + "' 2>'" + (dir / "stderr.txt").string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  ASSERT_EQ(WEXITSTATUS(status), 0) << slurp(text_file) << slurp(dir / "stderr.txt");
  const nlohmann::json diff = nlohmann::json::parse(slurp(out / "diff.json"));
  std::string html = html_digest(slurp(out / "diff.html"));
  std::string text = slurp(text_file);
  replace_all(text, out.string(), "OUT");
  fs::remove_all(dir);

  const fs::path golden_dir = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "diffs";
  const fs::path golden_json = golden_dir / (std::string(pair.name) + ".json");
  const fs::path golden_text = golden_dir / (std::string(pair.name) + ".txt");
  const fs::path golden_html = golden_dir / (std::string(pair.name) + ".html.txt");
  const char* update = std::getenv("PT_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    spit(golden_json, diff.dump(1) + "\n");
    spit(golden_text, text);
    spit(golden_html, html);
    GTEST_SKIP() << "updated the golden diff " << pair.name;
  }
  ASSERT_TRUE(fs::exists(golden_json)) << "no golden diff " << pair.name
                                       << ": run with PT_UPDATE_GOLDEN=1 to create it, then review and commit it";
  const nlohmann::json expected = nlohmann::json::parse(slurp(golden_json));
  EXPECT_EQ(diff, expected) << pair.name << ": diff.json differs from " << golden_json << ":\n"
                            << nlohmann::json::diff(expected, diff).dump(1).substr(0, 4000);
  EXPECT_EQ(text, slurp(golden_text)) << pair.name << ": the diff text differs from " << golden_text;
  EXPECT_EQ(html, slurp(golden_html)) << pair.name << ": diff.html differs from " << golden_html;
}

INSTANTIATE_TEST_SUITE_P(GoldenReports, DiffGolden, ::testing::ValuesIn(kDiffPairs),
                         [](const ::testing::TestParamInfo<DiffPair>& info) { return std::string(info.param.name); });

// Golden job diff: two job folders made of golden reports (one sub-folder per rank, no job.json: the job
// summaries are computed), HTA's two sampled ranks of one job (world 128) against the two ranks of HTA's
// nccl_parser_config / df_index_resolver traces (world 2), paired by rank number; compared with
// tests/golden/diffs/job_*.
TEST(JobDiffGolden, DiffJsonHtmlAndTextUnchanged) {
  const std::string name = "job_hta_sampled_ranks_vs_world2_ranks";
  const fs::path reports = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";
  const fs::path dir = fs::temp_directory_path() / ("pt_golden_jobdiff_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::pair<const char*, const char*> folders[] = {
      {"a/sampled_rank-0", "hta_timeline_analysis_sampled_rank-0.json"},
      {"a/sampled_rank-1", "hta_trace_filter_sampled_rank-1.json"},
      {"b/nccl_data", "hta_nccl_parser_config_nccl_data.json"},  // rank 0
      {"b/df_index_resolver", "hta_df_index_resolver_df_index_resolver.json"},  // rank 1
  };
  for (const auto& [folder, report] : folders) {
    fs::create_directories(dir / folder);
    fs::copy_file(reports / report, dir / folder / "report.json");
  }
  const fs::path text_file = dir / "stdout.txt";
  const std::string cmd = "cd '" + dir.string() + "' && NO_COLOR=1 COLUMNS=100 '" + PT_BINARY_DIR +
                          "/profile-train' diff a b --format text,json,html --out out >'" + text_file.string() + "' 2>'" +
                          (dir / "stderr.txt").string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  ASSERT_EQ(WEXITSTATUS(status), 0) << slurp(text_file) << slurp(dir / "stderr.txt");
  const nlohmann::json diff = nlohmann::json::parse(slurp(dir / "out" / "diff.json"));
  const std::string html = html_digest(slurp(dir / "out" / "diff.html"));
  const std::string text = slurp(text_file);
  fs::remove_all(dir);

  const fs::path golden_dir = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "diffs";
  const fs::path golden_json = golden_dir / (name + ".json");
  const fs::path golden_text = golden_dir / (name + ".txt");
  const fs::path golden_html = golden_dir / (name + ".html.txt");
  const char* update = std::getenv("PT_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    spit(golden_json, diff.dump(1) + "\n");
    spit(golden_text, text);
    spit(golden_html, html);
    GTEST_SKIP() << "updated the golden job diff " << name;
  }
  ASSERT_TRUE(fs::exists(golden_json)) << "no golden job diff " << name
                                       << ": run with PT_UPDATE_GOLDEN=1 to create it, then review and commit it";
  const nlohmann::json expected = nlohmann::json::parse(slurp(golden_json));
  EXPECT_EQ(diff, expected) << name << ": diff.json differs from " << golden_json << ":\n"
                            << nlohmann::json::diff(expected, diff).dump(1).substr(0, 4000);
  EXPECT_EQ(text, slurp(golden_text)) << name << ": the diff text differs from " << golden_text;
  EXPECT_EQ(html, slurp(golden_html)) << name << ": diff.html differs from " << golden_html;
}

}  // namespace
