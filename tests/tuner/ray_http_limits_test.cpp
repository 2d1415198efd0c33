// The Ray client against a hostile dashboard (issue 29, items 6-8): a loopback HTTP server started by the test
// sends an endless header, an endless chunked body, one byte at a time, or a 200 MiB job log. The client must
// give up with one clear error (or keep only the log's head and tail) within its caps and deadline. Each test
// failed on the cpp-httplib client before (memory grew with the answer; the trickle was waited for).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "profile_train/tuner/ray_client.h"

namespace pt = profile_train::tuner;

namespace {

using Clock = std::chrono::steady_clock;

// Sends `data` whole; false once the client has gone.
bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// A loopback server: every connection's request is read up to its blank line, then `answer(fd)` writes what it
// wants. Stops (and closes what is open) when destroyed.
class HostileServer {
 public:
  explicit HostileServer(std::function<void(int)> answer) : answer_(std::move(answer)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    thread_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0 || stop_) {
          if (fd >= 0) ::close(fd);
          return;
        }
        std::string req;
        char buf[4096];
        while (req.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
          if (n <= 0) break;
          req.append(buf, static_cast<size_t>(n));
        }
        answer_(fd);
        ::close(fd);
      }
    });
  }
  ~HostileServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  std::string address() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<bool> stop_{false};

 private:
  std::function<void(int)> answer_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

long max_rss_mib() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr size_t kHostileBytes = size_t{256} << 20;  // what the server sends at most: far past every cap

}  // namespace

TEST(RayHttpLimits, AnEndlessHeaderIsCapped) {
  HostileServer server([](int fd) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\n")) return;
    // Short header lines, as a real endless header would be (each one is within any per-line limit).
    std::string block;
    while (block.size() < (64 << 10)) block += "X-Pad: " + std::string(90, 'a') + "\r\n";
    for (size_t sent = 0; sent < kHostileBytes; sent += block.size())
      if (!send_all(fd, block)) return;
    send_all(fd, "Content-Length: 2\r\n\r\n{}");
  });
  const long rss0 = max_rss_mib();
  auto client = pt::RayClient::connect(server.address(), 10);
  ASSERT_TRUE(client.ok());
  const auto t0 = Clock::now();
  auto v = (*client)->check_version();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("header is larger than 64 KiB"), std::string::npos) << v.status().message();
  EXPECT_EQ(v.status().exit_code(), 2);
  EXPECT_LT(max_rss_mib() - rss0, 64) << "the header was held in memory";
  EXPECT_LT(since(t0), 20.0);
}

TEST(RayHttpLimits, AnEndlessChunkedBodyIsCapped) {
  HostileServer server([](int fd) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")) return;
    const std::string data(64 << 10, ' ');
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    const std::string chunk = size + data + "\r\n";
    for (size_t sent = 0; sent < kHostileBytes; sent += data.size())
      if (!send_all(fd, chunk)) return;
    send_all(fd, "0\r\n\r\n");
  });
  const long rss0 = max_rss_mib();
  auto client = pt::RayClient::connect(server.address(), 10);
  ASSERT_TRUE(client.ok());
  auto v = (*client)->status("job1");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("larger than 16 MiB"), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find("GET /api/jobs/job1"), std::string::npos) << v.status().message();
  EXPECT_LT(max_rss_mib() - rss0, 100) << "the body was held in memory";
}

TEST(RayHttpLimits, ATricklingServerHitsTheRequestDeadline) {
  // One byte every 200 ms: never silent for the 10 s inactivity timeout, so only an overall deadline ends it.
  HostileServer* self = nullptr;
  HostileServer server([&self](int fd) {
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{\"ray_version\": \"2.9.0\"}              ";
    for (int i = 0; i < 200 && !(self && self->stop_); ++i) {
      if (!send_all(fd, answer.substr(static_cast<size_t>(i) % answer.size(), 1))) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  self = &server;
  pt::RayHttpLimits limits;
  limits.io_timeout_s = 10;
  limits.request_deadline_s = 1.5;
  auto client = pt::RayClient::connect(server.address(), limits);
  ASSERT_TRUE(client.ok());
  const auto t0 = Clock::now();
  auto v = (*client)->check_version();
  const double took = since(t0);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("within 1.5 s"), std::string::npos) << v.status().message();
  EXPECT_LT(took, 5.0);
  EXPECT_GE(took, 1.4);
  // The default deadline of a client made with a timeout alone is 60 s.
  EXPECT_EQ(pt::RayHttpLimits{}.request_deadline_s, 60);
}

TEST(RayHttpLimits, AHugeJobLogIsStreamedAndKeptAsItsHeadAndTail) {
  // 200 MiB of log lines in Ray's {"logs": "..."}, JSON-escaped, with no Content-Length; the entry point's
  // final marker line at its end.
  const std::string line = "step 123 loss 0.5 \\\"quoted\\\" caf\\u00e9 tab\\t end\\n";
  const std::string last = "PROFILE_TRAIN_MARKER end job1\\n";
  HostileServer server([&](int fd) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"logs\": \"")) return;
    std::string block;
    while (block.size() < (1 << 20)) block += line;
    for (size_t sent = 0; sent < (size_t{200} << 20); sent += block.size())
      if (!send_all(fd, block)) return;
    send_all(fd, last + "\"}");
  });
  const long rss0 = max_rss_mib();
  auto client = pt::RayClient::connect(server.address(), 10);
  ASSERT_TRUE(client.ok());
  auto log = (*client)->logs("job1");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_LE(log->size(), size_t{34} << 20);
  EXPECT_GE(log->size(), size_t{32} << 20);
  EXPECT_EQ(log->rfind("step 123 loss 0.5 \"quoted\" caf\xC3\xA9 tab\t end\n", 0), 0u) << log->substr(0, 80);
  EXPECT_NE(log->find("bytes of the job's log left out here"), std::string::npos);
  const std::string tail = "PROFILE_TRAIN_MARKER end job1\n";
  ASSERT_GE(log->size(), tail.size());
  EXPECT_EQ(log->substr(log->size() - tail.size()), tail);
  EXPECT_LT(max_rss_mib() - rss0, 200) << "the whole log was held in memory";
}

TEST(RayHttpLimits, AnOrdinaryAnswerStillWorks) {
  HostileServer server([](int fd) {
    const std::string body = "{\"logs\": \"hello\\nworld \\ud83d\\ude00\\n\", \"other\": [1, {\"a\": \"}\"}]}";
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  auto client = pt::RayClient::connect(server.address(), 10);
  ASSERT_TRUE(client.ok());
  auto log = (*client)->logs("job1");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(*log, "hello\nworld \xF0\x9F\x98\x80\n");
}

TEST(RayHttpLimits, AChunkedAnswerSplitAnywhereIsReadWhole) {
  // As aiohttp (the dashboard) streams: chunked, here in chunks of 7 bytes sent one by one, so that chunk
  // sizes, CRLFs and escapes (\u00e9) are split across reads.
  const std::string body = "{\"job_id\": null, \"submission_id\": \"raysubmit_1\", \"status\": \"RUNNING\", "
                           "\"message\": \"caf\\u00e9\", \"driver_exit_code\": null}";
  HostileServer server([&](int fd) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")) return;
    for (size_t i = 0; i < body.size(); i += 7) {
      const std::string part = body.substr(i, 7);
      char size[16];
      std::snprintf(size, sizeof size, "%zX\r\n", part.size());
      if (!send_all(fd, size + part + "\r\n")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    send_all(fd, "0\r\n\r\n");
  });
  auto client = pt::RayClient::connect(server.address(), 10);
  ASSERT_TRUE(client.ok());
  auto info = (*client)->status("raysubmit_1");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->state, "RUNNING");
  EXPECT_EQ(info->message, "caf\xC3\xA9");
}
