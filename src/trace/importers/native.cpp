// Native capture format reader (owner: agent component). Stub until the agent's format exists.
#include "importers/importers_internal.h"

namespace profile_train::trace {

Importer make_native_importer() {
  Importer imp;
  imp.name = "native";
  imp.sniff = [](std::string_view) { return false; };
  imp.load = [](const std::filesystem::path& p, const LoadOptions&) -> StatusOr<Trace> {
    return Unsupported(p.string() + ": native format reader not implemented yet");
  };
  return imp;
}

}  // namespace profile_train::trace
