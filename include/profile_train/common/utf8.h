// UTF-8 validation and repair for strings that come from outside (file names, command arguments, trace
// names) on their way into JSON documents and the terminal. Never throws except on allocation failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace profile_train {

// U+FFFD REPLACEMENT CHARACTER, encoded.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not valid UTF-8
// (overlongs, surrogates and code points above U+10FFFF are invalid). *cp receives the code point.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp);

bool is_valid_utf8(std::string_view s);

// `s` with every invalid byte replaced by U+FFFD (resynchronizing on the next byte).
std::string to_valid_utf8(std::string_view s);

// `s` cut to at most `max_bytes` bytes on a UTF-8 character boundary, with "…" appended when cut.
std::string truncate_utf8(std::string_view s, size_t max_bytes);

// Replaces invalid UTF-8 in every string value and object key of `j`, in place. Returns how many strings
// (values and keys) were changed; 0 means `j` can be dumped without an error handler.
size_t repair_utf8(nlohmann::json& j);

}  // namespace profile_train
