// Issue 40's aggregate limits, second part: a request-rate limit per client address
// (--rate-limit), a minimum body rate (--min-body-rate: a byte every few seconds is cut off in
// seconds, not at --body-timeout) and a cap on response bytes waiting for clients that do not
// read (--max-unsent-bytes). Each test fails without its limit; the time bounds are far from
// the thresholds (a loaded machine is slow, never fast).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "raw_http.h"
#include "server_fixture.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::http_request;
using test::raw_request;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A blocking connection to 127.0.0.1:port from `source` (another loopback address: another
// client), with a receive timeout; `rcvbuf` > 0 shrinks the receive buffer first.
int connect_from(int port, const char* source, int rcvbuf = 0, int timeout_s = 10) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf > 0) setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  timeval tv{timeout_s, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, source, &a.sin_addr);
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return close(s), -1;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return close(s), -1;
  return s;
}

test::RawAnswer request_from(int port, const char* source, const std::string& req) {
  const int s = connect_from(port, source);
  if (s < 0) return {"connect failed", true};
  test::send_all(s, req);
  auto a = test::read_to_close(s);
  close(s);
  return a;
}

TEST(ServeSlowClients, RequestRatePerAddress) {
  auto f = test::make_files("serve_rate", 0);
  // 3 at once, then one per 100 s: the 4th request within the test's seconds is refused.
  test::ServerProc s("--pretrained " + f.weights + " --rate-limit 0.01 --rate-burst 3", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  const std::string health = http_request("GET", "/healthz", p);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(request_from(p, "127.0.0.6", health).status(), 200) << i;
  auto refused = request_from(p, "127.0.0.6", health);
  EXPECT_EQ(refused.status(), 429) << refused.text.substr(0, 300);
  EXPECT_NE(refused.text.find("Retry-After: "), std::string::npos) << refused.text.substr(0, 300);
  const int retry = std::atoi(refused.text.c_str() + refused.text.find("Retry-After: ") + 13);
  EXPECT_GE(retry, 90);  // a token per 100 s; a few seconds of the test have refilled part of one
  EXPECT_LE(retry, 100);
  EXPECT_NE(refused.body().find("--rate-limit"), std::string::npos) << refused.body();
  // Another address is not affected.
  EXPECT_EQ(request_from(p, "127.0.0.7", health).status(), 200);
}

TEST(ServeSlowClients, BodyTrickledSlowerThanTheMinimumIsCutOff) {
  auto f = test::make_files("serve_body_rate", 0);
  test::ServerProc s("--pretrained " + f.weights + " --min-body-rate 1000", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  const int c = connect_from(p, "127.0.0.8", 0, 1);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(test::send_all(c,
                             "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Content-Length: 100000\r\n\r\n{\"text\": "));
  // A byte every 0.5 s (2 bytes/s, under 1000 after the 2 s grace): the old server held the
  // connection until --body-timeout (60 s). 30 s is ten times the expected ~2 s.
  const auto t0 = Clock::now();
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos && since(t0) < 30) {
    test::send_all(c, " ");
    const ssize_t n = recv(c, buf, sizeof buf, 0);  // waits up to 1 s
    if (n > 0) got.append(buf, size_t(n));
    if (n == 0) break;
  }
  got += test::read_to_close(c).text;  // the rest of the answer (the server closes)
  close(c);
  EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
  EXPECT_LT(since(t0), 30.0);
  EXPECT_NE(got.find("--min-body-rate"), std::string::npos) << got;
  EXPECT_NE(s.log().find("serve: cut off a request body from 127.0.0.8"), std::string::npos) << s.log();
  // A body sent at once is not affected.
  const std::string body = json{{"text", "a normal request"}}.dump();
  EXPECT_EQ(
      raw_request(p, http_request("POST", "/v1/embed/text", p, "Content-Type: application/json\r\n", body)).status(),
      200);
}

TEST(ServeSlowClients, ClientsThatDoNotReadAreCutOffWhenUnsentBytesAreFull) {
  auto f = test::make_files("serve_unsent", 1);
  Rng rng(7);
  fs::write_atomic(f.dir + "/img/zz_big.png", test::random_png(rng, 1600, 1600));  // 5-8 MB of noise: id 1
  const size_t big = size_t(fs::file_size(f.dir + "/img/zz_big.png"));
  ASSERT_FALSE(test::build_index(f).empty());
  // Less than one 64 KiB window of a streamed file: a second response goes out only once the
  // first has no byte waiting (a response always goes out when nothing else waits).
  test::ServerProc s("--pretrained " + f.weights + " --index " + f.dir + "/idx --max-unsent-bytes 60000",
                     f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  // A asks for the big image and reads nothing (a 4 KB receive buffer: the kernel's buffers
  // fill long before the image is sent, and the server's window stays unsent; the old server held the whole response).
  const int a = connect_from(p, "127.0.0.9", 4096, 10);
  ASSERT_GE(a, 0);
  ASSERT_TRUE(test::send_all(a, http_request("GET", "/v1/images/1", p)));
  char head[16] = {};
  ASSERT_EQ(recv(a, head, 12, MSG_WAITALL), 12);  // its answer has started (then A reads no more)
  ASSERT_EQ(std::string(head, 12), "HTTP/1.1 200");
  // B wants it too: refused with 503 while A's bytes wait and A has not stalled for 2 s; then A is closed to make room
  // and B is served. The old server kept A's bytes until the 60 s write deadline and let the cap grow without bound.
  const auto t0 = Clock::now();
  int status = 0;
  size_t b_bytes = 0;
  while (status != 200 && since(t0) < 30) {
    auto b = raw_request(p, http_request("GET", "/v1/images/1", p));
    status = b.status();
    b_bytes = b.text.size();
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_EQ(status, 200);
  EXPECT_GT(b_bytes, big);
  EXPECT_NE(s.log().find("serve: closed a connection from 127.0.0.9: its client read none of its response"),
            std::string::npos)
      << s.log();
  // A, reading now, finds its response cut short (the old server would send it all).
  auto rest = test::read_to_close(a);
  close(a);
  EXPECT_LT(rest.text.size(), big);
}

}  // namespace
}  // namespace oc
