// `profile-train mcp`: the Model Context Protocol server over stdio (mcp_server.h).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "mcp_server.h"
#include "profile_train/common/byte_size.h"

namespace profile_train::cli {

namespace {

struct McpArgs {
  bool allow_run = false;
  std::vector<std::string> roots;
  std::string work_dir;
  std::string max_response = "1M";
  std::string max_message = "16M";
  int max_parallel = 4;
  std::string max_input_size = "16G";
  double max_analysis_seconds = 300;
};

int run_mcp(const McpArgs& a, const Io& io) {
  namespace fs = std::filesystem;
  mcp::ServerOptions o;
  std::error_code ec;
  o.self_exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec || o.self_exe.empty()) {
    *io.err << "profile-train mcp: cannot find this binary (/proc/self/exe): " << ec.message() << "\n";
    return kExitFailure;
  }
  o.allow_run = a.allow_run;
  for (const auto& r : a.roots) {
    const fs::path p = fs::weakly_canonical(fs::absolute(r, ec), ec);
    if (ec || !fs::is_directory(p, ec)) {
      *io.err << "profile-train mcp: --root " << terminal_safe(r) << ": not a folder\n";
      return kExitBadInput;
    }
    o.roots.push_back(p);
  }
  auto bytes = [&](const std::string& text, const char* opt, size_t* out) {
    auto v = parse_byte_size(text);
    if (!v.ok() || *v < 4096) {
      *io.err << "profile-train mcp: " << opt << " " << terminal_safe(text) << ": "
              << (v.ok() ? std::string("at least 4K") : v.status().message()) << "\n";
      return false;
    }
    *out = static_cast<size_t>(*v);
    return true;
  };
  if (!bytes(a.max_response, "--max-response-size", &o.max_response_bytes)) return kExitBadInput;
  if (!bytes(a.max_message, "--max-message-size", &o.max_line_bytes)) return kExitBadInput;
  if (auto v = parse_byte_size(a.max_input_size); !v.ok()) {
    *io.err << "profile-train mcp: --max-input-size " << terminal_safe(a.max_input_size) << ": " << v.status().message() << "\n";
    return kExitBadInput;
  }
  o.max_input_size = a.max_input_size;
  o.max_analysis_seconds = a.max_analysis_seconds;
  o.max_parallel_calls = a.max_parallel;
  if (!a.work_dir.empty()) {
    o.work_dir = fs::absolute(a.work_dir, ec);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    o.work_dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("profile-train-mcp-" + std::to_string(::getuid()));
  }
  *io.err << "profile-train mcp: serving on stdio (reports in " << terminal_safe(o.work_dir.string()) << "; run/tune "
          << (o.allow_run ? "enabled" : "off: --allow-run enables them") << ")\n";
  io.err->flush();
  return mcp::serve(0, 1, *io.err, o);
}

}  // namespace

Runner add_mcp(CLI::App& app, Io io) {
  auto args = std::make_shared<McpArgs>();
  auto* sub = app.add_subcommand("mcp", "Serve the diagnosis to coding agents and IDEs: Model Context Protocol over stdio");
  sub->add_flag("--allow-run", args->allow_run, "Enable the run and tune tools (they execute commands)");
  sub->add_option("--root", args->roots,
                  "Folder that tool paths may point into when the client declares no roots (repeatable; default: "
                  "the working folder)");
  sub->add_option("--work-dir", args->work_dir,
                  "Where calls without `out` write their reports (default: $TMPDIR/profile-train-mcp-UID)");
  sub->add_option("--max-response-size", args->max_response, "Largest tool result or resource text (K/M/G)")
      ->capture_default_str();
  sub->add_option("--max-message-size", args->max_message, "Longest JSON-RPC message accepted (K/M/G)")->capture_default_str();
  sub->add_option("--max-parallel", args->max_parallel, "Tool calls running at once (more wait)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--max-input-size", args->max_input_size, "analyze: largest trace after decompression (calls may ask less)")
      ->capture_default_str();
  sub->add_option("--max-analysis-seconds", args->max_analysis_seconds,
                  "analyze: longest analysis of one trace (calls may ask less; 0 = no limit)")
      ->check(non_negative())
      ->capture_default_str();
  return [args, io] { return run_mcp(*args, io); };
}

}  // namespace profile_train::cli
