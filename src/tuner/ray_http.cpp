// Reading one HTTP answer from the Ray dashboard: status line, headers, body (Content-Length, chunked or to the
// end of the connection) within the request's limits (ray_http.h).
#include "ray_http.h"

namespace profile_train::tuner::ray_http {

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

}  // namespace profile_train::tuner::ray_http
