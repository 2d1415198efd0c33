// Parsing a JSON document that someone else wrote (report.json for `diff` and `rules explain`) with a nesting
// limit: nlohmann's parser itself has none, and 20 MB of nested arrays cost about 750 MB of json values
// before the document could be refused. The parse stops at the first value nested deeper than the limit.
#pragma once

#include <istream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace profile_train {

// Deeper than any report.json we write (about 6 levels), as for traces and rule files.
inline constexpr int kMaxDocumentJsonDepth = 64;

struct JsonTooDeep : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses `in`; throws nlohmann::json::exception on malformed JSON and JsonTooDeep when an object or array
// opens deeper than `max_depth` (both are std::exception: the caller turns them into one error line).
inline nlohmann::json parse_json_bounded(std::istream& in, int max_depth = kMaxDocumentJsonDepth) {
  using json = nlohmann::json;
  json::parser_callback_t limit = [max_depth](int depth, json::parse_event_t event, json&) {
    // `depth` is the depth of the container being opened (the top-level value is depth 0).
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= max_depth)
      throw JsonTooDeep("JSON nested deeper than " + std::to_string(max_depth) + " levels");
    return true;
  };
  return json::parse(in, limit);
}

}  // namespace profile_train
