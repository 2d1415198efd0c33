// Helpers for trace tests: temporary files (plain or gzipped) that remove themselves.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "profile_train/trace/importer.h"

namespace profile_train::trace::testing {

// Compresses `data` as one gzip member.
std::string gzip_bytes(std::string_view data);
// Decompresses a gzip or plain file into memory (tests only; real loads stream).
std::string read_maybe_gzip(const std::filesystem::path& path);

// A file in a per-process temporary folder, deleted by the destructor.
class TempFile {
 public:
  TempFile(std::string_view contents, const std::string& suffix = ".json", bool gzip = false);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Loads `json` through load_trace from a temporary file (plain or gzipped).
StatusOr<Trace> load_json(std::string_view json, bool gzip = false, const LoadOptions& opt = {});

// Every field of the model as text (events, strings through their ids, inputs, memory, devices, meta, quality),
// for comparing two loads of one file; meta.parsed_in_parts and source_files are left out.
std::string model_text(const Trace& t);

// Wraps event objects (comma-separated JSON text) into a modern Kineto document.
std::string kineto_doc(std::string_view events, std::string_view extra_top_level = "");

}  // namespace profile_train::trace::testing
