// RayClient: the Jobs REST API over a small HTTP/1.1 client of its own (one connection per request,
// `Connection: close`). Its own rather than cpp-httplib's, whose client (Debian's 0.11) bounds neither a
// header nor a body nor a whole request: an endless header reached 4.2 GB, an endless chunked body 2.1 GB, a
// server trickling a byte every 2 s kept `tune` waiting forever (issue 29). Here every answer is bounded by
// RayHttpLimits: header bytes, body bytes, the log kept (streamed), inactivity and an overall deadline.
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include "profile_train/tuner/ray_client.h"

namespace profile_train::tuner {

const bool kRaySupported = true;

namespace {

using Clock = std::chrono::steady_clock;

std::string mib(size_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

std::string secs(double s) {
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t + " s";
}

// The last line of a body, trimmed to something printable on one line.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (const size_t nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text;
}

// Where the body of an answer goes; returns false to stop reading (its own limit was reached).
using BodySink = std::function<bool(std::string_view)>;

// A failure of one request, before the caller names the request: kUnreachable when no connection could be
// made (nothing listening, no route), kFailed for everything after.
struct HttpFailure {
  bool unreachable = false;
  std::string why;
};

// One socket for one request, with the request's deadline.
class Connection {
 public:
  Connection(const RayHttpLimits& limits) : limits_(limits) {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(std::min(limits.request_deadline_s, 1e9)));
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool open(const std::string& host, const std::string& port, HttpFailure* f) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &list); rc != 0) {
      *f = {true, std::string("cannot resolve ") + host + ": " + ::gai_strerror(rc)};
      return false;
    }
    std::string last = "no address";
    for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) {
        last = std::strerror(errno);
        continue;
      }
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
        std::string why;
        if (wait_for(fd, POLLOUT, &why)) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          if (err == 0) {
            fd_ = fd;
            break;
          }
          why = std::strerror(err);
        }
        last = why;
      } else {
        last = std::strerror(errno);
      }
      ::close(fd);
    }
    ::freeaddrinfo(list);
    if (fd_ < 0) *f = {true, last};
    return fd_ >= 0;
  }

  bool send_all(std::string_view data, HttpFailure* f) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!wait_for(fd_, POLLOUT, &f->why)) return false;
        continue;
      }
      f->why = std::string("send: ") + std::strerror(errno);
      return false;
    }
    return true;
  }

  // Some bytes into `buf`; 0 at the end of the stream; -1 on failure (f says why).
  ssize_t receive(char* buf, size_t n, HttpFailure* f) {
    for (;;) {
      const ssize_t got = ::recv(fd_, buf, n, 0);
      if (got >= 0) return got;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        f->why = std::string("receive: ") + std::strerror(errno);
        return -1;
      }
      if (!wait_for(fd_, POLLIN, &f->why)) return -1;
    }
  }

 private:
  // Waits until `fd` is ready, for at most the inactivity timeout and never past the request's deadline.
  bool wait_for(int fd, short events, std::string* why) {
    for (;;) {
      const double left_s = std::chrono::duration<double>(deadline_ - Clock::now()).count();
      if (left_s <= 0) {
        *why = "no complete answer within " + secs(limits_.request_deadline_s) + " (the deadline of one request)";
        return false;
      }
      const double wait_s = std::min(left_s, limits_.io_timeout_s);
      pollfd p{fd, events, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(std::ceil(std::min(wait_s, 1e6) * 1000)));
      if (rc > 0) return true;
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) {
        *why = std::string("poll: ") + std::strerror(errno);
        return false;
      }
      if (wait_s < left_s) {
        *why = "nothing received for " + secs(limits_.io_timeout_s);
        return false;
      }
    }
  }

  const RayHttpLimits& limits_;
  Clock::time_point deadline_;
  int fd_ = -1;
};

// Reads the answer after the request: status line, headers, then the body (Content-Length, chunked, or up to
// the end of the connection) into `sink`. Returns the HTTP status, or 0 with `f` filled.
int read_answer(Connection& c, const RayHttpLimits& limits, const BodySink& sink, HttpFailure* f) {
  std::string buf;  // bytes received and not yet consumed
  char chunk[16384];
  auto fill = [&]() -> ssize_t {
    const ssize_t n = c.receive(chunk, sizeof chunk, f);
    if (n > 0) buf.append(chunk, static_cast<size_t>(n));
    return n;
  };
  // Until "\r\n\r\n" (or "\n\n"), at most max_header_bytes.
  size_t header_end = std::string::npos, sep = 0;
  int status = 0;
  std::string headers;
  for (;;) {
    for (;;) {
      size_t a = buf.find("\r\n\r\n"), b = buf.find("\n\n");
      if (a != std::string::npos && (b == std::string::npos || a < b)) header_end = a, sep = 4;
      else if (b != std::string::npos) header_end = b, sep = 2;
      if (header_end != std::string::npos) break;
      if (buf.size() > limits.max_header_bytes) {
        f->why = "the answer's header is larger than " + mib(limits.max_header_bytes) + " (not a Ray dashboard?)";
        return 0;
      }
      const ssize_t n = fill();
      if (n < 0) return 0;
      if (n == 0) {
        f->why = buf.empty() ? "the connection closed without an answer" : "the connection closed inside the header";
        return 0;
      }
    }
    if (header_end > limits.max_header_bytes) {
      f->why = "the answer's header is larger than " + mib(limits.max_header_bytes) + " (not a Ray dashboard?)";
      return 0;
    }
    headers = buf.substr(0, header_end);
    buf.erase(0, header_end + sep);
    header_end = std::string::npos;
    // "HTTP/1.1 200 OK"
    if (headers.rfind("HTTP/1.", 0) != 0 || headers.size() < 12 || headers[8] != ' ') {
      f->why = "not an HTTP answer: " + one_line(headers.substr(0, std::min<size_t>(headers.find('\n'), 80)));
      return 0;
    }
    status = std::atoi(headers.c_str() + 9);
    if (status < 100 || status > 999) {
      f->why = "not an HTTP status: " + one_line(headers.substr(0, std::min<size_t>(headers.find('\n'), 80)));
      return 0;
    }
    if (status >= 200 || status == 101) break;  // 1xx interim answers (100 Continue) are skipped
  }
  bool chunked = false;
  std::optional<uint64_t> length;
  for (size_t pos = headers.find('\n'); pos != std::string::npos;) {
    const size_t next = headers.find('\n', pos + 1);
    std::string line = headers.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    pos = next;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    value.erase(0, value.find_first_not_of(" \t"));
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) chunked = true;
    if (name == "content-length") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (errno != 0 || end == value.c_str()) {
        f->why = "bad Content-Length: " + one_line(value.substr(0, 40));
        return 0;
      }
      length = v;
    }
  }
  if (chunked) {
    for (;;) {
      size_t nl;
      while ((nl = buf.find('\n')) == std::string::npos) {
        if (buf.size() > 1024) {
          f->why = "a chunk-size line longer than 1 KiB";
          return 0;
        }
        const ssize_t n = fill();
        if (n <= 0) {
          if (n == 0) f->why = "the connection closed inside a chunked body";
          return 0;
        }
      }
      char* end = nullptr;
      errno = 0;
      const unsigned long long size = std::strtoull(buf.c_str(), &end, 16);
      if (errno != 0 || end == buf.c_str()) {
        f->why = "bad chunk size: " + one_line(buf.substr(0, std::min<size_t>(nl, 40)));
        return 0;
      }
      buf.erase(0, nl + 1);
      if (size == 0) return status;  // trailers, if any, are not read: the connection is closed anyway
      uint64_t left = size;
      while (left > 0) {
        if (buf.empty() && fill() <= 0) {
          if (f->why.empty()) f->why = "the connection closed inside a chunk";
          return 0;
        }
        const size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
        if (!sink(std::string_view(buf.data(), take))) return -1;
        buf.erase(0, take);
        left -= take;
      }
      // The CRLF after the chunk's data.
      while (buf.size() < 2) {
        const ssize_t n = fill();
        if (n <= 0) {
          if (n == 0 && !buf.empty()) break;
          if (n == 0) f->why = "the connection closed inside a chunked body";
          return 0;
        }
      }
      if (buf.rfind("\r\n", 0) == 0) buf.erase(0, 2);
      else if (!buf.empty() && buf[0] == '\n') buf.erase(0, 1);
    }
  }
  uint64_t left = length.value_or(UINT64_MAX);
  for (;;) {
    if (!buf.empty()) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      if (!sink(std::string_view(buf.data(), take))) return -1;
      left -= take;
      buf.clear();
    }
    if (left == 0) return status;
    const ssize_t n = fill();
    if (n < 0) return 0;
    if (n == 0) {
      if (length) {
        f->why = "the connection closed before the end of the body";
        return 0;
      }
      return status;  // no length: the body ends with the connection
    }
  }
}

// The value of the top-level key "logs" of {"logs": "..."}, decoded as it streams in, kept as its head and
// tail (RayHttpLimits): a 512 MiB log costs 33 MiB, not 3 GB.
class LogExtractor {
 public:
  LogExtractor(size_t head, size_t tail) : head_cap_(head), tail_cap_(tail) {}

  bool feed(std::string_view data) {
    for (const char ch : data) step(ch);
    return !failed_;
  }
  bool complete() const { return state_ == kDone; }
  bool failed() const { return failed_; }

  std::string result() {
    std::string out = std::move(head_);
    if (tail_.size() > tail_cap_) {
      dropped_ += tail_.size() - tail_cap_;
      tail_.erase(0, tail_.size() - tail_cap_);
    }
    if (dropped_ > 0) {
      // The tail starts at a line boundary: no half line, no half UTF-8 character.
      size_t nl = tail_.find('\n');
      nl = nl == std::string::npos ? 0 : nl + 1;
      dropped_ += nl;
      out += "\n[profile-train: " + std::to_string(dropped_) + " bytes of the job's log left out here (a log is kept up to " +
             mib(head_cap_) + " of its start and " + mib(tail_cap_) + " of its end)]\n";
      out.append(tail_, nl, std::string::npos);
    } else {
      out += tail_;
    }
    return out;
  }

 private:
  enum State { kStart, kKeyOrEnd, kKey, kColon, kValue, kLogString, kSkipString, kSkipValue, kAfterValue, kDone };

  void emit(char ch) {
    if (head_.size() < head_cap_) {
      head_.push_back(ch);
      return;
    }
    tail_.push_back(ch);
    if (tail_.size() >= 2 * tail_cap_) {  // amortized: keep the last tail_cap_ bytes
      dropped_ += tail_.size() - tail_cap_;
      tail_.erase(0, tail_.size() - tail_cap_);
    }
  }
  void emit_utf8(uint32_t cp) {
    if (cp < 0x80) {
      emit(static_cast<char>(cp));
    } else if (cp < 0x800) {
      emit(static_cast<char>(0xC0 | (cp >> 6)));
      emit(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      emit(static_cast<char>(0xE0 | (cp >> 12)));
      emit(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      emit(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      emit(static_cast<char>(0xF0 | (cp >> 18)));
      emit(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      emit(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      emit(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  static bool space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }

  // One character of a JSON string body (after the opening quote); false at the closing quote.
  bool string_char(char ch, bool keep) {
    if (hex_left_ > 0) {
      const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
      if (d < 0) {
        failed_ = true;
        return true;
      }
      unit_ = unit_ * 16 + static_cast<uint32_t>(d);
      if (--hex_left_ == 0 && keep) {
        if (unit_ >= 0xD800 && unit_ < 0xDC00) {
          high_ = unit_;  // the low surrogate follows
        } else if (unit_ >= 0xDC00 && unit_ < 0xE000 && high_ != 0) {
          emit_utf8(0x10000 + ((high_ - 0xD800) << 10) + (unit_ - 0xDC00));
          high_ = 0;
        } else {
          if (high_ != 0) emit_utf8(0xFFFD);
          high_ = 0;
          emit_utf8(unit_ >= 0xD800 && unit_ < 0xE000 ? 0xFFFD : unit_);
        }
      }
      return true;
    }
    if (escape_) {
      escape_ = false;
      if (ch == 'u') {
        hex_left_ = 4;
        unit_ = 0;
        return true;
      }
      if (keep) {
        const char c = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r' : ch == 'b' ? '\b' : ch == 'f' ? '\f' : ch;
        emit(c);
      }
      return true;
    }
    if (ch == '\\') {
      escape_ = true;
      return true;
    }
    if (ch == '"') return false;
    if (keep) emit(ch);
    return true;
  }

  void step(char ch) {
    switch (state_) {
      case kStart:
        if (space(ch)) return;
        if (ch != '{') failed_ = true;
        state_ = kKeyOrEnd;
        return;
      case kKeyOrEnd:
        if (space(ch) || ch == ',') return;
        if (ch == '}') {
          state_ = kDone;
          return;
        }
        if (ch != '"') {
          failed_ = true;
          return;
        }
        key_.clear();
        state_ = kKey;
        return;
      case kKey:
        if (ch == '"' && !escape_) {
          state_ = kColon;
          return;
        }
        escape_ = !escape_ && ch == '\\';
        if (key_.size() < 64) key_.push_back(ch);
        return;
      case kColon:
        if (space(ch)) return;
        if (ch != ':') failed_ = true;
        state_ = kValue;
        return;
      case kValue:
        if (space(ch)) return;
        if (ch == '"') {
          state_ = key_ == "logs" && !seen_logs_ ? kLogString : kSkipString;
          if (state_ == kLogString) seen_logs_ = true;
          return_to_ = kAfterValue;
          return;
        }
        // Any other value (not in Ray's answer) is skipped, strings inside it included.
        depth_ = 0;
        state_ = kSkipValue;
        skip_value(ch);
        return;
      case kLogString:
      case kSkipString:
        if (!string_char(ch, state_ == kLogString)) state_ = return_to_;
        return;
      case kSkipValue:
        skip_value(ch);
        return;
      case kAfterValue:
        if (space(ch)) return;
        if (ch == ',') state_ = kKeyOrEnd;
        else if (ch == '}') state_ = kDone;
        else failed_ = true;
        return;
      case kDone:
        return;
    }
  }

  void skip_value(char ch) {
    if (ch == '"') {
      return_to_ = kSkipValue;
      state_ = kSkipString;
    } else if (ch == '{' || ch == '[') {
      ++depth_;
    } else if (ch == '}' || ch == ']') {
      if (depth_ == 0) {  // a scalar ended by the end of the top-level object
        if (ch == '}') state_ = kDone;
        else failed_ = true;
      } else if (--depth_ == 0) {
        state_ = kAfterValue;
      }
    } else if (ch == ',' && depth_ == 0) {
      state_ = kKeyOrEnd;
    }
  }

  size_t head_cap_, tail_cap_;
  std::string head_, tail_, key_;
  uint64_t dropped_ = 0;
  State state_ = kStart;
  State return_to_ = kAfterValue;  // where a string being read returns at its closing quote
  bool failed_ = false, escape_ = false, seen_logs_ = false;
  int hex_left_ = 0;
  uint32_t unit_ = 0, high_ = 0;
  int depth_ = 0;
};

class HttpRayClient : public RayClient {
 public:
  HttpRayClient(std::string address, const RayHttpLimits& limits) : RayClient(std::move(address)), limits_(limits) {
    // "http://HOST[:PORT]" (normalize_ray_address); HOST may be a bracketed IPv6 address.
    const std::string hp = address_.substr(7);
    if (!hp.empty() && hp[0] == '[') {
      const size_t close = hp.find(']');
      host_ = hp.substr(1, close == std::string::npos ? std::string::npos : close - 1);
      if (close != std::string::npos && close + 1 < hp.size() && hp[close + 1] == ':') port_ = hp.substr(close + 2);
    } else if (const size_t colon = hp.rfind(':'); colon != std::string::npos) {
      host_ = hp.substr(0, colon);
      port_ = hp.substr(colon + 1);
    } else {
      host_ = hp;
    }
    if (port_.empty()) port_ = "80";
  }

  StatusOr<std::string> check_version() override {
    auto res = call("GET", "/api/version", "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status == 404) {
      return Unsupported("the Ray at " + address_ + " has no Jobs API (GET /api/version: 404; Ray 2.x with the "
                         "dashboard is needed: pip install 'ray[default]')");
    }
    if (res->status != 200) return http_error("GET /api/version", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_object() || !j.contains("ray_version")) {
      return Unsupported("the server at " + address_ + " is not a Ray dashboard with the Jobs API (GET /api/version: " +
                         one_line(res->body) + ")");
    }
    const std::string v = j["ray_version"].is_string() ? j["ray_version"].get<std::string>() : j["ray_version"].dump();
    // The REST Jobs API with entrypoint resources is Ray >= 2.2; the dashboard's own API version is >= 3 then.
    int major = 0;
    try {
      major = std::stoi(v);
    } catch (const std::exception&) {
    }
    if (major < 2) return Unsupported("Ray " + v + " at " + address_ + " is too old for the Jobs API (Ray 2.x needed)");
    auto probe = call("GET", "/api/jobs/", "", limits_.max_list_bytes);
    if (!probe.ok()) return probe.status();
    if (probe->status == 404) {
      return Unsupported("Ray " + v + " at " + address_ + " answers but has no Jobs API (GET /api/jobs/: 404)");
    }
    return v;
  }

  StatusOr<std::string> submit(const RayJobSpec& spec) override {
    const std::string body = job_request_body(spec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto res = call("POST", "/api/jobs/", body, limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status != 200) return http_error("POST /api/jobs/", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_object() && j.contains("submission_id") && j["submission_id"].is_string()) {
      return j["submission_id"].get<std::string>();
    }
    if (j.is_object() && j.contains("job_id") && j["job_id"].is_string()) return j["job_id"].get<std::string>();
    return BadInput("POST /api/jobs/ at " + address_ + ": unexpected answer " + one_line(res->body));
  }

  StatusOr<RayJobInfo> status(const std::string& id) override {
    auto res = call("GET", "/api/jobs/" + id, "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status == 404) return NotFound("Ray job " + id + " not found at " + address_);
    if (res->status != 200) return http_error("GET /api/jobs/" + id, *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_object()) return BadInput("GET /api/jobs/" + id + ": not JSON: " + one_line(res->body));
    RayJobInfo info = job_info_from_json(j);
    if (info.submission_id.empty()) info.submission_id = id;
    return info;
  }

  StatusOr<std::string> logs(const std::string& id) override {
    // Streamed through the extractor: only the log's head and tail are held, never the whole answer.
    const std::string what = "GET /api/jobs/" + id + "/logs";
    LogExtractor log(limits_.log_head_bytes, limits_.log_tail_bytes);
    std::string start;  // the answer's first bytes, for an error message
    auto res = exchange("GET", "/api/jobs/" + id + "/logs", "", [&](std::string_view d) {
      if (start.size() < 4096) start.append(d.substr(0, 4096 - start.size()));
      return log.feed(d);
    });
    if (!res.ok()) {
      if (log.failed()) return BadInput(what + ": unexpected answer");
      return res.status();
    }
    if (*res != 200) return http_error(what, Answer{*res, start});
    if (log.failed() || !log.complete()) return BadInput(what + ": unexpected answer");
    return log.result();
  }

  Status stop(const std::string& id) override {
    auto res = call("POST", "/api/jobs/" + id + "/stop", "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status != 200) return http_error("POST /api/jobs/" + id + "/stop", *res);
    return Status::Ok();
  }

  StatusOr<std::vector<RayJobInfo>> list() override {
    auto res = call("GET", "/api/jobs/", "", limits_.max_list_bytes);
    if (!res.ok()) return res.status();
    if (res->status != 200) return http_error("GET /api/jobs/", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_array()) return BadInput("GET /api/jobs/: not a JSON array");
    std::vector<RayJobInfo> out;
    for (const auto& e : j) out.push_back(job_info_from_json(e));
    return out;
  }

  StatusOr<std::vector<std::map<std::string, double>>> node_resources() override {
    auto res = call("GET", "/api/cluster_status", "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    std::vector<std::map<std::string, double>> out;
    if (res->status != 200) return out;
    const nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    const nlohmann::json* types = &j;
    for (const char* key : {"data", "clusterStatus", "loadMetricsReport", "nodeTypes"}) {
      if (!types->is_object() || !types->contains(key)) return out;
      types = &(*types)[key];
    }
    if (!types->is_array()) return out;
    for (const auto& entry : *types) {  // [{resource: amount}, node count]
      if (!entry.is_array() || entry.empty() || !entry[0].is_object()) continue;
      std::map<std::string, double> node;
      for (auto it = entry[0].begin(); it != entry[0].end(); ++it) {
        if (it.value().is_number()) node[it.key()] = it.value().get<double>();
      }
      out.push_back(std::move(node));
    }
    return out;
  }

 private:
  struct Answer {
    int status = 0;
    std::string body;
  };

  // One request; the HTTP status once the whole answer was read into `sink`. A sink that stops (its own
  // limit) ends the request with ResourceExhausted naming the request.
  StatusOr<int> exchange(const std::string& method, const std::string& path, const std::string& body, const BodySink& sink) {
    const std::string what = method + " " + path;
    Connection c(limits_);
    HttpFailure f;
    if (!c.open(host_, port_, &f)) return unreachable(f.why);
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + (host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) +
                      ":" + port_ + "\r\nConnection: close\r\nAccept: application/json\r\nUser-Agent: profile-train\r\n";
    if (method == "POST") req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n";
    req += body;
    if (!c.send_all(req, &f)) return IoError(what + " at " + address_ + ": " + f.why);
    const int st = read_answer(c, limits_, sink, &f);
    if (st < 0) return ResourceExhausted(what + " at " + address_ + ": the answer was refused (too large or malformed)");
    if (st == 0) return IoError(what + " at " + address_ + ": " + f.why);
    return st;
  }

  // One request whose answer is kept whole, up to `max_body` bytes.
  StatusOr<Answer> call(const std::string& method, const std::string& path, const std::string& body, size_t max_body) {
    Answer a;
    bool too_large = false;
    auto st = exchange(method, path, body, [&](std::string_view d) {
      if (a.body.size() + d.size() > max_body) {
        too_large = true;
        return false;
      }
      a.body.append(d);
      return true;
    });
    if (too_large)
      return ResourceExhausted(method + " " + path + " at " + address_ + ": the answer is larger than " + mib(max_body) +
                               " (not a Ray dashboard?)");
    if (!st.ok()) return st.status();
    a.status = *st;
    return a;
  }

  Status unreachable(const std::string& why) const {
    return IoError("cannot reach the Ray dashboard at " + address_ + " (" + why +
                   "): is the cluster up and is this its dashboard address (default port 8265)?");
  }
  Status http_error(const std::string& what, const Answer& res) const {
    return IoError(what + " at " + address_ + ": HTTP " + std::to_string(res.status) + ": " + one_line(res.body));
  }

  RayHttpLimits limits_;
  std::string host_, port_;
};

}  // namespace

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string& address, const RayHttpLimits& limits) {
  auto a = normalize_ray_address(address);
  if (!a.ok()) return a.status();
  return std::unique_ptr<RayClient>(new HttpRayClient(*a, limits));
}

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string& address, double timeout_s) {
  RayHttpLimits limits;
  limits.io_timeout_s = timeout_s;
  return connect(address, limits);
}

}  // namespace profile_train::tuner
