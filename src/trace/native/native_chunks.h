// The native capture file's chunk layer (src/agent/FORMAT.md): reading a file within the size limit, checking
// its header, walking its chunks (skipping damaged ones up to the next valid marker) into a ParsedFile. The
// mapping of its records to trace events is native.cpp. Private to the importers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "importers/importers_internal.h"
#include "profile_train/format/native_format.h"

namespace profile_train::trace::native {

namespace fmt = agent::format;

struct ParsedFile {
  std::filesystem::path path;
  fmt::FileHeader header{};
  nlohmann::json meta = nlohmann::json::object();
  nlohmann::json status = nlohmann::json::object();
  std::vector<nlohmann::json> devices;
  std::unordered_map<uint32_t, std::string> strings;
  std::vector<fmt::Record> records;
  bool truncated = false;  // the file ends inside a chunk
  uint64_t truncated_bytes = 0;
  int64_t damaged_regions = 0;  // stretches skipped up to the next valid chunk marker
  uint64_t damaged_bytes = 0;
  // Records lost to damage. Up to the last intact STATUS chunk the agent's own count of written records
  // is exact; damage after it is estimated from the damaged chunk's header, or from its size in bytes.
  int64_t status_written = -1;       // STATUS.written of the last intact status; -1 = none
  size_t records_before_status = 0;  // records read before that status chunk
  int64_t lost_since_status = 0;     // estimated records in damage after it (or in the whole file)
  bool lost_is_upper_bound = false;  // some of lost_since_status counts damaged bytes as records
  int64_t lost_records() const {
    const int64_t counted =
        status_written >= 0 ? std::max<int64_t>(0, status_written - static_cast<int64_t>(records_before_status)) : 0;
    return counted + lost_since_status;
  }
};

inline int64_t jint(const nlohmann::json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return fallback;
  return it->get<int64_t>();
}
inline std::string jstr(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

// Reads and walks one capture file (`meta_only`: up to its first META chunk, reading only the file's head).
StatusOr<ParsedFile> parse_file(const std::filesystem::path& p, const LoadOptions& options, bool meta_only);
// Walks one capture already in memory; `p` names it in messages (and is where its facts file is looked for,
// when it is a file).
StatusOr<ParsedFile> parse_capture(const std::string& data, const std::filesystem::path& p, bool meta_only);

}  // namespace profile_train::trace::native
