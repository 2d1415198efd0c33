// Nsight Systems exports in a build without SQLite (PT_WITH_SQLITE=OFF or libsqlite3-dev absent): the files
// are still recognised, and loading one says what is missing.
#include "nsys/nsys_importer.h"

namespace profile_train::trace::nsys {

bool built_with_sqlite() { return false; }

namespace {
Status no_sqlite(const std::string& name) {
  return Unsupported(name + ": an SQLite file (Nsight Systems export?), and this profile-train was built without "
                            "SQLite support (install libsqlite3-dev and rebuild)");
}
}  // namespace

StatusOr<std::vector<Trace>> load_export(const std::filesystem::path& path, const LoadOptions&) {
  return no_sqlite(path.string());
}

StatusOr<std::vector<Trace>> load_export_bytes(std::string_view, const std::string& name, const LoadOptions&) {
  return no_sqlite(name);
}

}  // namespace profile_train::trace::nsys
