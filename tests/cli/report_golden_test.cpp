// Golden reports: `profile-train analyze` of every trace of the shared corpus, report.json and the terminal
// summary, compared with tests/golden/reports/. A refactor must leave them identical; a change that alters a
// report on purpose updates them, and the diff of the golden files shows what changed for users:
//   PT_UPDATE_GOLDEN=1 ctest -R ReportGolden      (or build/tests/cli/report_golden_tests with the variable)
// The comparison is structural (a JSON patch of the differences is printed), the terminal text byte for byte
// after the output folder and the corpus folder are replaced with OUT and TRACES.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

class ReportGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportGolden, ReportAndSummaryUnchanged) {
  const std::string rel = GetParam();
  const fs::path traces = PT_TRACES_DIR;
  const fs::path dir = fs::temp_directory_path() / ("pt_golden_" + std::to_string(::getpid()) + "_" + golden_name(rel));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  const fs::path text_file = dir / "stdout.txt";
  const std::string cmd = std::string("cd '") + traces.string() + "' && NO_COLOR=1 COLUMNS=100 '" + PT_BINARY_DIR +
                          "/profile-train' analyze '" + rel + "' --format text,json --out '" + out.string() + "' >'" +
                          text_file.string() + "' 2>'" + (dir / "stderr.txt").string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  // stderr holds progress lines whose presence depends on timing: only stdout is compared.
  ASSERT_EQ(WEXITSTATUS(status), 0) << slurp(text_file) << slurp(dir / "stderr.txt");

  nlohmann::json report = nlohmann::json::parse(slurp(out / "report.json"));
  std::string text = without_progress_lines(slurp(text_file));
  replace_all(text, out.string(), "OUT");
  fs::remove_all(dir);

  const fs::path golden_dir = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";
  const fs::path golden_json = golden_dir / (golden_name(rel) + ".json");
  const fs::path golden_text = golden_dir / (golden_name(rel) + ".txt");
  const char* update = std::getenv("PT_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    spit(golden_json, report.dump(1) + "\n");
    spit(golden_text, text);
    GTEST_SKIP() << "updated " << golden_json.filename() << " and " << golden_text.filename();
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
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = golden_name(info.param);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Corpus, ReportGolden, ::testing::ValuesIn(corpus_traces()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReportGolden);

}  // namespace
