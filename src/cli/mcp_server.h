// `profile-train mcp`: the Model Context Protocol over stdio (newline-delimited JSON-RPC 2.0), so coding agents
// and IDEs drive the diagnosis. See MCP_DESIGN.md for the protocol facts this follows (both the handshake era,
// 2024-11-05 .. 2025-11-25, and the stateless 2026-07-28 revision) and README "MCP server" for the tools.
//
// One thread, one poll() loop over the client's stdin and the pipes of the tool calls in flight. Every tool but
// report_query runs this same binary as a child (`analyze`, `diff`, `rules`, `run`, `tune`: the CLI's own code,
// no second implementation) in its own process group: a crash or a hang of one call never takes the server
// down, a cancellation signals the group, and the child's stderr lines become progress notifications.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"

namespace profile_train::cli::mcp {

struct ServerOptions {
  std::string self_exe;                  // the profile-train binary the tools run (/proc/self/exe)
  bool allow_run = false;                // `run` and `tune` execute commands: off unless --allow-run
  std::vector<std::filesystem::path> roots;  // --root folders: where paths may point when the client declares no roots
  std::filesystem::path work_dir;        // where tool calls without `out` write (one sub-folder per call)
  size_t max_line_bytes = 16u << 20;     // a longer JSON-RPC message is refused (-32700) and skipped
  size_t max_response_bytes = 1u << 20;  // tool results and resource reads are cut to this (said in the result)
  int max_parallel_calls = 4;            // tool calls running at once; more wait their turn
  double cancel_grace_s = 5;             // SIGINT to a cancelled call's group, SIGTERM this later, SIGKILL as much again
  std::string max_input_size = "16G";    // analyze's limits, as the CLI's defaults, unless a call asks lower
  double max_analysis_seconds = 300;
};

// Protocol revisions served, newest first. "2026-07-28" is the stateless revision; the others open with
// `initialize`.
const std::vector<std::string>& supported_versions();

// Percent-decoded local path of a file:// URI; nullopt for another scheme or a remote host.
std::optional<std::filesystem::path> path_from_file_uri(const std::string& uri);
std::string file_uri(const std::filesystem::path& absolute);
// True when `path` (resolved: symlinks, `..`) lies in one of `roots` (resolved the same way).
bool path_within(const std::filesystem::path& path, const std::vector<std::filesystem::path>& roots);

// report_query's work, in process: the value at `pointer` (RFC 6901; "" = the whole document) of `report`,
// or of its top-level `section` when given. When its JSON is longer than `max_bytes`, `value` is left out,
// `truncated` is true and `children` lists the keys (or indices) below it with their sizes, so the caller can
// narrow the query. A Status for a missing pointer or section.
StatusOr<nlohmann::json> query_report(const nlohmann::json& report, const std::string& section,
                                      const std::string& pointer, size_t max_bytes);

// Runs the server until the client closes `in_fd` (exit code 0) or an unrecoverable I/O error (1). Messages
// go to `out_fd` only; `log` gets one line per notable event (stderr in the binary). Tool calls still running
// when the input closes are stopped (their groups signalled) before it returns.
int serve(int in_fd, int out_fd, std::ostream& log, const ServerOptions& options);

}  // namespace profile_train::cli::mcp
