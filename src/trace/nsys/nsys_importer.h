// Nsight Systems input: SQLite exports (`nsys export --type sqlite`, also written by `nsys stats`) and
// .nsys-rep reports (converted with `nsys export` when nsys is on the PATH). Internal to the trace component;
// users go through load_trace / load_trace_set (include/profile_train/trace/importer.h).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/trace/importer.h"

namespace profile_train::trace::nsys {

// False in a build without SQLite (PT_WITH_SQLITE=OFF or libsqlite3-dev absent): loads then say so.
bool built_with_sqlite();

// The 16-byte SQLite header "SQLite format 3\0". Whether the tables are an nsys export's is decided on load.
bool looks_like_sqlite(std::string_view head);

// One Trace per process that ran GPU work (ranks in the order of each process's first device), or one for the
// whole export when it has no GPU records or no process ids on them. Opened read-only; never written.
// Errors (one line, starting with the file name): BadInput (another schema, damaged, truncated, a value over
// 16 MiB), IoError (locked), ResourceExhausted (time limit), Unsupported (built without SQLite).
StatusOr<std::vector<Trace>> load_export(const std::filesystem::path& path, const LoadOptions& options);
StatusOr<std::vector<Trace>> load_export_bytes(std::string_view bytes, const std::string& name,
                                               const LoadOptions& options);

// .nsys-rep / .qdrep by name (their container is nsys's own; only nsys reads it).
bool is_report_path(const std::filesystem::path& path);
// Converts a report with `nsys export --type sqlite` into a temporary folder and loads that. Without nsys on
// the PATH: Unsupported, naming the command to run.
StatusOr<std::vector<Trace>> load_report(const std::filesystem::path& path, const LoadOptions& options);

}  // namespace profile_train::trace::nsys

namespace profile_train::trace {
Importer make_nsys_importer();  // nsys_export.cpp / nsys_stub.cpp
}  // namespace profile_train::trace
