// A Hugging Face hub on 127.0.0.1 for the download tests: raw sockets (so that a test can make
// it lie), serving repositories' files as the hub does: HEAD and GET of
// /<org>/<name>/resolve/<revision>/<file> with X-Repo-Commit, ETag/X-Linked-Etag (SHA-256 of
// the file, "LFS"), X-Linked-Size, Range requests (206). `behave` lets a test change an answer.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "hub/hash.h"

namespace oc::test {

struct HubRequest {
  std::string method, path, range, authorization;
};

class FakeHub {
 public:
  // A hook that may answer a request itself (writing the raw response to fd); true = answered.
  using Behave = std::function<bool(const HubRequest&, int fd)>;
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  std::map<std::string, std::string> files;  // "org/name/file" -> content
  Behave behave;
  std::atomic<int> gets{0}, heads{0};
  std::atomic<int64_t> cut_after{-1};     // > 0: the next GET body stops after this many bytes (a dropped connection)
  std::atomic<bool> ignore_range{false};  // answer Range requests with the whole file (200), as some servers do

  FakeHub() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 64);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeHub() { stop(); }
  void stop() {
    if (fd_ < 0) return;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    fd_ = -1;
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  static bool send_all(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return true;
  }
  static std::string sha256(const std::string& s) {
    hub::Digest d(hub::Digest::Kind::Sha256);
    d.update({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
    return d.hex();
  }

 private:
  int fd_ = -1, port_ = 0;
  std::thread thread_;

  void loop() {
    for (;;) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      serve(c);
      ::close(c);
    }
  }

  static std::string header(const std::string& head, const std::string& name) {
    std::string low = head;
    for (char& ch : low) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    const size_t p = low.find("\r\n" + name + ":");
    if (p == std::string::npos) return "";
    size_t b = p + 3 + name.size();
    while (b < head.size() && head[b] == ' ') ++b;
    return head.substr(b, head.find("\r\n", b) - b);
  }

  void serve(int c) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      head.append(buf, size_t(n));
    }
    HubRequest r;
    r.method = head.substr(0, head.find(' '));
    r.path = head.substr(r.method.size() + 1, head.find(' ', r.method.size() + 1) - r.method.size() - 1);
    r.range = header(head, "range");
    r.authorization = header(head, "authorization");
    (r.method == "HEAD" ? heads : gets)++;
    if (behave && behave(r, c)) return;
    if (ignore_range) r.range.clear();
    answer(r, c);
  }

  void answer(const HubRequest& r, int c) {
    // /org/name/resolve/rev/file
    const size_t res = r.path.find("/resolve/");
    std::string key;
    if (res != std::string::npos) {
      const std::string repo = r.path.substr(1, res - 1), rest = r.path.substr(res + 9);
      key = repo + "/" + rest.substr(rest.find('/') + 1);
    }
    auto it = files.find(key);
    if (it == files.end()) {
      send_all(
          c, "HTTP/1.1 404 Not Found\r\nX-Error-Code: EntryNotFound\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const std::string& body = it->second;
    int64_t from = 0;
    if (!r.range.empty()) from = std::stoll(r.range.substr(r.range.find('=') + 1));
    const std::string part = body.substr(size_t(std::min<int64_t>(from, int64_t(body.size()))));
    std::string h = std::string(from > 0 ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n") +
                    "X-Repo-Commit: " + commit + "\r\nETag: \"" + sha256(body) +
                    "\"\r\nX-Linked-Size: " + std::to_string(body.size()) +
                    "\r\nContent-Length: " + std::to_string(part.size()) + "\r\nConnection: close\r\n";
    if (from > 0)
      h += "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(body.size() - 1) + "/" +
           std::to_string(body.size()) + "\r\n";
    h += "\r\n";
    if (r.method == "HEAD") {
      send_all(c, h);
      return;
    }
    const int64_t cut = cut_after.exchange(-1);
    send_all(c, h + (cut > 0 ? part.substr(0, size_t(cut)) : part));
  }
};

}  // namespace oc::test
