#include "profile_train/report/escape.h"

#include <cstdint>
#include <cstdio>

#include "profile_train/common/utf8.h"

namespace profile_train::report::detail {
namespace {

void append_u_escape(std::string& out, uint32_t cp) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  out += buf;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) {  // invalid byte: replacement character, resync on the next byte
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (len == 1) {
      const char c = s[i];
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '<': case '>': case '&': append_u_escape(out, cp); break;
        default:
          if (cp < 0x20 || cp == 0x7F) append_u_escape(out, cp);
          else out += c;
      }
    } else if (cp == 0x2028 || cp == 0x2029) {
      append_u_escape(out, cp);
    } else {
      out.append(s.data() + i, len);
    }
    i += len;
  }
  out += '"';
}

void append_html_escaped(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    if (len == 1) {
      switch (s[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default:
          // Control characters other than tab/newline are not allowed in HTML text.
          if (cp < 0x20 && cp != '\n' && cp != '\t') out += "\xEF\xBF\xBD";
          else out += s[i];
      }
    } else {
      out.append(s.data() + i, len);
    }
    i += len;
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  append_html_escaped(out, s);
  return out;
}

std::string script_safe_json(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 16);
  // `<`, `>`, `&` and U+2028/2029 can only occur inside JSON strings, so a byte-wise replacement by their
  // \u escapes keeps the JSON equal while making it inert inside <script>.
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
             (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace profile_train::report::detail
