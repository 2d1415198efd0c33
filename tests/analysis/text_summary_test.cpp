// The terminal summary (src/report/text_summary.cpp): verdict first, figures, colors only on request.
#include <gtest/gtest.h>

#include <sstream>

#include "profile_train/analysis/analyze.h"
#include "profile_train/report/writers.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

TEST(TextSummary, VerdictFirstAndColorOnlyWhenAsked) {
  auto r = build_report(testing::TraceBuilder()
                            .device(0)
                            .annotation("ProfilerStep#1", 0, 100)
                            .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40)
                            .runtime("cudaLaunchKernel", 40, 1, 1)
                            .kernel("volta_sgemm_128x64_nn", 41, 59, 1)
                            .build());
  r["recommendations"] = nlohmann::json::array({{{"id", "dataloader-workers"}, {"title", "Use workers"}, {"tier", 1},
                                                 {"estimated_speedup_max", 1.67}, {"evidence", {"data loading 40%"}}}});
  std::ostringstream plain, color;
  report::write_text_summary(r, plain, {});
  report::write_text_summary(r, color, {.color = true});
  const std::string p = plain.str();
  EXPECT_EQ(p.rfind("VERDICT  input_pipeline", 0), 0u) << p;
  EXPECT_EQ(p.find('\033'), std::string::npos);
  EXPECT_NE(color.str().find("\033["), std::string::npos);
  EXPECT_NE(p.find("data_loading     40.0%"), std::string::npos) << p;
  EXPECT_NE(p.find("[dataloader-workers] Use workers  (up to 1.67x)"), std::string::npos) << p;
  EXPECT_NE(p.find("Missing: "), std::string::npos) << p;  // no occupancy / memory samples in this trace
}

}  // namespace
}  // namespace profile_train::analysis
