// HTML report assets (reports/html/*), embedded into the binary at build time by embed_assets.cmake so the
// written HTML is self-contained and the tool needs no data files at run time.
#pragma once

#include <string_view>

namespace profile_train::report::detail {

std::string_view asset_report_css();  // reports/html/report.css
std::string_view asset_report_js();   // reports/html/report.js (timeline, copy buttons, render marker)
std::string_view asset_head_js();     // reports/html/head.js (error/alert hooks; runs first)

}  // namespace profile_train::report::detail
