// Internal to the Ray client (ray_client.cpp): one HTTP request's socket with its deadline, the answer reader
// (ray_http.cpp) and the streaming decoder of a job's log. Not part of the client's API (ray_client.h).
#pragma once

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
#include <string>
#include <string_view>

#include "profile_train/tuner/ray_client.h"

namespace profile_train::tuner::ray_http {

using Clock = std::chrono::steady_clock;

inline std::string mib(size_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

inline std::string secs(double s) {
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t + " s";
}

// The last line of a body, trimmed to something printable on one line.
inline std::string one_line(std::string text) {
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
int read_answer(Connection& c, const RayHttpLimits& limits, const BodySink& sink, HttpFailure* f);

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

}  // namespace profile_train::tuner::ray_http
