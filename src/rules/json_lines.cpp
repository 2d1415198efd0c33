#include "json_lines.h"

#include <cctype>
#include <vector>

namespace profile_train::rules::detail {
namespace {

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

struct Frame {
  bool object = false;
  std::string key;        // object: current member key
  int key_line = 0;       // object: line of the current key
  bool expect_key = true; // object: the next string is a key
  size_t index = 0;       // array: index of the next element
  bool element_started = false;
};

}  // namespace

std::map<std::string, int> json_value_lines(std::string_view text) {
  std::map<std::string, int> lines;
  std::vector<Frame> stack;
  int line = 1;
  auto pointer = [&]() {
    std::string p;
    for (const Frame& f : stack) p += "/" + (f.object ? escape_pointer_token(f.key) : std::to_string(f.index));
    return p;
  };
  // Called when a value (scalar or container) starts at the current line.
  auto value_starts = [&]() {
    if (stack.empty()) {
      lines[""] = line;
      return;
    }
    Frame& top = stack.back();
    lines[pointer()] = top.object ? top.key_line : line;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || c == ':') continue;
    if (c == ',') {
      if (!stack.empty()) {
        Frame& top = stack.back();
        if (top.object) top.expect_key = true;
        else ++top.index;
      }
      continue;
    }
    if (c == '"') {
      std::string s;
      const int start_line = line;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          s.push_back(text[++i]);
          continue;
        }
        if (text[i] == '\n') ++line;
        s.push_back(text[i]);
      }
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().key = s;
        stack.back().key_line = start_line;
        stack.back().expect_key = false;
      } else {
        const int saved = line;
        line = start_line;
        value_starts();
        line = saved;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      value_starts();
      Frame f;
      f.object = c == '{';
      stack.push_back(f);
      continue;
    }
    if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      continue;
    }
    // number / true / false / null
    value_starts();
    while (i + 1 < text.size() && !std::isspace(static_cast<unsigned char>(text[i + 1])) && text[i + 1] != ',' &&
           text[i + 1] != '}' && text[i + 1] != ']')
      ++i;
  }
  return lines;
}

size_t json_depth_exceeded_at(std::string_view text, int max_depth) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::pair<int, int> line_column(std::string_view text, size_t offset) {
  int line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace profile_train::rules::detail
