// libFuzzer target for report.json as read by `diff`: arbitrary bytes through load_report (an in-memory
// file), then diffed against a real report both ways and rendered as text and HTML.
// Build and run: bench/fuzz/fuzz.sh diff [SECONDS] (clang, -DPT_FUZZ=ON).
#include <sstream>

#include "fuzz_common.h"
#include "profile_train/analysis/diff.h"
#include "profile_train/model/report_json.h"
#include "profile_train/report/diff.h"
#include "profile_train/model/report_json.h"

namespace model = profile_train::model;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profile_train;
  auto a = model::load_report(pt_fuzz::as_file(data, size));
  if (!a.ok()) return 0;
  static const model::Report good = *model::report_from_json(pt_fuzz::sample_report());
  for (const auto& d : {analysis::diff_reports(*a, good, "fuzz", "good"), analysis::diff_reports(good, *a, "good", "fuzz"),
                        analysis::diff_reports(*a, *a, "fuzz", "fuzz")}) {
    std::ostringstream out;
    report::write_diff_text(d, out);
    (void)report::render_diff_html(d);
    (void)model::to_json(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return 0;
}
