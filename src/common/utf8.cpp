#include "profile_train/common/utf8.h"

#include <utility>
#include <vector>

namespace profile_train {

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

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) {
      out += kReplacementChar;
      ++i;
      continue;
    }
    out.append(s.data() + i, len);
    i += len;
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

size_t repair_utf8(nlohmann::json& root) {
  size_t changed = 0;
  // Iterative walk: reports from hostile traces may nest deeply.
  std::vector<nlohmann::json*> stack{&root};
  while (!stack.empty()) {
    nlohmann::json* j = stack.back();
    stack.pop_back();
    if (j->is_string()) {
      auto& s = j->get_ref<std::string&>();
      if (!is_valid_utf8(s)) {
        s = to_valid_utf8(s);
        ++changed;
      }
    } else if (j->is_array()) {
      for (auto& v : *j) stack.push_back(&v);
    } else if (j->is_object()) {
      std::vector<std::string> bad_keys;
      for (auto it = j->begin(); it != j->end(); ++it)
        if (!is_valid_utf8(it.key())) bad_keys.push_back(it.key());
      for (const auto& k : bad_keys) {
        nlohmann::json v = std::move((*j)[k]);
        j->erase(k);
        (*j)[to_valid_utf8(k)] = std::move(v);  // two keys repairing to the same text: the last one stays
        ++changed;
      }
      for (auto it = j->begin(); it != j->end(); ++it) stack.push_back(&it.value());
    }
  }
  return changed;
}

}  // namespace profile_train
