// Raw-socket HTTP for the server tests: requests httplib's client will not send (huge
// request lines, chunked or gzip bodies, many ranges, slow clients) and a status-only view
// of the answer. Blocking sockets with receive timeouts; nothing here races on time.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace oc::test {

// A connected socket to 127.0.0.1:port with a receive timeout, or -1.
inline int connect_local(int port, int recv_timeout_s = 30) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return close(s), -1;
  timeval tv{recv_timeout_s, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return s;
}

inline bool send_all(int s, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

struct RawAnswer {
  std::string text;   // what arrived before the close (or the timeout)
  bool reset = false;  // a connection error (reset) instead of an orderly close
  // The final response, after any interim 1xx (the server sends `100 Continue` to a client
  // that half-closes while its request waits: a client that left answers with a reset).
  size_t final_at() const {
    size_t at = 0;
    while (text.compare(at, 10, "HTTP/1.1 1") == 0 && text.find("\r\n\r\n", at) != std::string::npos)
      at = text.find("\r\n\r\n", at) + 4;
    return at;
  }
  int status() const {
    const size_t at = final_at();
    return text.compare(at, 9, "HTTP/1.1 ") == 0 ? std::atoi(text.c_str() + at + 9) : -1;
  }
  std::string body() const {
    const size_t p = text.find("\r\n\r\n", final_at());
    return p == std::string::npos ? "" : text.substr(p + 4);
  }
};

inline RawAnswer read_to_close(int s) {
  RawAnswer a;
  char buf[65536];
  ssize_t n;
  while ((n = recv(s, buf, sizeof buf, 0)) > 0) a.text.append(buf, size_t(n));
  a.reset = n < 0;
  return a;
}

// Sends the bytes (then half-closes when asked) and reads until the server closes.
inline RawAnswer raw_request(int port, std::string_view bytes, bool half_close = false, int timeout_s = 30) {
  const int s = connect_local(port, timeout_s);
  if (s < 0) return {"connect failed", true};
  RawAnswer a;
  if (!send_all(s, bytes)) a.reset = true;
  if (half_close) shutdown(s, SHUT_WR);
  RawAnswer r = read_to_close(s);
  close(s);
  r.reset = r.reset || (a.reset && r.text.empty());
  return r;
}

// A complete request with `Connection: close` (so the answer ends with the connection).
inline std::string http_request(const std::string& method, const std::string& target, int port, const std::string& extra_headers = "",
                                const std::string& body = "", const std::string& host = "") {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: " + (host.empty() ? "127.0.0.1:" + std::to_string(port) : host) +
                  "\r\nConnection: close\r\n" + extra_headers;
  if (!body.empty() || method == "POST") r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

}  // namespace oc::test
