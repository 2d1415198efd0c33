// Loading traces into the model. Importers are registered, not hard-wired: each one sniffs the first bytes
// of a (decompressed) file and claims it. Owner: trace component.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "profile_train/common/status.h"
#include "profile_train/trace/model.h"

namespace profile_train::trace {

struct LoadOptions {
  // Called now and then with (bytes consumed, total bytes or 0 if unknown). Must be cheap.
  std::function<void(uint64_t, uint64_t)> progress;
  uint64_t max_uncompressed_bytes = uint64_t{64} << 30;  // refuse larger inputs (ResourceExhausted)
  int max_json_depth = 64;                                // deeper nesting is bad input
};

// Loads one trace file of any supported format (Kineto JSON .json/.json.gz, native capture files).
// Errors: BadInput / NotFound / Unsupported / ResourceExhausted with a message that names the file.
StatusOr<Trace> load_trace(const std::filesystem::path& path, const LoadOptions& options = {});

// Importer registry.
struct Importer {
  std::string name;  // "kineto_json", "native"
  // Returns true if `head` (first bytes of the decompressed stream) looks like this importer's format.
  std::function<bool(std::string_view head)> sniff;
  std::function<StatusOr<Trace>(const std::filesystem::path&, const LoadOptions&)> load;
};
void register_importer(Importer importer);
const std::vector<Importer>& importers();

}  // namespace profile_train::trace
