#include "profile_train/report/escape.h"

#include <cstdint>
#include <cstdio>

namespace profile_train::report::detail {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes there are not valid UTF-8
// (overlongs, surrogates and code points above U+10FFFF are invalid). *cp receives the code point.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len;
  uint32_t min;
  uint32_t c;
  if ((b0 & 0xE0) == 0xC0) { len = 2; c = b0 & 0x1F; min = 0x80; }
  else if ((b0 & 0xF0) == 0xE0) { len = 3; c = b0 & 0x0F; min = 0x800; }
  else if ((b0 & 0xF8) == 0xF0) { len = 4; c = b0 & 0x07; min = 0x10000; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    c = (c << 6) | (b & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  *cp = c;
  return len;
}

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

std::string truncate_utf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes;
  // Back off continuation bytes so a multi-byte character is never split.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "\xE2\x80\xA6";
}

}  // namespace profile_train::report::detail
