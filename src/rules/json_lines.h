// Maps JSON pointers ("/when", "/evidence/2") of a (valid) JSON text to the 1-based line where the value
// starts (for object members: the line of the key), so rule errors can name FILE:LINE.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace profile_train::rules::detail {

std::map<std::string, int> json_value_lines(std::string_view text);

// Byte offset of the first '{' or '[' that opens a container deeper than `max_depth` levels (strings are
// skipped), or npos. Linear in the text; run before parsing so that deep nesting costs neither the
// quadratic pointer bookkeeping of json_value_lines nor a parse.
inline constexpr int kMaxRuleJsonDepth = 64;  // as LoadOptions::max_json_depth for traces; rules use 4
size_t json_depth_exceeded_at(std::string_view text, int max_depth);

// 1-based line and column of byte offset `offset` in `text`.
std::pair<int, int> line_column(std::string_view text, size_t offset);

}  // namespace profile_train::rules::detail
