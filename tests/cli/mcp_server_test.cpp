// `profile-train mcp` at the protocol level (mcp_server.h): serve() runs in a thread on two pipes, the test
// writes raw JSON-RPC lines, including what no SDK sends (malformed JSON, batches, overlong lines, wrong
// envelopes), and reads the answers. The tools themselves run the built binary. The official SDK's session is
// tests/cli/mcp_sdk_e2e.py.
#include "mcp_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
namespace mcp = profile_train::cli::mcp;
using json = nlohmann::json;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("pt_mcp_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A server on pipes, in a thread of this process.
class Session {
 public:
  explicit Session(mcp::ServerOptions o = {}) {
    if (o.self_exe.empty()) o.self_exe = PT_BINARY_DIR "/profile-train";
    if (o.work_dir.empty()) o.work_dir = scratch("work");
    int in[2], out[2];
    // O_CLOEXEC: the tools' children must not hold the test's end of the input (the server would never see EOF).
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    to_server_ = in[1];
    from_server_ = out[0];
    thread_ = std::thread([this, o, r = in[0], w = out[1]] {
      rc_ = mcp::serve(r, w, log_, o);
      ::close(r);
      ::close(w);
    });
  }
  ~Session() {
    close_input();
    thread_.join();
    ::close(from_server_);
  }
  void close_input() {
    if (to_server_ >= 0) ::close(to_server_);
    to_server_ = -1;
  }
  void write_line(const std::string& line) {
    const std::string l = line + "\n";
    ASSERT_EQ(::write(to_server_, l.data(), l.size()), static_cast<ssize_t>(l.size()));
  }
  void send(const json& j) { write_line(j.dump()); }
  // The next message from the server (fails the test after `timeout_s`).
  json next(double timeout_s = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return json::parse(line);
      }
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) {
        ADD_FAILURE() << "no message from the server in " << timeout_s << " s";
        return json();
      }
      pollfd p{from_server_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) continue;
      char b[65536];
      const ssize_t n = ::read(from_server_, b, sizeof b);
      if (n <= 0) {
        ADD_FAILURE() << "the server closed its output";
        return json();
      }
      buf_.append(b, n);
    }
  }
  // The next message that is not a notification.
  json response(double timeout_s = 60) {
    for (;;) {
      json m = next(timeout_s);
      if (m.is_null() || !m.contains("method")) return m;
    }
  }
  json request(const json& id, const std::string& method, const json& params = json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    return response();
  }
  void initialize(const std::string& version = "2025-11-25") {
    json r = request(0, "initialize", {{"protocolVersion", version}, {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }
  int rc() const { return rc_; }
  std::string log() const { return log_.str(); }

 private:
  int to_server_ = -1, from_server_ = -1;
  std::string buf_;
  std::ostringstream log_;
  std::thread thread_;
  int rc_ = -1;
};

json modern_meta(const std::string& version = "2026-07-28") {
  return {{"io.modelcontextprotocol/protocolVersion", version}, {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

int error_code(const json& r) { return r.contains("error") ? r["error"]["code"].get<int>() : 0; }

TEST(McpUri, FileUrisRoundTripAndRefuseOtherSchemesAndHosts) {
  const fs::path p = "/tmp/a b/%x/é.json";
  const std::string uri = mcp::file_uri(p);
  EXPECT_EQ(uri, "file:///tmp/a%20b/%25x/%C3%A9.json");
  EXPECT_EQ(mcp::path_from_file_uri(uri), p);
  EXPECT_EQ(mcp::path_from_file_uri("file://localhost/etc/x"), fs::path("/etc/x"));
  EXPECT_FALSE(mcp::path_from_file_uri("file://other-host/etc/x"));
  EXPECT_FALSE(mcp::path_from_file_uri("https://example.com/x"));
  EXPECT_FALSE(mcp::path_from_file_uri("file:///a%00b"));  // a NUL would cut the path
}

TEST(McpRoots, PathWithinResolvesDotDotAndSymlinksAndComparesWholeComponents) {
  const fs::path d = scratch("roots");
  fs::create_directories(d / "root/sub");
  fs::create_directories(d / "rootsibling");
  fs::create_directories(d / "outside");
  fs::create_symlink(d / "outside", d / "root/link");
  const std::vector<fs::path> roots = {d / "root"};
  EXPECT_TRUE(mcp::path_within(d / "root/sub/x.json", roots));
  EXPECT_TRUE(mcp::path_within(d / "root", roots));
  EXPECT_FALSE(mcp::path_within(d / "root/../outside/x.json", roots));
  EXPECT_FALSE(mcp::path_within(d / "root/link/x.json", roots)) << "a symlink out of the root";
  EXPECT_FALSE(mcp::path_within(d / "rootsibling/x.json", roots)) << "a prefix of the name is not the folder";
  EXPECT_FALSE(mcp::path_within("/etc/passwd", roots));
}

TEST(McpQuery, SectionPointerBoundAndMissing) {
  const json report = {{"verdict", {{"bottleneck", "input_bound"}, {"evidence", {"a", "b"}}}},
                       {"gpu", {{"big", std::string(5000, 'x')}, {"small", 1}}}};
  auto v = mcp::query_report(report, "verdict", "/evidence/1", 1000);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)["value"], "b");
  EXPECT_EQ((*v)["pointer"], "/verdict/evidence/1");
  EXPECT_FALSE((*v)["truncated"].get<bool>());
  auto big = mcp::query_report(report, "gpu", "", 1000);
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE((*big)["truncated"].get<bool>());
  EXPECT_FALSE(big->contains("value"));
  ASSERT_EQ((*big)["children"].size(), 2u);
  EXPECT_EQ((*big)["children"][0]["key"], "big");
  EXPECT_GT((*big)["children"][0]["bytes"].get<int>(), 5000);
  EXPECT_FALSE(mcp::query_report(report, "nope", "", 1000).ok());
  EXPECT_FALSE(mcp::query_report(report, "", "/verdict/none", 1000).ok());
  EXPECT_FALSE(mcp::query_report(report, "", "no-slash", 1000).ok());
  auto whole = mcp::query_report(report, "", "", 1 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)["value"], report);
}

TEST(McpProtocol, HandshakeNegotiatesAndOlderRevisionsGetNoOutputSchema) {
  {
    Session s;
    json r = s.request(1, "initialize", {{"protocolVersion", "2099-01-01"}, {"capabilities", json::object()}});
    EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25") << "an unknown version gets our latest handshake one";
    EXPECT_EQ(r["result"]["serverInfo"]["name"], "profile-train");
    EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
    json tools = s.request(2, "tools/list")["result"]["tools"];
    ASSERT_FALSE(tools.empty());
    for (const auto& t : tools) EXPECT_TRUE(t.contains("outputSchema")) << t["name"];
    EXPECT_FALSE(s.request(3, "ping")["result"].contains("resultType")) << "handshake era: no 2026 fields";
  }
  {
    Session s;
    json r = s.request(1, "initialize", {{"protocolVersion", "2025-03-26"}, {"capabilities", json::object()}});
    EXPECT_EQ(r["result"]["protocolVersion"], "2025-03-26");
    const json tools = s.request(2, "tools/list")["result"]["tools"];  // kept: the loop must not outlive it
    ASSERT_FALSE(tools.empty());
    for (const auto& t : tools) {
      EXPECT_FALSE(t.contains("outputSchema")) << "2025-03-26 has no structured output";
      EXPECT_FALSE(t.contains("title"));
    }
    // Without structuredContent the result's JSON still arrives, as text.
    json call = s.request(3, "tools/call", {{"name", "rules_show"}, {"arguments", {{"id", "pin-memory"}}}});
    EXPECT_FALSE(call["result"].contains("structuredContent"));
    ASSERT_EQ(call["result"]["content"].size(), 2u);
    EXPECT_EQ(json::parse(call["result"]["content"][1]["text"].get<std::string>())["rule"]["id"], "pin-memory");
  }
}

TEST(McpProtocol, ModernRequestsNeedTheirMetaAndASupportedVersion) {
  Session s;
  json d = s.request(1, "server/discover", {{"_meta", modern_meta()}});
  ASSERT_TRUE(d.contains("result")) << d.dump();
  EXPECT_EQ(d["result"]["resultType"], "complete");
  EXPECT_GE(d["result"]["ttlMs"].get<int>(), 0);
  EXPECT_EQ(d["result"]["cacheScope"], "private");
  EXPECT_EQ(d["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "profile-train");

  json bad = s.request(2, "tools/list", {{"_meta", modern_meta("2031-01-01")}});
  EXPECT_EQ(error_code(bad), -32022);
  EXPECT_EQ(bad["error"]["data"]["requested"], "2031-01-01");
  EXPECT_EQ(bad["error"]["data"]["supported"][0], "2026-07-28");

  EXPECT_EQ(error_code(s.request(3, "tools/list")), -32602) << "a modern connection: _meta is required";
  EXPECT_EQ(error_code(s.request(4, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}})), -32602)
      << "clientCapabilities is required";
  EXPECT_EQ(error_code(s.request(5, "initialize", {{"protocolVersion", "2025-11-25"}})), -32022);
  json tl = s.request(6, "tools/list", {{"_meta", modern_meta()}});
  EXPECT_EQ(tl["result"]["resultType"], "complete");
  EXPECT_TRUE(tl["result"].contains("ttlMs"));
  EXPECT_EQ(error_code(s.request(7, "prompts/list", {{"_meta", modern_meta()}})), -32601);
}

TEST(McpProtocol, ModernRootsComeThroughInputRequired) {
  const fs::path d = scratch("modern_roots");
  std::ofstream(d / "r.json") << R"({"verdict": {"bottleneck": "x"}})";
  Session s;
  json meta = modern_meta();
  meta["io.modelcontextprotocol/clientCapabilities"] = {{"roots", json::object()}};
  const json args = {{"report", (d / "r.json").string()}, {"section", "verdict"}};
  json first = s.request(1, "tools/call", {{"_meta", meta}, {"name", "report_query"}, {"arguments", args}});
  EXPECT_EQ(first["result"]["resultType"], "input_required");
  EXPECT_EQ(first["result"]["inputRequests"]["roots"]["method"], "roots/list");
  const json responses = {{"roots", {{"roots", {{{"uri", mcp::file_uri(d)}}}}}}};
  json retry = s.request(2, "tools/call", {{"_meta", meta}, {"name", "report_query"}, {"arguments", args},
                                           {"inputResponses", responses}, {"requestState", first["result"]["requestState"]}});
  EXPECT_FALSE(retry["result"]["isError"].get<bool>()) << retry.dump();
  EXPECT_EQ(retry["result"]["structuredContent"]["value"]["bottleneck"], "x");
  const json elsewhere = {{"roots", {{"roots", {{{"uri", "file:///usr"}}}}}}};
  json refused = s.request(3, "tools/call", {{"_meta", meta}, {"name", "report_query"}, {"arguments", args},
                                             {"inputResponses", elsewhere}, {"requestState", "roots"}});
  EXPECT_TRUE(refused["result"]["isError"].get<bool>());
}

TEST(McpProtocol, HandshakeRootsAreAskedOnceAndTheCallWaitsForThem) {
  const fs::path d = scratch("hs_roots");
  std::ofstream(d / "r.json") << R"({"verdict": {"bottleneck": "y"}})";
  Session s;
  json r = s.request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", {{"roots", {{"listChanged", true}}}}}});
  ASSERT_TRUE(r.contains("result"));
  s.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
          {"params", {{"name", "report_query"}, {"arguments", {{"report", (d / "r.json").string()}}}}}});
  json ask = s.next();
  ASSERT_EQ(ask.value("method", ""), "roots/list") << ask.dump();
  s.send({{"jsonrpc", "2.0"}, {"id", ask["id"]}, {"result", {{"roots", {{{"uri", mcp::file_uri(d)}}}}}}});
  json done = s.response();
  EXPECT_EQ(done["id"], 2);
  EXPECT_EQ(done["result"]["structuredContent"]["value"]["verdict"]["bottleneck"], "y");
  // Known now: the next call does not ask again.
  json again = s.request(3, "tools/call", {{"name", "report_query"}, {"arguments", {{"report", (d / "r.json").string()}}}});
  EXPECT_EQ(again["id"], 3);
}

TEST(McpProtocol, BadMessagesGetErrorsAndTheServerGoesOn) {
  mcp::ServerOptions o;
  o.max_line_bytes = 64 * 1024;
  Session s(o);
  s.write_line("{not json");
  EXPECT_EQ(error_code(s.next()), -32700);
  s.write_line("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
  EXPECT_EQ(error_code(s.next()), -32600) << "batches";
  s.write_line("42");
  EXPECT_EQ(error_code(s.next()), -32600);
  s.write_line(R"({"id": 3, "method": "ping"})");
  json no_version = s.next();
  EXPECT_EQ(error_code(no_version), -32600);
  EXPECT_EQ(no_version["id"], 3);
  s.write_line(R"({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})");
  EXPECT_EQ(error_code(s.next()), -32600) << "an object id";
  s.write_line("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}");
  EXPECT_EQ(error_code(s.next()), -32700) << "invalid UTF-8";
  s.write_line(std::string(200 * 1024, '['));
  json too_long = s.next();
  EXPECT_EQ(error_code(too_long), -32700);
  EXPECT_NE(too_long["error"]["message"].get<std::string>().find("longer than"), std::string::npos);
  s.write_line(std::string(100, '[') + std::string(100, ']'));
  EXPECT_EQ(error_code(s.next()), -32700) << "nested deeper than the limit";
  EXPECT_EQ(error_code(s.request(5, "tools/list")), -32600) << "before initialize";
  EXPECT_EQ(s.request(6, "ping")["id"], 6) << "ping is allowed before initialize";
  s.initialize();
  EXPECT_EQ(error_code(s.request(7, "no/such/method")), -32601);
  EXPECT_EQ(error_code(s.request(8, "tools/call", {{"name", "nope"}})), -32602);
  EXPECT_EQ(error_code(s.request(9, "tools/call", {{"arguments", json::object()}})), -32602);
  json wrong = s.request(10, "tools/call", {{"name", "report_query"}, {"arguments", {{"report", 5}}}});
  EXPECT_TRUE(wrong["result"]["isError"].get<bool>());
  EXPECT_NE(wrong["result"]["content"][0]["text"].get<std::string>().find("'report' must be a string"), std::string::npos);
  json disabled = s.request(11, "tools/call", {{"name", "tune"}, {"arguments", {{"workload", "x"}}}});
  EXPECT_TRUE(disabled["result"]["isError"].get<bool>());
  EXPECT_NE(disabled["result"]["content"][0]["text"].get<std::string>().find("--allow-run"), std::string::npos);
  s.send({{"jsonrpc", "2.0"}, {"id", "not-ours"}, {"result", json::object()}});  // a stray response: ignored
  s.send({{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}});
  EXPECT_EQ(s.request(12, "ping")["id"], 12);
  s.close_input();
}

TEST(McpProtocol, ToolOutputIsBoundedAndSaysSo) {
  const fs::path d = scratch("bounded");
  {
    std::ofstream f(d / "big.json");
    f << "{\"gpu\": {";
    for (int i = 0; i < 2000; ++i) f << (i ? "," : "") << "\"k" << i << "\": \"" << std::string(100, 'v') << "\"";
    f << "}}";
  }
  mcp::ServerOptions o;
  o.roots = {d};
  o.max_response_bytes = 16 * 1024;
  Session s(o);
  s.initialize();
  json r = s.request(1, "tools/call", {{"name", "report_query"}, {"arguments", {{"report", (d / "big.json").string()}, {"section", "gpu"}}}});
  ASSERT_TRUE(r.contains("result")) << r.dump().substr(0, 500);
  const json& sc = r["result"]["structuredContent"];
  EXPECT_TRUE(sc["truncated"].get<bool>());
  ASSERT_GT(sc["children"].size(), 10u);
  EXPECT_EQ(sc["children"].size() + sc["children_left_out"].get<size_t>(), 2000u) << "the children that fit, the rest counted";
  EXPECT_LE(r.dump().size(), 16u * 1024 + 2048) << "the whole response within the limit";
}

TEST(McpProtocol, ClosingTheInputStopsARunningCallAndEndsTheServer) {
  const fs::path d = scratch("stop");
  const fs::path marker = d / "mcp-stop-marker.py";
  std::ofstream(marker) << "import time\ntime.sleep(300)\n";
  mcp::ServerOptions o;
  o.allow_run = true;
  o.roots = {d};
  std::optional<Session> s(std::in_place, o);
  s->initialize();
  s->send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
           {"params", {{"name", "tune"}, {"arguments", {{"command", {PT_PYTHON, marker.string()}}, {"knobs", {"num_workers=0,1"}}}},
                       {"_meta", {{"progressToken", "p1"}}}}}});
  json progress = s->next();
  EXPECT_EQ(progress["method"], "notifications/progress");
  EXPECT_EQ(progress["params"]["progressToken"], "p1");
  // Wait until the tune's command runs.
  auto running = [] { return std::system("pgrep -f '[m]cp-stop-marker' > /dev/null") == 0; };  // [m]: not this sh
  for (int i = 0; i < 200 && !running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(running());
  const auto t0 = std::chrono::steady_clock::now();
  s->close_input();
  s.reset();  // joins: serve() returned
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 5) << "serve() returns within the 2 s grace plus the kill";
  for (int i = 0; i < 100 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(running()) << "the tune's command must not outlive the server";
}

TEST(McpProtocol, ACancelledCallGetsNoResponseAndItsProcessesEnd) {
  const fs::path d = scratch("cancel");
  const fs::path marker = d / "mcp-cancel-marker.py";
  std::ofstream(marker) << "import time\ntime.sleep(300)\n";
  mcp::ServerOptions o;
  o.allow_run = true;
  o.roots = {d};
  o.cancel_grace_s = 1;
  Session s(o);
  s.initialize();
  s.send({{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/call"},
          {"params", {{"name", "run"}, {"arguments", {{"command", {PT_PYTHON, marker.string()}}}}}}});
  auto running = [] { return std::system("pgrep -f '[m]cp-cancel-marker' > /dev/null") == 0; };  // [m]: not this sh
  for (int i = 0; i < 200 && !running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(running());
  s.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 7}, {"reason", "test"}}}});
  for (int i = 0; i < 200 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(running());
  json next = s.request(8, "ping");
  EXPECT_EQ(next["id"], 8) << "no response for the cancelled call 7, and the server serves on";
}

}  // namespace
