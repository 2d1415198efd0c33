// `profile-train mcp` (mcp_server.h): JSON-RPC over stdio, the two protocol eras, the tools and their children.
#include "mcp_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "profile_train/common/byte_size.h"
#include "profile_train/common/json_bounded.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/utf8.h"
#include "profile_train/common/version.h"
#include "profile_train/platform/process.h"

namespace profile_train::cli::mcp {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kModern = "2026-07-28";
constexpr const char* kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// JSON-RPC 2.0 and MCP error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kUnsupportedVersion = -32022;  // 2026-07-28: data {supported, requested}

constexpr size_t kMaxStdoutKept = 64u << 20;  // a child's stdout kept (rules list --json, the summary)
constexpr size_t kMaxStderrKept = 16u << 10;  // the end of a child's stderr, for its error message
constexpr size_t kMaxReportFile = 512u << 20; // report.json / diff.json / tune.json read back
constexpr size_t kMaxResourceBytes = 16u << 20;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json server_info() { return {{"name", "profile-train"}, {"version", kVersion}}; }

// "2025-06-18" and later carry structuredContent / outputSchema / title.
bool has_structured_output(const std::string& version) { return version >= "2025-06-18"; }

StatusOr<std::string> read_file_bounded(const fs::path& p, size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return Status(StatusCode::kNotFound, "not a file: " + p.string());
  const auto size = fs::file_size(p, ec);
  if (ec) return Status(StatusCode::kIoError, "cannot read " + p.string() + ": " + ec.message());
  if (size > max_bytes)
    return Status(StatusCode::kResourceExhausted,
                  p.string() + " is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max_bytes));
  std::ifstream in(p, std::ios::binary);
  if (!in) return Status(StatusCode::kIoError, "cannot open " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

StatusOr<json> read_json_file(const fs::path& p) {
  auto text = read_file_bounded(p, kMaxReportFile);
  if (!text.ok()) return text.status();
  try {
    std::istringstream in(*text);
    return parse_json_bounded(in);
  } catch (const std::exception& e) {
    return Status(StatusCode::kBadInput, p.string() + ": not a JSON document (" + e.what() + ")");
  }
}

// A child's stderr line as a progress message: without escapes and carriage-return redraws.
std::string clean_line(std::string_view line) {
  const size_t cr = line.rfind('\r');
  if (cr != std::string_view::npos && cr + 1 < line.size()) line = line.substr(cr + 1);
  return truncate_utf8(terminal_safe(line), 500);
}

// The last non-empty line of a child's stderr, its error message ("profile-train: ...").
std::string last_error_line(const std::string& err) {
  std::string best;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    const std::string clean = clean_line(line);
    if (clean.find_first_not_of(" \t") == std::string::npos) continue;
    if (clean.rfind("profile-train", 0) == 0 || best.empty()) best = clean;
  }
  return best;
}

// ---- argument checking: every tool's arguments are checked against its schema's shapes here, so a wrong
// type is one clear tool error, never a child started with nonsense.
class Args {
 public:
  Args(const json& args, const json& schema) : args_(args) {
    if (!args_.is_object()) {
      errors_.push_back("arguments must be an object");
      return;
    }
    const json& props = schema["properties"];
    for (const auto& [k, v] : args_.items())
      if (!props.contains(k)) errors_.push_back("unknown argument '" + k + "'");
    for (const auto& r : schema.value("required", json::array()))
      if (!args_.contains(r.get<std::string>())) errors_.push_back("missing required argument '" + r.get<std::string>() + "'");
  }
  std::optional<std::string> str(const char* k) {
    auto it = find(k);
    if (!it) return std::nullopt;
    if (!it->is_string()) return bad(k, "a string");
    return it->get<std::string>();
  }
  std::vector<std::string> strs(const char* k) {
    auto it = find(k);
    if (!it) return {};
    if (!it->is_array()) return bad(k, "an array of strings"), std::vector<std::string>{};
    std::vector<std::string> out;
    for (const auto& v : *it) {
      if (!v.is_string()) return bad(k, "an array of strings"), std::vector<std::string>{};
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  std::optional<double> num(const char* k, double lo) {
    auto it = find(k);
    if (!it) return std::nullopt;
    if (!it->is_number() || !(it->get<double>() >= lo)) return bad(k, "a number >= " + format_num(lo)), std::nullopt;
    return it->get<double>();
  }
  std::optional<bool> flag(const char* k) {
    auto it = find(k);
    if (!it) return std::nullopt;
    if (!it->is_boolean()) return bad(k, "true or false"), std::nullopt;
    return it->get<bool>();
  }
  void fail(std::string why) { errors_.push_back(std::move(why)); }
  bool ok() const { return errors_.empty(); }
  std::string message() const {
    std::string m = "invalid arguments: ";
    for (size_t i = 0; i < errors_.size(); ++i) m += (i ? "; " : "") + errors_[i];
    return m;
  }

 private:
  static std::string format_num(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  const json* find(const char* k) const {
    if (!args_.is_object()) return nullptr;
    auto it = args_.find(k);
    return it == args_.end() || it->is_null() ? nullptr : &*it;
  }
  std::nullopt_t bad(const char* k, const std::string& what) {
    errors_.push_back("'" + std::string(k) + "' must be " + what);
    return std::nullopt;
  }
  const json& args_;
  std::vector<std::string> errors_;
};

// ---- the tools' descriptions (tools/list) -------------------------------------------------------------------

json str_prop(const std::string& d) { return {{"type", "string"}, {"description", d}}; }
json strs_prop(const std::string& d) { return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", d}}; }
json num_prop(const std::string& d) { return {{"type", "number"}, {"minimum", 0}, {"description", d}}; }
json bool_prop(const std::string& d) { return {{"type", "boolean"}, {"description", d}}; }
json any_object() { return {{"type", "object"}}; }

json verdict_schema() {
  return {{"type", "object"},
          {"properties",
           {{"bottleneck", {{"type", "string"}}},
            {"confidence", {{"type", "number"}}},
            {"summary", {{"type", "string"}}},
            {"evidence", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}};
}

json report_entry_schema() {
  return {{"type", "object"},
          {"properties",
           {{"trace", {{"type", "string"}}},
            {"report_json", {{"type", "string"}}},
            {"report_html", {{"type", "string"}}},
            {"verdict", verdict_schema()},
            {"plan", any_object()},
            {"step_ms", {{"type", {"number", "null"}}}},
            {"sections", any_object()}}},
          {"required", {"report_json", "verdict", "plan"}}};
}

struct ToolDef {
  std::string name, title, description;
  json input, output;  // output: null = no outputSchema
  bool needs_run = false;
};

std::vector<ToolDef> tool_defs() {
  std::vector<ToolDef> t;
  t.push_back(
      {"analyze", "Diagnose profiler traces",
       "Diagnose what limits the training step in existing profiler traces (Kineto JSON .json/.json.gz, native "
       "captures, Nsight Systems .sqlite/.nsys-rep). Returns the verdict, the plan (fixes with bounded speedups) and "
       "the report paths; `sections` adds report.json sections (e.g. breakdown, gpu, host, recommendations). "
       "Several rank files of one job also get job.json.",
       {{"type", "object"},
        {"properties",
         {{"paths", strs_prop("Trace files (absolute, or relative to the first root)")},
          {"out", str_prop("Output folder (default: a new folder in the server's work folder)")},
          {"rules", strs_prop("Extra rules folders")},
          {"gpu_spec", str_prop("GPU peak-table file (data/gpu_specs.json's format)")},
          {"device", str_prop("GPU model for traces that do not record it, e.g. \"NVIDIA H100 80GB HBM3\"")},
          {"all_steps", bool_prop("List every step in steps.per_step")},
          {"sections", strs_prop("report.json sections to return with the verdict (\"all\" for every one)")},
          {"max_input_size", str_prop("Refuse a trace larger than this after decompression, e.g. 2G (at most the server's limit)")},
          {"max_analysis_seconds", num_prop("Give up the analysis of one trace after this long (at most the server's limit)")}}},
        {"required", {"paths"}}},
       {{"type", "object"},
        {"properties",
         {{"exit_code", {{"type", "integer"}}},
          {"out_dir", {{"type", "string"}}},
          {"reports", {{"type", "array"}, {"items", report_entry_schema()}}},
          {"job_json", {{"type", "string"}}},
          {"truncated_sections", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
        {"required", {"exit_code", "out_dir", "reports"}}}});
  t.push_back({"diff", "Compare two runs",
               "Compare two runs (before/after): report.json files, run output folders or job folders. Returns "
               "diff.json (step time, breakdown, kernels, recommendations) and the paths written.",
               {{"type", "object"},
                {"properties",
                 {{"a", str_prop("Baseline: a report.json, a run output folder or a job folder")},
                  {"b", str_prop("Candidate: a report.json, a run output folder or a job folder")},
                  {"out", str_prop("Folder for diff.json / diff.html (default: a new folder in the work folder)")}}},
                {"required", {"a", "b"}}},
               {{"type", "object"},
                {"properties",
                 {{"exit_code", {{"type", "integer"}}},
                  {"out_dir", {{"type", "string"}}},
                  {"diff_json", {{"type", "string"}}},
                  {"diff", any_object()},
                  {"truncated", {{"type", "boolean"}}}}},
                {"required", {"exit_code", "out_dir", "diff_json"}}}});
  t.push_back({"explain", "Explain a recommendation",
               "Why a rule (a recommendation's id) fires or not on a report.json: its condition with the report's "
               "values, its evidence and bound; `recommendation` is the report's entry when it fired.",
               {{"type", "object"},
                {"properties",
                 {{"rule", str_prop("Rule id, e.g. pin-memory")},
                  {"report", str_prop("report.json written by analyze or run")},
                  {"rules", strs_prop("Extra rules folders")}}},
                {"required", {"rule", "report"}}},
               {{"type", "object"},
                {"properties",
                 {{"rule", {{"type", "string"}}},
                  {"report", {{"type", "string"}}},
                  {"fired", {{"type", "boolean"}}},
                  {"explanation", {{"type", "string"}}},
                  {"recommendation", {{"type", {"object", "null"}}}}}},
                {"required", {"rule", "fired", "explanation"}}}});
  t.push_back({"rules_list", "List the recommendation rules",
               "The technique catalog: every rule's id, title, tier (1 = cheapest) and knobs.",
               {{"type", "object"}, {"properties", {{"rules", strs_prop("Extra rules folders")}}}},
               {{"type", "object"},
                {"properties", {{"rules", {{"type", "array"}, {"items", any_object()}}}}},
                {"required", {"rules"}}}});
  t.push_back({"rules_show", "Show one rule",
               "One rule's file: condition, evidence, gain bound, fixes and caveats.",
               {{"type", "object"},
                {"properties", {{"id", str_prop("Rule id")}, {"rules", strs_prop("Extra rules folders")}}},
                {"required", {"id"}}},
               {{"type", "object"}, {"properties", {{"rule", any_object()}}}, {"required", {"rule"}}}});
  t.push_back({"report_query", "Read part of a report",
               "One section or JSON pointer (RFC 6901, e.g. /gpu/kernel_classes) of a report.json, diff.json, "
               "tune.json or job.json, bounded: a value over max_bytes is left out and its children are listed "
               "with their sizes, so the query can be narrowed.",
               {{"type", "object"},
                {"properties",
                 {{"report", str_prop("The JSON file: a path or a file:// URI")},
                  {"section", str_prop("A top-level key, e.g. recommendations")},
                  {"pointer", str_prop("A JSON pointer, e.g. /verdict/evidence (inside the section when both are given)")},
                  {"max_bytes", {{"type", "integer"}, {"minimum", 1}, {"description", "Largest value returned (default and cap: the server's response limit)"}}}}},
                {"required", {"report"}}},
               {{"type", "object"},
                {"properties",
                 {{"report", {{"type", "string"}}},
                  {"pointer", {{"type", "string"}}},
                  {"bytes", {{"type", "integer"}}},
                  {"truncated", {{"type", "boolean"}}},
                  {"value", json::object()},
                  {"children", {{"type", "array"}, {"items", any_object()}}},
                  {"children_left_out", {{"type", "integer"}}}}},
                {"required", {"report", "pointer", "bytes", "truncated"}}}});
  t.push_back({"run", "Profile a training command",
               "Run a training command under the profiler (CUPTI/NVTX agent and the Python shim), then analyze "
               "it: the verdict, the plan and report.json. Long: progress notifications, cancellable. Needs the "
               "server started with --allow-run.",
               {{"type", "object"},
                {"properties",
                 {{"command", strs_prop("The command and its arguments, e.g. [\"python\", \"train.py\"] (run in the server's folder)")},
                  {"out", str_prop("Output folder (default: a new folder in the work folder)")},
                  {"steps", {{"type", "integer"}, {"minimum", 0}, {"description", "Steps recorded after the warm-up (0: all)"}}},
                  {"warmup_steps", {{"type", "integer"}, {"minimum", 0}, {"description", "Steps run before recording"}}},
                  {"stop_after_steps", bool_prop("End the command once the recorded steps are done")},
                  {"kill_after", num_prop("Stop the command after this many seconds")},
                  {"apply", strs_prop("Fixes to apply, e.g. [\"pin_memory=1\"] (as run --apply)")},
                  {"rules", strs_prop("Extra rules folders")},
                  {"device", str_prop("GPU model when the capture does not record it")}}},
                {"required", {"command"}}},
               {{"type", "object"},
                {"properties",
                 {{"exit_code", {{"type", "integer"}}},
                  {"out_dir", {{"type", "string"}}},
                  {"reports", {{"type", "array"}, {"items", report_entry_schema()}}}}},
                {"required", {"exit_code", "out_dir", "reports"}}},
               true});
  t.push_back({"tune", "Tune a training command",
               "Measure a training command under knob settings (batch size, workers, pinned memory, AMP, ...) and "
               "keep what is faster beyond noise: tune.json with the baseline, the best configuration and the "
               "speedup's interval. Long: progress notifications, cancellable. Needs --allow-run.",
               {{"type", "object"},
                {"properties",
                 {{"command", strs_prop("The command to tune (after --)")},
                  {"workload", str_prop("A built-in workload instead of a command")},
                  {"knobs", strs_prop("Knob settings, e.g. [\"num_workers=0,2,4\"]")},
                  {"strategy", str_prop("guided (default) or grid")},
                  {"max_trials", {{"type", "integer"}, {"minimum", 0}}},
                  {"time_budget", num_prop("Stop after this many seconds")},
                  {"trial_timeout", num_prop("Kill one measurement after this many seconds")},
                  {"repeats", {{"type", "integer"}, {"minimum", 1}}},
                  {"out", str_prop("Output folder (default: a new folder in the work folder)")}}}},
               {{"type", "object"},
                {"properties",
                 {{"exit_code", {{"type", "integer"}}},
                  {"out_dir", {{"type", "string"}}},
                  {"tune_json", {{"type", "string"}}},
                  {"status", any_object()},
                  {"baseline", any_object()},
                  {"best", any_object()},
                  {"speedup", any_object()}}},
                {"required", {"exit_code", "out_dir"}}},
               true});
  return t;
}

// ---- the server ---------------------------------------------------------------------------------------------

struct ChildOutput {
  int exit_code = -1;
  std::string out, err;
  bool out_truncated = false;
};

// What a call produced: the CallToolResult's parts.
struct ToolOutcome {
  bool is_error = false;
  std::string text;
  json structured;  // null: none
};

struct Call {
  json id;
  std::string tool;
  json progress_token;  // null: the client asked for no progress
  bool modern = false;
  std::string version;
  std::vector<std::string> argv;
  std::function<ToolOutcome(const ChildOutput&)> finish;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  ChildOutput output;
  std::string err_line;  // the stderr line being read
  double progress = 0;
  double started = 0;
  bool cancelled = false;
  int cancel_stage = 0;  // 1: SIGINT sent, 2: SIGTERM sent, 3: SIGKILL sent
  double next_signal_at = 0;
  bool exited = false;
  double exited_at = 0;
  // Its pipes closed but waitpid has not seen it exit yet (an exiting child closes them first): the next polls
  // wait 1, 2, 4 ... ms, not the 100 ms tick, so the reply is not held back (that tick cost a third of the calls
  // 100 ms: bench/results/mcp-analyze-2026-12-07.md).
  int reap_wait_ms = 0;
};

enum class Era { kUnknown, kHandshake, kModern };

class Server {
 public:
  Server(int out_fd, std::ostream& log, const ServerOptions& o) : out_fd_(out_fd), log_(log), o_(o), tools_(tool_defs()) {}

  bool failed() const { return write_failed_; }

  void handle_line(std::string_view line);
  void handle_too_long() { send_error(nullptr, kParseError, "message longer than " + std::to_string(o_.max_line_bytes) + " bytes: skipped"); }
  // One poll() round over the calls' pipes (and `in_fd`); false when the input closed.
  bool poll_once(int in_fd, std::string* in_buf, bool* discarding);
  void shutdown();

 private:
  // -- output
  void send(const json& msg) {
    if (write_failed_) return;
    std::string line = dump(msg);
    line.push_back('\n');
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t n = ::write(out_fd_, line.data() + off, line.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        log_ << "profile-train mcp: cannot write to the client (" << std::strerror(errno) << "): stopping\n";
        write_failed_ = true;
        return;
      }
      off += static_cast<size_t>(n);
    }
  }
  void send_error(const json& id, int code, const std::string& message, const json& data = nullptr) {
    json err = {{"code", code}, {"message", message}};
    if (!data.is_null()) err["data"] = data;
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", err}});
  }
  void send_result(const json& id, json result, bool modern, bool cacheable = false, int ttl_ms = 0) {
    if (modern) {
      if (!result.contains("resultType")) result["resultType"] = "complete";
      result["_meta"][kMetaServerInfo] = server_info();
      if (cacheable) {
        result["ttlMs"] = ttl_ms;
        result["cacheScope"] = "private";
      }
    }
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }

  // -- requests
  void handle_request(const json& msg);
  void handle_notification(const json& msg);
  void handle_response(const json& msg);
  void dispatch(const json& id, const std::string& method, const json& params, bool modern, const std::string& version);
  json capabilities() const {
    return {{"tools", {{"listChanged", false}}}, {"resources", {{"listChanged", false}, {"subscribe", false}}}};
  }
  std::string instructions() const {
    return "profile-train diagnoses what limits a PyTorch training step. Call analyze with trace files (Kineto "
           "JSON, nsys exports) for the verdict and the plan; report_query reads any part of a report.json; "
           "explain says why a recommendation fires; diff compares two runs." +
           std::string(o_.allow_run ? " run profiles a training command and tune measures knob settings."
                                    : " run and tune are off (start the server with --allow-run).");
  }
  json tools_list(const std::string& version) const;
  void tools_call(const json& id, const json& params, bool modern, const std::string& version,
                  const std::vector<fs::path>& roots);
  void resources_list(const json& id, bool modern);
  void resources_read(const json& id, const json& params, bool modern, const std::vector<fs::path>& roots);

  // -- roots: where paths may point
  std::vector<fs::path> fallback_roots() const {
    if (!o_.roots.empty()) return o_.roots;
    std::error_code ec;
    return {fs::current_path(ec)};
  }
  static std::vector<fs::path> roots_from(const json& list_roots_result) {
    std::vector<fs::path> out;
    if (!list_roots_result.is_object() || !list_roots_result.contains("roots") || !list_roots_result["roots"].is_array())
      return out;
    for (const auto& r : list_roots_result["roots"])
      if (r.is_object() && r.contains("uri") && r["uri"].is_string())
        if (auto p = path_from_file_uri(r["uri"].get<std::string>())) out.push_back(*p);
    return out;
  }

  // -- children
  void start(Call& c);
  void finish(Call& c);
  void send_tool_result(const json& id, bool modern, const std::string& version, ToolOutcome r);
  void read_pipe(Call& c, bool is_err);
  void cancel(const json& request_id, const std::string& reason);
  void progress(Call& c, const std::string& message);
  fs::path new_out_dir(const std::string& tool);
  void remember(const fs::path& file);

  int out_fd_;
  std::ostream& log_;
  ServerOptions o_;
  std::vector<ToolDef> tools_;
  bool write_failed_ = false;

  Era era_ = Era::kUnknown;
  std::string version_;       // negotiated (handshake era)
  json client_caps_;          // handshake era
  std::optional<std::vector<fs::path>> client_roots_;  // handshake era, once the client answered roots/list
  json roots_request_id_;     // a roots/list in flight
  std::vector<json> waiting_for_roots_;
  int next_request_ = 1;

  std::list<Call> calls_;  // running first, then queued (not started)
  int call_counter_ = 0;
  std::vector<fs::path> written_;  // reports written in the session: the resources
};

void Server::handle_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  json msg;
  try {
    std::istringstream in{std::string(line)};
    msg = parse_json_bounded(in);
  } catch (const std::exception& e) {
    send_error(nullptr, kParseError, std::string("parse error: ") + e.what());
    return;
  }
  if (msg.is_array()) {
    send_error(nullptr, kInvalidRequest, "JSON-RPC batches are not supported (removed in MCP 2025-06-18): send one message per line");
    return;
  }
  if (!msg.is_object()) {
    send_error(nullptr, kInvalidRequest, "a JSON-RPC message must be an object");
    return;
  }
  const json id = msg.contains("id") ? msg["id"] : json();
  if (msg.value("jsonrpc", json()) != "2.0") {
    send_error(id.is_string() || id.is_number_integer() ? id : json(), kInvalidRequest, "not JSON-RPC 2.0: \"jsonrpc\": \"2.0\" is missing");
    return;
  }
  if (msg.contains("method")) {
    if (!msg["method"].is_string()) {
      send_error(id.is_string() || id.is_number_integer() ? id : json(), kInvalidRequest, "\"method\" must be a string");
      return;
    }
    if (msg.contains("id")) {
      if (!id.is_string() && !id.is_number_integer()) {
        send_error(nullptr, kInvalidRequest, "\"id\" must be a string or an integer");
        return;
      }
      handle_request(msg);
    } else {
      handle_notification(msg);
    }
    return;
  }
  if (msg.contains("id") && (msg.contains("result") || msg.contains("error"))) {
    handle_response(msg);
    return;
  }
  send_error(id.is_string() || id.is_number_integer() ? id : json(), kInvalidRequest, "neither a request, a notification nor a response");
}

void Server::handle_request(const json& msg) {
  const json& id = msg["id"];
  const std::string method = msg["method"].get<std::string>();
  const json params = msg.contains("params") ? msg["params"] : json::object();
  if (!params.is_object()) {
    send_error(id, kInvalidParams, "\"params\" must be an object");
    return;
  }
  const json* meta = params.contains("_meta") && params["_meta"].is_object() ? &params["_meta"] : nullptr;
  const bool modern_envelope = meta != nullptr && meta->contains(kMetaVersion);

  if (method == "initialize") {
    if (era_ == Era::kModern) {
      send_error(id, kUnsupportedVersion, "this connection speaks " + std::string(kModern) + ": initialize is not part of it",
                 {{"supported", supported_versions()}, {"requested", params.value("protocolVersion", json())}});
      return;
    }
    const json requested = params.value("protocolVersion", json());
    if (!requested.is_string()) {
      send_error(id, kInvalidParams, "initialize: \"protocolVersion\" must be a string");
      return;
    }
    const auto& all = supported_versions();
    const std::string req = requested.get<std::string>();
    // Negotiation: the client's version when we speak it (the handshake ones), else our latest handshake one.
    version_ = (req != kModern && std::find(all.begin(), all.end(), req) != all.end()) ? req : all[1];
    client_caps_ = params.value("capabilities", json::object());
    era_ = Era::kHandshake;
    json result = {{"protocolVersion", version_}, {"capabilities", capabilities()}, {"serverInfo", server_info()}};
    result["instructions"] = instructions();
    log_ << "profile-train mcp: client "
         << terminal_safe(params.value("clientInfo", json::object()).value("name", std::string("?"))) << " on " << version_ << "\n";
    send_result(id, std::move(result), false);
    return;
  }

  if (modern_envelope || method == "server/discover") {
    if (era_ == Era::kHandshake) {
      send_error(id, kInvalidRequest, "this connection opened with initialize (" + version_ + "): a " + kModern +
                                          " request envelope does not belong on it");
      return;
    }
    if (!modern_envelope) {
      send_error(id, kInvalidParams, std::string("missing params._meta[\"") + kMetaVersion + "\"]");
      return;
    }
    const json& v = (*meta)[kMetaVersion];
    if (!v.is_string() || v.get<std::string>() != kModern) {
      send_error(id, kUnsupportedVersion, "unsupported protocol version",
                 {{"supported", supported_versions()}, {"requested", v}});
      return;
    }
    if (!meta->contains(kMetaCapabilities) || !(*meta)[kMetaCapabilities].is_object()) {
      send_error(id, kInvalidParams, std::string("missing params._meta[\"") + kMetaCapabilities + "\"]");
      return;
    }
    era_ = Era::kModern;
    dispatch(id, method, params, true, kModern);
    return;
  }

  if (era_ == Era::kModern) {
    send_error(id, kInvalidParams, std::string("missing params._meta[\"") + kMetaVersion + "\"] (" + kModern + " requests carry it)");
    return;
  }
  if (era_ == Era::kUnknown && method != "ping") {
    send_error(id, kInvalidRequest, std::string("not initialized: send initialize first (or a ") + kModern + " request)");
    return;
  }
  dispatch(id, method, params, false, version_.empty() ? supported_versions()[1] : version_);
}

void Server::dispatch(const json& id, const std::string& method, const json& params, bool modern, const std::string& version) {
  if (method == "ping") return send_result(id, json::object(), modern);
  if (method == "server/discover") {
    if (!modern) return send_error(id, kMethodNotFound, "method not found: server/discover");
    json r = {{"supportedVersions", supported_versions()}, {"capabilities", capabilities()}, {"instructions", instructions()}};
    return send_result(id, std::move(r), true, true, 3600000);
  }
  if (method == "tools/list") return send_result(id, tools_list(version), modern, true, 3600000);
  if (method == "resources/list") return resources_list(id, modern);
  if (method == "resources/templates/list")
    return send_result(id, {{"resourceTemplates", json::array()}}, modern, true, 3600000);

  if (method == "tools/call" || method == "resources/read") {
    // Where paths may point: the client's roots when it has them, else --root, else the working folder.
    std::vector<fs::path> roots;
    bool client_has_roots = false;
    if (modern) {
      const json& caps = params["_meta"][kMetaCapabilities];
      if (caps.contains("roots")) {
        client_has_roots = true;
        const json* responses = params.contains("inputResponses") && params["inputResponses"].is_object() ? &params["inputResponses"] : nullptr;
        if (responses == nullptr || !responses->contains("roots")) {
          // Stateless: ask for the roots in the result; the client retries the same request with them.
          return send_result(id, {{"resultType", "input_required"},
                                  {"inputRequests", {{"roots", {{"method", "roots/list"}}}}},
                                  {"requestState", "roots"}},
                             true);
        }
        roots = roots_from((*responses)["roots"]);
      }
    } else if (client_caps_.contains("roots")) {
      client_has_roots = true;
      if (!client_roots_) {
        // Ask once (again after roots/list_changed); the call waits for the answer.
        waiting_for_roots_.push_back({{"id", id}, {"method", method}, {"params", params}});
        if (roots_request_id_.is_null()) {
          roots_request_id_ = "profile-train-roots-" + std::to_string(next_request_++);
          send({{"jsonrpc", "2.0"}, {"id", roots_request_id_}, {"method", "roots/list"}});
        }
        return;
      }
      roots = *client_roots_;
    }
    if (roots.empty()) {
      if (client_has_roots) log_ << "profile-train mcp: the client declared no usable file:// roots: using the fallback\n";
      roots = fallback_roots();
    }
    if (method == "tools/call") return tools_call(id, params, modern, version, roots);
    return resources_read(id, params, modern, roots);
  }
  send_error(id, kMethodNotFound, "method not found: " + terminal_safe(method));
}

void Server::handle_notification(const json& msg) {
  const std::string method = msg["method"].get<std::string>();
  const json params = msg.contains("params") && msg["params"].is_object() ? msg["params"] : json::object();
  if (method == "notifications/cancelled") {
    if (params.contains("requestId")) cancel(params["requestId"], params.value("reason", std::string()));
  } else if (method == "notifications/roots/list_changed") {
    client_roots_.reset();
  }
  // notifications/initialized and any other notification: nothing to answer.
}

void Server::handle_response(const json& msg) {
  if (roots_request_id_.is_null() || msg["id"] != roots_request_id_) return;  // not ours: ignored
  roots_request_id_ = nullptr;
  if (msg.contains("result")) {
    client_roots_ = roots_from(msg["result"]);
  } else {
    log_ << "profile-train mcp: roots/list failed: using the fallback roots\n";
    client_roots_ = std::vector<fs::path>{};
  }
  std::vector<json> waiting;
  waiting.swap(waiting_for_roots_);
  for (const json& r : waiting) dispatch(r["id"], r["method"].get<std::string>(), r["params"], false, version_);
}

json Server::tools_list(const std::string& version) const {
  json tools = json::array();
  const bool structured = has_structured_output(version);
  for (const auto& t : tools_) {
    if (t.needs_run && !o_.allow_run) continue;
    json d = {{"name", t.name}, {"description", t.description}, {"inputSchema", t.input}};
    if (structured) {
      d["title"] = t.title;
      if (!t.output.is_null()) d["outputSchema"] = t.output;
    }
    d["annotations"] = {{"readOnlyHint", t.name == "report_query" || t.name.rfind("rules_", 0) == 0 || t.name == "explain"},
                        {"destructiveHint", false},
                        {"openWorldHint", t.needs_run}};
    tools.push_back(std::move(d));
  }
  return {{"tools", tools}};
}

fs::path Server::new_out_dir(const std::string& tool) {
  return o_.work_dir / (tool + "-" + std::to_string(::getpid()) + "-" + std::to_string(++call_counter_));
}

void Server::remember(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return;
  const fs::path abs = fs::weakly_canonical(file, ec);
  if (std::find(written_.begin(), written_.end(), abs) == written_.end()) written_.push_back(abs);
}

// The JSON summary of one report.json for analyze/run results.
json report_entry(const fs::path& report_path, const json& report, const std::vector<std::string>& sections,
                  bool all_sections, size_t* budget, std::vector<std::string>* truncated) {
  json e;
  e["report_json"] = report_path.string();
  const fs::path html = report_path.parent_path() / "report.html";
  std::error_code ec;
  if (fs::exists(html, ec)) e["report_html"] = html.string();
  if (const json* files = report.contains("source") ? &report["source"] : nullptr; files && files->contains("files") &&
      (*files)["files"].is_array() && !(*files)["files"].empty() && (*files)["files"][0].is_string())
    e["trace"] = (*files)["files"][0];
  json v = report.value("verdict", json::object());
  e["verdict"] = {{"bottleneck", v.value("bottleneck", std::string("unknown"))},
                  {"confidence", v.value("confidence", 0.0)},
                  {"summary", v.value("summary", std::string())},
                  {"evidence", v.value("evidence", json::array())}};
  if (v.contains("runner_up")) e["verdict"]["runner_up"] = v["runner_up"];
  e["plan"] = report.value("plan", json::object());
  const json steps = report.value("steps", json::object());
  e["step_ms"] = steps.contains("mean_ms") && steps["mean_ms"].is_number() ? steps["mean_ms"] : json();
  std::vector<std::string> wanted = sections;
  if (all_sections) {
    wanted.clear();
    for (const auto& [k, val] : report.items()) wanted.push_back(k);
  }
  if (!wanted.empty()) {
    json s = json::object();
    for (const auto& name : wanted) {
      if (!report.contains(name)) continue;
      const size_t size = dump(report[name]).size();
      if (size + name.size() + 8 > *budget) {
        truncated->push_back(name);
        continue;
      }
      *budget -= size + name.size() + 8;
      s[name] = report[name];
    }
    e["sections"] = std::move(s);
  }
  return e;
}

std::string verdict_text(const json& entry) {
  std::ostringstream s;
  const json& v = entry["verdict"];
  s << "verdict " << v.value("bottleneck", std::string("unknown")) << " (confidence " << v.value("confidence", 0.0) << "): "
    << v.value("summary", std::string());
  const json& plan = entry["plan"];
  if (plan.contains("steps") && plan["steps"].is_array() && !plan["steps"].empty()) {
    s << "\nplan (combined up to " << plan.value("combined_speedup_max", 1.0) << "x):";
    int n = 0;
    for (const auto& st : plan["steps"])
      s << "\n  " << ++n << ". " << (st.contains("rule") ? st["rule"].get<std::string>() : st.value("id", std::string("?")))
        << (st.contains("estimated_speedup_max") ? " up to " + dump(st["estimated_speedup_max"]) + "x" : std::string());
  } else if (plan.contains("no_fix_reason") && plan["no_fix_reason"].is_string()) {
    s << "\nno plan: " << plan["no_fix_reason"].get<std::string>();
  }
  s << "\nreport: " << entry.value("report_json", std::string());
  return s.str();
}

// Reports under `out` written since `since` (this call's): out/report.json, else out/*/report.json.
std::vector<fs::path> fresh_reports(const fs::path& out, fs::file_time_type since) {
  std::vector<fs::path> found;
  std::error_code ec;
  auto fresh = [&](const fs::path& p) {
    std::error_code e2;
    return fs::is_regular_file(p, e2) && fs::last_write_time(p, e2) >= since;
  };
  if (fresh(out / "report.json")) return {out / "report.json"};
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && fresh(it->path() / "report.json")) found.push_back(it->path() / "report.json");
  std::sort(found.begin(), found.end());
  return found;
}

void Server::tools_call(const json& id, const json& params, bool modern, const std::string& version,
                        const std::vector<fs::path>& roots) {
  if (!params.contains("name") || !params["name"].is_string())
    return send_error(id, kInvalidParams, "tools/call: \"name\" must be a string");
  const std::string name = params["name"].get<std::string>();
  auto def = std::find_if(tools_.begin(), tools_.end(), [&](const ToolDef& t) { return t.name == name; });
  if (def == tools_.end()) return send_error(id, kInvalidParams, "unknown tool: " + terminal_safe(name));
  const json args = params.contains("arguments") ? params["arguments"] : json::object();

  const size_t limit = o_.max_response_bytes;
  auto respond = [this, id, modern, version](ToolOutcome r) { send_tool_result(id, modern, version, std::move(r)); };
  auto tool_error = [&](const std::string& message) { respond({true, message, nullptr}); };

  if (def->needs_run && !o_.allow_run)
    return tool_error(name + " is disabled: it executes commands; start the server with `profile-train mcp --allow-run` to enable it");

  Args a(args, def->input);
  if (!a.ok()) return tool_error(a.message());

  // Paths: absolute, or relative to the first root; refused outside the roots.
  const fs::path base = roots.front();
  auto resolve = [&](const std::string& p, const char* what) -> std::optional<fs::path> {
    if (p.empty()) {
      a.fail(std::string("'") + what + "' is empty");
      return std::nullopt;
    }
    fs::path path = fs::path(p).is_absolute() ? fs::path(p) : base / p;
    if (auto uri = path_from_file_uri(p)) path = *uri;
    if (!path_within(path, roots)) {
      std::string list;
      for (const auto& r : roots) list += (list.empty() ? "" : ", ") + r.string();
      a.fail(std::string("'") + what + "' " + terminal_safe(p) + " is outside the allowed roots (" + terminal_safe(list) + ")");
      return std::nullopt;
    }
    std::error_code ec;
    return fs::weakly_canonical(path, ec);
  };
  auto resolve_all = [&](const std::vector<std::string>& ps, const char* what) {
    std::vector<std::string> out;
    for (const auto& p : ps)
      if (auto r = resolve(p, what)) out.push_back(r->string());
    return out;
  };
  auto out_dir = [&](const char* tool) -> fs::path {
    if (auto o = a.str("out")) {
      if (auto r = resolve(*o, "out")) return *r;
      return {};
    }
    return new_out_dir(tool);
  };

  Call c;
  c.id = id;
  c.tool = name;
  c.modern = modern;
  c.version = version;
  if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken"))
    c.progress_token = params["_meta"]["progressToken"];
  c.argv = {o_.self_exe};
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(1);

  if (name == "report_query") {
    const std::string report = a.str("report").value_or("");
    const std::string section = a.str("section").value_or("");
    const std::string pointer = a.str("pointer").value_or("");
    size_t max_bytes = limit / 2;
    if (args.contains("max_bytes")) {
      if (!args["max_bytes"].is_number_integer() || args["max_bytes"].get<int64_t>() < 1) a.fail("'max_bytes' must be an integer >= 1");
      else max_bytes = std::min<size_t>(max_bytes, args["max_bytes"].get<int64_t>());
    }
    std::optional<fs::path> path;
    if (a.ok()) {
      // A report written in this session may be read wherever it lies.
      if (auto uri = path_from_file_uri(report); uri && std::find(written_.begin(), written_.end(), *uri) != written_.end()) path = *uri;
      else path = resolve(report, "report");
    }
    if (!a.ok()) return tool_error(a.message());
    auto doc = read_json_file(*path);
    if (!doc.ok()) return tool_error(doc.status().message());
    auto q = query_report(*doc, section, pointer, max_bytes);
    if (!q.ok()) return tool_error(q.status().message());
    json r = std::move(*q);
    r["report"] = path->string();
    std::string text = r["truncated"].get<bool>()
                           ? "the value at " + r["pointer"].get<std::string>() + " is " + std::to_string(r["bytes"].get<int64_t>()) +
                                 " bytes, over max_bytes " + std::to_string(max_bytes) + ": narrow the pointer to one of its " +
                                 std::to_string(r["children"].size()) + " children (listed with their sizes)"
                           : r["pointer"].get<std::string>() + " (" + std::to_string(r["bytes"].get<int64_t>()) + " bytes)";
    return respond({false, text, std::move(r)});
  }

  auto add_rules = [&](std::vector<std::string>& argv) {
    for (const auto& d : resolve_all(a.strs("rules"), "rules")) argv.insert(argv.end(), {"--rules", d});
  };

  if (name == "analyze") {
    const auto paths = resolve_all(a.strs("paths"), "paths");
    if (a.ok() && paths.empty()) a.fail("'paths' needs at least one trace");
    if (paths.size() > 4096) a.fail("'paths': at most 4096 traces per call");
    const fs::path out = out_dir("analyze");
    std::vector<std::string>& v = c.argv;
    v.insert(v.end(), {"analyze", "--out", out.string()});
    add_rules(v);
    if (auto g = a.str("gpu_spec")) if (auto r = resolve(*g, "gpu_spec")) v.insert(v.end(), {"--gpu-spec", r->string()});
    if (auto d = a.str("device")) v.insert(v.end(), {"--device", *d});
    if (a.flag("all_steps").value_or(false)) v.push_back("--all-steps");
    // The server's limits are the ceilings: a call may ask for less, never more.
    std::string max_size = o_.max_input_size;
    if (auto m = a.str("max_input_size")) {
      auto asked = parse_byte_size(*m);
      auto cap = parse_byte_size(o_.max_input_size);
      if (!asked.ok()) a.fail("'max_input_size': " + asked.status().message());
      else if (cap.ok() && *asked < *cap) max_size = *m;
    }
    double max_s = o_.max_analysis_seconds;
    if (auto s = a.num("max_analysis_seconds", 0)) if (*s > 0 && (max_s == 0 || *s < max_s)) max_s = *s;
    std::ostringstream ms;
    ms << max_s;
    v.insert(v.end(), {"--max-input-size", max_size, "--max-analysis-seconds", ms.str()});
    const auto sections = a.strs("sections");
    const bool all = std::find(sections.begin(), sections.end(), "all") != sections.end();
    if (!a.ok()) return tool_error(a.message());
    v.push_back("--");  // traces named like options stay traces
    v.insert(v.end(), paths.begin(), paths.end());
    c.finish = [this, out, since, sections, all, limit](const ChildOutput& o) -> ToolOutcome {
      if (o.exit_code != 0 && o.exit_code != kExitThreshold) {
        const std::string why = last_error_line(o.err);
        if (fresh_reports(out, since).empty())
          return {true, "analyze failed (exit " + std::to_string(o.exit_code) + "): " + (why.empty() ? "no message" : why), nullptr};
      }
      json s = {{"exit_code", o.exit_code}, {"out_dir", out.string()}, {"reports", json::array()}};
      size_t budget = limit / 2;
      std::vector<std::string> truncated;
      std::string text;
      for (const auto& p : fresh_reports(out, since)) {
        auto doc = read_json_file(p);
        if (!doc.ok()) continue;
        remember(p);
        remember(p.parent_path() / "report.html");
        json e = report_entry(p, *doc, sections, all, &budget, &truncated);
        if (!text.empty()) text += "\n\n";
        text += verdict_text(e);
        s["reports"].push_back(std::move(e));
      }
      std::error_code ec;
      if (fs::exists(out / "job.json", ec)) {
        s["job_json"] = (out / "job.json").string();
        remember(out / "job.json");
        remember(out / "job.html");
      }
      if (!truncated.empty()) {
        std::sort(truncated.begin(), truncated.end());
        truncated.erase(std::unique(truncated.begin(), truncated.end()), truncated.end());
        s["truncated_sections"] = truncated;
      }
      if (s["reports"].empty())
        return {true, "analyze wrote no report (exit " + std::to_string(o.exit_code) + "): " + last_error_line(o.err), nullptr};
      std::string full = text + "\n\n" + o.out;
      if (!truncated.empty())
        full = "sections left out (over the response limit; read them with report_query): " +
               dump(s["truncated_sections"]) + "\n" + full;
      if (o.exit_code != 0) full = o.exit_code == kExitThreshold ? full : full + "\n" + last_error_line(o.err);
      return {false, full, std::move(s)};
    };
  } else if (name == "diff") {
    std::optional<fs::path> pa, pb;
    if (auto x = a.str("a")) pa = resolve(*x, "a");
    if (auto x = a.str("b")) pb = resolve(*x, "b");
    const fs::path out = out_dir("diff");
    if (!a.ok()) return tool_error(a.message());
    c.argv.insert(c.argv.end(), {"diff", "--out", out.string(), "--format", "text,json,html", "--", pa->string(), pb->string()});
    c.finish = [this, out, limit](const ChildOutput& o) -> ToolOutcome {
      const fs::path dj = out / "diff.json";
      std::error_code ec;
      if (o.exit_code != 0 || !fs::exists(dj, ec))
        return {true, "diff failed (exit " + std::to_string(o.exit_code) + "): " + last_error_line(o.err), nullptr};
      remember(dj);
      remember(out / "diff.html");
      json s = {{"exit_code", o.exit_code}, {"out_dir", out.string()}, {"diff_json", dj.string()}};
      auto doc = read_json_file(dj);
      s["truncated"] = true;
      if (doc.ok() && dump(*doc).size() <= limit / 2) {
        s["diff"] = std::move(*doc);
        s["truncated"] = false;
      }
      return {false, o.out + "\ndiff.json: " + dj.string(), std::move(s)};
    };
  } else if (name == "explain") {
    const std::string rule = a.str("rule").value_or("");
    std::optional<fs::path> report;
    if (auto r = a.str("report")) {
      if (auto uri = path_from_file_uri(*r); uri && std::find(written_.begin(), written_.end(), *uri) != written_.end()) report = *uri;
      else report = resolve(*r, "report");
    }
    std::vector<std::string> extra;
    add_rules(extra);
    if (!a.ok()) return tool_error(a.message());
    c.argv.insert(c.argv.end(), {"rules", "explain"});
    c.argv.insert(c.argv.end(), extra.begin(), extra.end());
    c.argv.insert(c.argv.end(), {"--", rule, report->string()});
    const fs::path rp = *report;
    c.finish = [rule, rp](const ChildOutput& o) -> ToolOutcome {
      if (o.exit_code != 0) return {true, "explain failed (exit " + std::to_string(o.exit_code) + "): " + last_error_line(o.err), nullptr};
      json s = {{"rule", rule}, {"report", rp.string()}, {"fired", false}, {"explanation", to_valid_utf8(o.out)}, {"recommendation", nullptr}};
      if (auto doc = read_json_file(rp); doc.ok() && doc->contains("recommendations") && (*doc)["recommendations"].is_array())
        for (const auto& r : (*doc)["recommendations"])
          if (r.is_object() && r.value("id", std::string()) == rule) {
            s["fired"] = true;
            s["recommendation"] = r;
          }
      return {false, o.out, std::move(s)};
    };
  } else if (name == "rules_list" || name == "rules_show") {
    const bool list = name == "rules_list";
    const std::string rid = list ? "" : a.str("id").value_or("");
    std::vector<std::string> extra;
    add_rules(extra);
    if (!a.ok()) return tool_error(a.message());
    c.argv.insert(c.argv.end(), {"rules", list ? "list" : "show", "--json"});
    c.argv.insert(c.argv.end(), extra.begin(), extra.end());
    if (!list) c.argv.insert(c.argv.end(), {"--", rid});
    c.finish = [list, name](const ChildOutput& o) -> ToolOutcome {
      if (o.exit_code != 0) return {true, name + " failed (exit " + std::to_string(o.exit_code) + "): " + last_error_line(o.err), nullptr};
      json parsed;
      try {
        std::istringstream in(o.out);
        parsed = parse_json_bounded(in);
      } catch (const std::exception& e) {
        return {true, name + ": unreadable output (" + std::string(e.what()) + ")", nullptr};
      }
      std::string text;
      if (list) {
        for (const auto& r : parsed)
          text += r.value("id", std::string()) + " (tier " + dump(r.value("tier", json())) + "): " + r.value("title", std::string()) + "\n";
        text += std::to_string(parsed.size()) + " rules";
        return {false, text, {{"rules", parsed}}};
      }
      return {false, dump(parsed), {{"rule", parsed}}};
    };
  } else if (name == "run") {
    const auto command = a.strs("command");
    if (a.ok() && command.empty()) a.fail("'command' needs at least the program");
    const fs::path out = out_dir("run");
    std::vector<std::string>& v = c.argv;
    v.insert(v.end(), {"run", "--out", out.string()});
    auto integer = [&](const char* k, const char* opt) {
      if (!args.contains(k)) return;
      if (!args[k].is_number_integer() || args[k].get<int64_t>() < 0) return a.fail(std::string("'") + k + "' must be an integer >= 0");
      v.insert(v.end(), {opt, std::to_string(args[k].get<int64_t>())});
    };
    integer("steps", "--steps");
    integer("warmup_steps", "--warmup-steps");
    if (a.flag("stop_after_steps").value_or(false)) v.push_back("--stop-after-steps");
    if (auto k = a.num("kill_after", 0)) {
      std::ostringstream s;
      s << *k;
      v.insert(v.end(), {"--kill-after", s.str()});
    }
    for (const auto& ap : a.strs("apply")) v.insert(v.end(), {"--apply", ap});
    add_rules(v);
    if (auto d = a.str("device")) v.insert(v.end(), {"--device", *d});
    if (!a.ok()) return tool_error(a.message());
    v.push_back("--");
    v.insert(v.end(), command.begin(), command.end());
    c.finish = [this, out, since, limit](const ChildOutput& o) -> ToolOutcome {
      json s = {{"exit_code", o.exit_code}, {"out_dir", out.string()}, {"reports", json::array()}};
      size_t budget = limit / 2;
      std::vector<std::string> truncated;
      std::string text;
      for (const auto& p : fresh_reports(out, since)) {
        auto doc = read_json_file(p);
        if (!doc.ok()) continue;
        remember(p);
        remember(p.parent_path() / "report.html");
        json e = report_entry(p, *doc, {}, false, &budget, &truncated);
        text += verdict_text(e) + "\n";
        s["reports"].push_back(std::move(e));
      }
      if (s["reports"].empty())
        return {true, "run wrote no report (exit " + std::to_string(o.exit_code) + "): " + last_error_line(o.err), nullptr};
      if (o.exit_code != 0) text += "the command or the run ended with exit " + std::to_string(o.exit_code) + ": " + last_error_line(o.err) + "\n";
      return {false, text + "\n" + o.out, std::move(s)};
    };
  } else if (name == "tune") {
    const auto command = a.strs("command");
    const auto workload = a.str("workload");
    if (a.ok() && command.empty() && !workload) a.fail("give 'command' or 'workload'");
    const fs::path out = out_dir("tune");
    std::vector<std::string>& v = c.argv;
    v.insert(v.end(), {"tune", "--out", out.string()});
    if (workload) v.insert(v.end(), {"--workload", *workload});
    for (const auto& k : a.strs("knobs")) v.insert(v.end(), {"--knob", k});
    if (auto s = a.str("strategy")) v.insert(v.end(), {"--strategy", *s});
    auto number = [&](const char* k, const char* opt, bool integral, double lo) {
      if (!args.contains(k)) return;
      if (integral ? !args[k].is_number_integer() : !args[k].is_number()) return a.fail(std::string("'") + k + "' must be a number");
      if (args[k].get<double>() < lo) return a.fail(std::string("'") + k + "' is out of range");
      std::ostringstream s;
      if (integral) s << args[k].get<int64_t>();
      else s << args[k].get<double>();
      v.insert(v.end(), {opt, s.str()});
    };
    number("max_trials", "--max-trials", true, 0);
    number("time_budget", "--time-budget", false, 0);
    number("trial_timeout", "--trial-timeout", false, 0);
    number("repeats", "--repeats", true, 1);
    if (!a.ok()) return tool_error(a.message());
    if (!command.empty()) {
      v.push_back("--");
      v.insert(v.end(), command.begin(), command.end());
    }
    c.finish = [this, out](const ChildOutput& o) -> ToolOutcome {
      const fs::path tj = out / "tune.json";
      std::error_code ec;
      if (!fs::exists(tj, ec))
        return {true, "tune wrote no tune.json (exit " + std::to_string(o.exit_code) + "): " + last_error_line(o.err), nullptr};
      remember(tj);
      remember(out / "tune.html");
      json s = {{"exit_code", o.exit_code}, {"out_dir", out.string()}, {"tune_json", tj.string()}};
      if (auto doc = read_json_file(tj); doc.ok())
        for (const char* k : {"status", "baseline", "best", "speedup"})
          if (doc->contains(k) && (*doc)[k].is_object()) s[k] = (*doc)[k];
      return {false, o.out, std::move(s)};
    };
  }

  calls_.push_back(std::move(c));
  int running = 0;
  for (const auto& x : calls_) running += x.pid > 0 ? 1 : 0;
  if (running < o_.max_parallel_calls) start(calls_.back());
  else progress(calls_.back(), "waiting: " + std::to_string(running) + " calls running");
}

void Server::progress(Call& c, const std::string& message) {
  if (c.progress_token.is_null()) return;
  c.progress += 1;
  send({{"jsonrpc", "2.0"},
        {"method", "notifications/progress"},
        {"params", {{"progressToken", c.progress_token}, {"progress", c.progress}, {"message", to_valid_utf8(message)}}}});
}

void Server::start(Call& c) {
  int out_pipe[2], err_pipe[2];
  auto fail = [&c](const std::string& why) {
    c.output.err = "profile-train: cannot start " + c.argv[0] + ": " + why;
    c.output.exit_code = kExitFailure;
    c.exited = true;
    c.pid = 0;
  };
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail(std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return fail(std::strerror(errno));
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  platform::SpawnOptions so;
  so.argv = c.argv;
  so.env = platform::environment_with({});
  so.stdin_fd = null_fd;
  so.stdout_fd = out_pipe[1];
  so.stderr_fd = err_pipe[1];
  so.parent_death_signal = SIGTERM;  // the server's one thread lives as long as its children
  auto pid = platform::spawn_process(so);
  if (null_fd >= 0) ::close(null_fd);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  c.started = now_s();
  if (!pid.ok()) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return fail(pid.status().message());
  }
  c.pid = *pid;
  c.out_fd = out_pipe[0];
  c.err_fd = err_pipe[0];
  ::fcntl(c.out_fd, F_SETFL, O_NONBLOCK);
  ::fcntl(c.err_fd, F_SETFL, O_NONBLOCK);
  log_ << "profile-train mcp: " << c.tool << " started (pid " << c.pid << ")\n";
  progress(c, "started: profile-train " + (c.argv.size() > 1 ? c.argv[1] : std::string()));
}

void Server::read_pipe(Call& c, bool is_err) {
  int& fd = is_err ? c.err_fd : c.out_fd;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      ::close(fd);
      fd = -1;
      if (is_err && !c.err_line.empty() && !c.cancelled) progress(c, clean_line(c.err_line));
      return;
    }
    if (!is_err) {
      const size_t room = kMaxStdoutKept - std::min(kMaxStdoutKept, c.output.out.size());
      c.output.out.append(buf, std::min<size_t>(room, n));
      if (static_cast<size_t>(n) > room) c.output.out_truncated = true;
      continue;
    }
    c.output.err.append(buf, n);
    if (c.output.err.size() > kMaxStderrKept) c.output.err.erase(0, c.output.err.size() - kMaxStderrKept);
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        if (!c.cancelled && c.err_line.find_first_not_of(" \t\r") != std::string::npos) progress(c, clean_line(c.err_line));
        c.err_line.clear();
      } else if (c.err_line.size() < 4096) {
        c.err_line.push_back(buf[i]);
      }
    }
  }
}

void Server::finish(Call& c) {
  if (c.out_fd >= 0) read_pipe(c, false);
  if (c.err_fd >= 0) read_pipe(c, true);
  for (int* fd : {&c.out_fd, &c.err_fd})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  log_ << "profile-train mcp: " << c.tool << " ended (exit " << c.output.exit_code << (c.cancelled ? ", cancelled" : "")
       << ", " << static_cast<int>((now_s() - c.started) * 1000) << " ms)\n";
  if (c.cancelled) return;  // a cancelled request gets no response
  ToolOutcome r;
  try {
    r = c.finish(c.output);
  } catch (const std::exception& e) {
    r = {true, std::string("internal error reading the result: ") + e.what(), nullptr};
  }
  send_tool_result(c.id, c.modern, c.version, std::move(r));
}

void Server::send_tool_result(const json& id, bool modern, const std::string& version, ToolOutcome r) {
  // The whole result stays within max_response_bytes: structuredContent up to 3/4 of it (an analyze of many
  // traces drops reports from the end, counted in reports_left_out), the text up to 1/4, and the text copy of
  // the JSON only when both fit.
  const size_t limit = o_.max_response_bytes;
  if (!r.structured.is_null()) {
    repair_utf8(r.structured);
    size_t size = dump(r.structured).size();
    if (size > limit * 3 / 4 && r.structured.contains("reports") && r.structured["reports"].is_array()) {
      size_t dropped = 0;
      while (size > limit * 3 / 4 && !r.structured["reports"].empty()) {
        size -= std::min(size, dump(r.structured["reports"].back()).size() + 1);
        r.structured["reports"].erase(r.structured["reports"].size() - 1);
        ++dropped;
      }
      r.structured["reports_left_out"] = dropped;
      r.text = std::to_string(dropped) + " reports left out of this result (over the response limit of " +
               std::to_string(limit) + " bytes): their files are in out_dir\n" + r.text;
      size = dump(r.structured).size();
    }
    if (size > limit * 3 / 4) {
      r = {true, "the result is " + std::to_string(size) + " bytes, over the response limit of " + std::to_string(limit) +
                     " bytes: ask for fewer sections, or read them with report_query",
           nullptr};
    }
  }
  json result;
  std::string text = r.text;
  if (text.size() > limit / 4)
    text = truncate_utf8(text, limit / 4) + "\n[... cut at " + std::to_string(limit / 4) + " bytes of " +
           std::to_string(r.text.size()) + ": the whole output is in the files named above]";
  text = to_valid_utf8(text);
  result["content"] = json::array({{{"type", "text"}, {"text", text}}});
  if (!r.structured.is_null()) {
    const std::string s = dump(r.structured);
    if (has_structured_output(version)) result["structuredContent"] = r.structured;
    // The serialized JSON as text too (MCP: for clients that do not read structuredContent), when it fits.
    if (s.size() + text.size() <= limit / 2 || !has_structured_output(version))
      if (s.size() + text.size() <= limit) result["content"].push_back({{"type", "text"}, {"text", s}});
  }
  result["isError"] = r.is_error;
  send_result(id, std::move(result), modern);
}

void Server::cancel(const json& request_id, const std::string& reason) {
  for (auto it = calls_.begin(); it != calls_.end(); ++it) {
    if (it->id != request_id || it->cancelled) continue;
    log_ << "profile-train mcp: cancelling " << it->tool << (reason.empty() ? "" : ": " + terminal_safe(reason)) << "\n";
    if (it->pid < 0) {  // queued, never started
      calls_.erase(it);
      return;
    }
    it->cancelled = true;
    if (it->pid > 0 && !it->exited) {
      ::kill(-it->pid, SIGINT);  // as Ctrl-C: run and tune write their partial results and stop
      it->cancel_stage = 1;
      it->next_signal_at = now_s() + o_.cancel_grace_s;
    }
    return;
  }
}

bool Server::poll_once(int in_fd, std::string* in_buf, bool* discarding) {
  std::vector<pollfd> fds;
  fds.push_back({in_fd, POLLIN, 0});
  std::vector<std::pair<Call*, bool>> owners;
  for (auto& c : calls_) {
    if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0}), owners.push_back({&c, false});
    if (c.err_fd >= 0) fds.push_back({c.err_fd, POLLIN, 0}), owners.push_back({&c, true});
  }
  bool any_running = false;
  int timeout_ms = 100;
  for (auto& c : calls_) {
    any_running |= c.pid >= 0;
    if (c.pid > 0 && !c.exited && c.out_fd < 0 && c.err_fd < 0) {
      c.reap_wait_ms = c.reap_wait_ms == 0 ? 1 : std::min(100, 2 * c.reap_wait_ms);
      timeout_ms = std::min(timeout_ms, c.reap_wait_ms);
    }
  }
  if (!any_running) timeout_ms = -1;
  const int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0 && errno != EINTR) {
    log_ << "profile-train mcp: poll failed: " << std::strerror(errno) << "\n";
    return false;
  }
  bool input_open = true;
  if (n > 0) {
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents != 0) read_pipe(*owners[i - 1].first, owners[i - 1].second);
    if (fds[0].revents != 0) {
      char buf[65536];
      const ssize_t got = ::read(in_fd, buf, sizeof buf);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        input_open = false;
      } else if (got > 0) {
        size_t start = 0;
        for (ssize_t i = 0; i < got; ++i) {
          if (buf[i] != '\n') continue;
          if (*discarding) {
            *discarding = false;
          } else {
            in_buf->append(buf + start, i - start);
            handle_line(*in_buf);
          }
          in_buf->clear();
          start = i + 1;
        }
        if (!*discarding) {
          in_buf->append(buf + start, got - start);
          if (in_buf->size() > o_.max_line_bytes) {
            handle_too_long();
            in_buf->clear();
            *discarding = true;
          }
        }
      }
    }
  }
  // Reap, escalate cancellations, start queued calls.
  const double t = now_s();
  for (auto it = calls_.begin(); it != calls_.end();) {
    Call& c = *it;
    if (c.pid > 0 && !c.exited) {
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) {
        c.exited = true;
        c.exited_at = t;
        c.output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        ::kill(-c.pid, SIGTERM);  // whatever it left in its group
      } else if (c.cancel_stage > 0 && t >= c.next_signal_at && c.cancel_stage < 3) {
        ::kill(-c.pid, c.cancel_stage == 1 ? SIGTERM : SIGKILL);
        ++c.cancel_stage;
        c.next_signal_at = t + o_.cancel_grace_s;
      }
    }
    // Done once it exited and its pipes are drained (or, if something it started holds them, 2 s later).
    if (c.exited && ((c.out_fd < 0 && c.err_fd < 0) || t - c.exited_at > 2)) {
      finish(c);
      it = calls_.erase(it);
      continue;
    }
    if (c.exited && c.pid == 0) {  // never started
      finish(c);
      it = calls_.erase(it);
      continue;
    }
    ++it;
  }
  int running = 0;
  for (const auto& c : calls_) running += c.pid >= 0 ? 1 : 0;
  for (auto& c : calls_)
    if (c.pid < 0 && running < o_.max_parallel_calls) {
      start(c);
      ++running;
    }
  return input_open && !write_failed_;
}

void Server::shutdown() {
  for (auto& c : calls_)
    if (c.pid > 0 && !c.exited) ::kill(-c.pid, SIGTERM);
  const double deadline = now_s() + 2;
  for (auto& c : calls_) {
    if (c.pid <= 0 || c.exited) continue;
    for (;;) {
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) break;
      if (now_s() >= deadline) {
        ::kill(-c.pid, SIGKILL);
        ::waitpid(c.pid, &status, 0);
        break;
      }
      ::usleep(20000);
    }
    log_ << "profile-train mcp: " << c.tool << " stopped: the client closed the connection\n";
  }
  for (auto& c : calls_)
    for (int fd : {c.out_fd, c.err_fd})
      if (fd >= 0) ::close(fd);
  calls_.clear();
}

void Server::resources_list(const json& id, bool modern) {
  json list = json::array();
  std::error_code ec;
  for (const auto& p : written_) {
    if (!fs::is_regular_file(p, ec)) continue;
    const std::string ext = p.extension().string();
    json r = {{"uri", file_uri(p)},
              {"name", p.parent_path().filename().string() + "/" + p.filename().string()},
              {"mimeType", ext == ".html" ? "text/html" : "application/json"}};
    const auto size = fs::file_size(p, ec);
    if (!ec) r["size"] = size;
    list.push_back(std::move(r));
  }
  send_result(id, {{"resources", list}}, modern, true, 0);
}

void Server::resources_read(const json& id, const json& params, bool modern, const std::vector<fs::path>& roots) {
  if (!params.contains("uri") || !params["uri"].is_string()) return send_error(id, kInvalidParams, "resources/read: \"uri\" must be a string");
  const std::string uri = params["uri"].get<std::string>();
  auto path = path_from_file_uri(uri);
  if (!path) return send_error(id, kInvalidParams, "resources/read: not a file:// URI: " + terminal_safe(uri));
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(*path, ec);
  const bool ours = std::find(written_.begin(), written_.end(), abs) != written_.end();
  if (!ours && !path_within(abs, roots))
    return send_error(id, kInvalidParams, "resources/read: " + terminal_safe(abs.string()) + " is neither a report of this session nor inside the roots");
  auto text = read_file_bounded(abs, kMaxResourceBytes);
  if (!text.ok()) return send_error(id, kInvalidParams, "resources/read: " + terminal_safe(text.status().message()));
  const std::string ext = abs.extension().string();
  json c = {{"uri", uri}, {"mimeType", ext == ".html" ? "text/html" : ext == ".json" ? "application/json" : "text/plain"},
            {"text", to_valid_utf8(*text)}};
  send_result(id, {{"contents", json::array({c})}}, modern, true, 0);
}

}  // namespace

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> v = {kModern, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return v;
}

std::optional<fs::path> path_from_file_uri(const std::string& uri) {
  static const std::string scheme = "file://";
  if (uri.size() < scheme.size() || uri.compare(0, scheme.size(), scheme) != 0) return std::nullopt;
  std::string rest = uri.substr(scheme.size());
  // file:///abs or file://localhost/abs; another host is not this machine.
  if (rest.rfind("localhost/", 0) == 0) rest = rest.substr(9);
  if (rest.empty() || rest[0] != '/') return std::nullopt;
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else if (rest[i] == '?' || rest[i] == '#') {
      break;
    } else {
      out.push_back(rest[i]);
    }
  }
  if (out.find('\0') != std::string::npos) return std::nullopt;
  return fs::path(out);
}

std::string file_uri(const fs::path& absolute) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "file://";
  for (unsigned char ch : absolute.string()) {
    if (std::isalnum(ch) || std::strchr("/-._~", ch) != nullptr) out.push_back(static_cast<char>(ch));
    else out += {'%', hex[ch >> 4], hex[ch & 15]};
  }
  return out;
}

bool path_within(const fs::path& path, const std::vector<fs::path>& roots) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  for (const auto& r : roots) {
    const fs::path root = fs::weakly_canonical(r, ec);
    if (ec || root.empty()) continue;
    auto pi = p.begin();
    bool inside = true;
    for (auto ri = root.begin(); ri != root.end(); ++ri, ++pi) {
      if (ri->empty()) continue;  // a trailing separator
      if (pi == p.end() || *pi != *ri) {
        inside = false;
        break;
      }
    }
    if (inside) return true;
  }
  return false;
}

StatusOr<json> query_report(const json& report, const std::string& section, const std::string& pointer, size_t max_bytes) {
  const json* base = &report;
  std::string where;
  if (!section.empty()) {
    if (!report.is_object() || !report.contains(section)) {
      std::string keys;
      if (report.is_object())
        for (const auto& [k, v] : report.items()) keys += (keys.empty() ? "" : ", ") + k;
      return Status(StatusCode::kNotFound, "no section '" + terminal_safe(section) + "' (sections: " + keys + ")");
    }
    base = &report[section];
    where = "/";
    for (char ch : section) where += ch == '~' ? std::string("~0") : ch == '/' ? std::string("~1") : std::string(1, ch);
  }
  const json* value = base;
  if (!pointer.empty()) {
    try {
      const json::json_pointer jp(pointer);
      if (!base->contains(jp)) return Status(StatusCode::kNotFound, "nothing at pointer " + terminal_safe(pointer));
      value = &base->at(jp);
    } catch (const std::exception& e) {
      return Status(StatusCode::kInvalidArgument, "bad JSON pointer '" + terminal_safe(pointer) + "': " + e.what());
    }
    where += pointer;
  }
  json out;
  out["pointer"] = where;
  const size_t bytes = dump(*value).size();
  out["bytes"] = bytes;
  if (bytes <= max_bytes) {
    out["truncated"] = false;
    out["value"] = *value;
    return out;
  }
  out["truncated"] = true;
  // The children, as many as fit in max_bytes (the rest counted in children_left_out).
  json children = json::array();
  size_t used = 0, left_out = 0;
  auto add = [&](json child) {
    const size_t size = dump(child).size() + 1;
    if (used + size > max_bytes) return (void)++left_out;
    used += size;
    children.push_back(std::move(child));
  };
  if (value->is_object()) {
    for (const auto& [k, v] : value->items()) add({{"key", k}, {"bytes", dump(v).size()}});
  } else if (value->is_array()) {
    for (size_t i = 0; i < value->size(); ++i) add({{"index", i}, {"bytes", dump((*value)[i]).size()}});
  }
  if (left_out > 0) out["children_left_out"] = left_out;
  out["children"] = std::move(children);
  return out;
}

int serve(int in_fd, int out_fd, std::ostream& log, const ServerOptions& options) {
  Server server(out_fd, log, options);
  std::string buf;
  bool discarding = false;
  while (server.poll_once(in_fd, &buf, &discarding)) {
  }
  server.shutdown();
  return server.failed() ? kExitFailure : kExitOk;
}

}  // namespace profile_train::cli::mcp
