// Kineto Chrome-trace JSON importer (owner: trace component). Stub.
#include "importers/importers_internal.h"

namespace profile_train::trace {

Importer make_kineto_json_importer() {
  Importer imp;
  imp.name = "kineto_json";
  imp.sniff = [](std::string_view) { return false; };
  imp.load = [](const std::filesystem::path& p, const LoadOptions&) -> StatusOr<Trace> {
    return Unsupported(p.string() + ": Kineto importer not implemented yet");
  };
  return imp;
}

}  // namespace profile_train::trace
