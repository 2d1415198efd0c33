// Escaping for untrusted strings (kernel names, NVTX ranges, file names, facts) on their way into HTML,
// JSON and <script> blocks. Used by every HTML writer (report, diff, tune).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile_train/common/utf8.h"

namespace profile_train::report::detail {

// Appends `s` as a quoted JSON string. Invalid UTF-8 bytes become U+FFFD; control characters, `<`, `>`,
// `&`, U+2028 and U+2029 become \u escapes, so the result is also safe inside an HTML <script> block.
void append_json_string(std::string& out, std::string_view s);

// Text/attribute-safe HTML: escapes & < > " ' and replaces invalid UTF-8 with U+FFFD.
std::string html_escape(std::string_view s);
void append_html_escaped(std::string& out, std::string_view s);

// JSON text that may be placed verbatim inside <script type="application/json">: never throws (invalid
// UTF-8 in strings is replaced) and `<`, `>`, `&`, U+2028, U+2029 are \u-escaped.
std::string script_safe_json(const nlohmann::json& j);

// The writers' name truncation is the common UTF-8 helper's (profile_train/common/utf8.h).
using ::profile_train::truncate_utf8;

}  // namespace profile_train::report::detail
