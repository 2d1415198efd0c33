// Maps JSON pointers ("/when", "/evidence/2") of a (valid) JSON text to the 1-based line where the value
// starts (for object members: the line of the key), so rule errors can name FILE:LINE.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace profile_train::rules::detail {

std::map<std::string, int> json_value_lines(std::string_view text);

// 1-based line and column of byte offset `offset` in `text`.
std::pair<int, int> line_column(std::string_view text, size_t offset);

}  // namespace profile_train::rules::detail
