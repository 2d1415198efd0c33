// The run / agent / shim protocol (include/profile_train/format/protocol.h) is the only spelling of its strings:
// the Python shim's source uses exactly the environment names and control marks marked for it there, and no
// C++ source spells one of them out instead of using the header.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "profile_train/format/protocol.h"

namespace fs = std::filesystem;
namespace protocol = profile_train::agent::protocol;

namespace {

const fs::path kSource = PT_SOURCE_DIR;
const fs::path kShimDir = kSource / "src" / "agent" / "python";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The shim's Python sources (profile_train_shim.py, the patches and module ranges next to it, sitecustomize.py),
// concatenated in name order.
std::string shim_sources() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kShimDir)) {
    if (e.path().extension() == ".py") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& f : files) out += slurp(f) + "\n";
  return out;
}

std::set<std::string> matches(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[0].str());
  return out;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

TEST(Protocol, TheShimReadsExactlyTheEnvironmentNamesOfTheProtocol) {
  const std::string shim = shim_sources();
  ASSERT_FALSE(shim.empty()) << kShimDir;
  std::set<std::string> used = matches(shim, std::regex("PROFILE_TRAIN_[A-Z0-9_]+"));
  std::set<std::string> expected;
  for (const auto& e : protocol::kEnvVars)
    if (e.read_by_shim) expected.insert(e.name);
  EXPECT_EQ(used, expected) << "shim: " << joined(used) << "\nprotocol.h: " << joined(expected);
  // Every one is read through the environment, not only named in a comment.
  for (const auto& name : expected)
    EXPECT_TRUE(std::regex_search(shim, std::regex("(environ\\.get|_env_int)\\(\"" + name + "\"")))
        << name << " is not read by the shim";
}

TEST(Protocol, TheShimSendsExactlyTheControlMarksOfTheProtocol) {
  const std::string shim = shim_sources();
  ASSERT_FALSE(shim.empty()) << kShimDir;
  const std::set<std::string> used = matches(shim, std::regex(std::string(protocol::kControlPrefix) + "[a-z_]+"));
  std::set<std::string> expected;
  for (const auto& m : protocol::kControlMarks) {
    EXPECT_EQ(std::string(m.text).rfind(protocol::kControlPrefix, 0), 0u) << m.text;
    if (m.sent_by_shim) expected.insert(m.text);
  }
  EXPECT_EQ(used, expected) << "shim: " << joined(used) << "\nprotocol.h: " << joined(expected);
}

TEST(Protocol, TheShimNamesItsStepsAndFactsFilesAsTheProtocolSays) {
  const std::string shim = shim_sources();
  EXPECT_NE(shim.find("\"" + std::string(protocol::kStepRangePrefix) + "%d\""), std::string::npos);
  EXPECT_NE(shim.find("\"" + std::string(protocol::kFactsFilePrefix) + "%d" + std::string(protocol::kFactsFileExtension) +
                      "\""),
            std::string::npos);
}

// "Defined once": C++ code uses the header's constants; a literal "PROFILE_TRAIN_..." or "profile_train:..."
// anywhere else in src/ or include/ is a second definition.
TEST(Protocol, NoCppSourceSpellsAProtocolStringItself) {
  const fs::path header = kSource / "include" / "profile_train" / "format" / "protocol.h";
  const std::regex literal("\"(PROFILE_TRAIN_[A-Z0-9_]+|profile_train:[a-z_]*)");
  std::vector<std::string> offenders;
  for (const fs::path& root : {kSource / "src", kSource / "include"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h") || fs::equivalent(entry.path(), header)) continue;
      const std::string text = slurp(entry.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), literal); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1].str();
        offenders.push_back(fs::relative(entry.path(), kSource).string() + ": " + name);
      }
    }
  }
  EXPECT_TRUE(offenders.empty()) << [&] {
    std::string s;
    for (const auto& o : offenders) s += o + "\n";
    return s;
  }();
}

}  // namespace
