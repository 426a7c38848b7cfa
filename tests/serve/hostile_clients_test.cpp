// Issue 40 (items 1, 4, 5, 10) and issue 42 (items 5, 14, 15): the aggregate limits of
// `openclip serve` against cheap clients. During each attack the server keeps answering
// /healthz and a normal request within 2 s (milliseconds when idle: the margin is for a
// loaded machine), and its peak RSS stays under the stated bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "raw_http.h"
#include "server_fixture.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::http_request;
using test::raw_request;
using Clock = std::chrono::steady_clock;

const std::string kJson = "Content-Type: application/json\r\n";
const std::string kText = json{{"text", "a normal request"}}.dump();

// A connection to 127.0.0.1:port from `source` (another loopback address: another client).
int connect_from(int port, const char* source) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, source, &a.sin_addr);
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return close(s), -1;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return close(s), -1;
  return s;
}

// VmHWM (peak RSS) of a process in MiB.
double peak_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  return -1;
}

// /healthz and one text embedding, each answered 200 within 2 s.
void expect_served(int port) {
  for (const auto& req :
       {http_request("GET", "/healthz", port), http_request("POST", "/v1/embed/text", port, kJson, kText)}) {
    const auto t0 = Clock::now();
    auto a = raw_request(port, req, false, 10);
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_EQ(a.status(), 200) << a.text.substr(0, 300);
    EXPECT_LT(took, 2.0) << req.substr(0, 30);
  }
}

TEST(ServeHostile, OneAddressCannotHoldEveryConnection) {
  auto f = test::make_files("serve_per_client", 0);
  test::ServerProc s("--pretrained " + f.weights + " --max-connections 64 --max-connections-per-client 8",
                     f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  // 64 connections from 127.0.0.2, each holding its slot with a header byte: the old server
  // gave every other client 503 for as long as they lasted.
  std::vector<int> held;
  for (int i = 0; i < 64; ++i) {
    held.push_back(connect_from(p, "127.0.0.2"));
    ASSERT_GE(held.back(), 0);
    test::send_all(held.back(), "G");
  }
  expect_served(p);  // from 127.0.0.1, accepted after the 64 (the listen queue is in order)
  int refused = 0;
  for (int fd : held) {
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    refused += n > 12 && std::string(buf, size_t(n)).rfind("HTTP/1.1 429 ", 0) == 0;
    close(fd);
  }
  EXPECT_EQ(refused, 56);  // all but the address's 8
}

TEST(ServeHostile, AnnouncedBodiesReserveNothing) {
  auto f = test::make_files("serve_body_budget", 0);
  test::ServerProc s("--pretrained " + f.weights + " --max-body-bytes 4000000 --max-buffered-body 4194304",
                     f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  const double base = peak_mib(s.pid());
  // 32 headers announcing 4 MB bodies (128 MB over a 4 MiB budget), none sent: the old server
  // reserved the budget from the headers and refused every other body with 503.
  std::vector<int> held;
  for (int i = 0; i < 32; ++i) {
    held.push_back(connect_from(p, i % 2 ? "127.0.0.3" : "127.0.0.4"));
    test::send_all(held.back(), "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\n" + kJson +
                                    "Content-Length: 4000000\r\n\r\n{\"text\": ");
  }
  expect_served(p);
  // Bodies that do arrive are charged as they arrive: two bodies of 3.9 MB (each one byte
  // short) cannot both be held under 4 MiB; the one that crosses the budget (either: the
  // I/O thread reads both as their bytes come) gets the 503 that says what is full.
  const int a = test::connect_local(p, 10), b = test::connect_local(p, 10);
  const std::string head =
      "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\n" + kJson + "Content-Length: 3900000\r\n\r\n";
  std::thread ta([&] { test::send_all(a, head + std::string(3899999, ' ')); });
  std::thread tb([&] { test::send_all(b, head + std::string(3899999, ' ')); });
  pollfd pf[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  ASSERT_EQ(poll(pf, 2, 20000), 1);  // one answer; the other body is still one byte short
  auto got = test::read_to_close(pf[0].revents ? a : b);
  EXPECT_EQ(got.status(), 503) << got.text.substr(0, 300);
  EXPECT_NE(got.text.find("memory for request bodies (--max-buffered-body)"), std::string::npos) << got.text;
  shutdown(a, SHUT_RDWR), shutdown(b, SHUT_RDWR);
  ta.join(), tb.join();
  // Bound: the baseline (model, runtime) plus two bodies of at most 3.9 MB (growth stops at
  // Content-Length) and 34 read buffers of up to 256 KB: 40 MiB covers it.
  EXPECT_LT(peak_mib(s.pid()) - base, 40.0);
  close(a), close(b);
  for (int fd : held) close(fd);
}

TEST(ServeHostile, HalfCloseAtBufferBoundariesIsStillAnswered) {
  auto f = test::make_files("serve_half_close", 0);
  test::ServerProc s("--pretrained " + f.weights, f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  for (size_t total : {size_t(65536), size_t(131072), size_t(196608), size_t(65535), size_t(65537)}) {
    std::string req = http_request("POST", "/v1/embed/text", p, kJson, std::string(total, ' '));
    const size_t overhead = req.size() - total;  // the body pads the request to `total` bytes
    std::string body = kText + std::string(total - overhead - kText.size(), ' ');
    req = http_request("POST", "/v1/embed/text", p, kJson, body);
    while (req.size() != total) {  // Content-Length's digit count may shift it by one
      body.pop_back();
      req = http_request("POST", "/v1/embed/text", p, kJson, body);
    }
    auto a = raw_request(p, req, /*half_close=*/true, 10);
    EXPECT_EQ(a.status(), 200) << total << ": " << a.text.substr(0, 200);
  }
}

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i == 14 || i == 15) ticks += std::stod(field);
  return ticks / double(sysconf(_SC_CLK_TCK));
}

TEST(ServeHostile, OutOfDescriptorsTheServerKeepsServingAndStops) {
  auto f = test::make_files("serve_emfile", 0);
  rlimit old{};
  getrlimit(RLIMIT_NOFILE, &old);
  rlimit low = old;
  low.rlim_cur = 128;  // the server inherits it; ~20 are its own
  setrlimit(RLIMIT_NOFILE, &low);
  test::ServerProc s("--pretrained " + f.weights + " --max-connections-per-client 1000", f.dir + "/log");
  setrlimit(RLIMIT_NOFILE, &old);
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  const int keep = test::connect_local(p, 5);  // a client connected before the flood
  // 200 connections that are replaced as the server closes them (the client): the
  // old accept loop refused them one by one for ever, at 100% CPU, and never saw SIGTERM.
  std::atomic<bool> done{false};
  std::thread flood([&] {
    std::vector<int> fds(200, -1);
    while (!done) {
      for (int& fd : fds) {
        char c;
        if (fd >= 0 && recv(fd, &c, 1, MSG_DONTWAIT) == 0) close(fd), fd = -1;
        if (fd < 0) fd = connect_from(p, "127.0.0.5");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int fd : fds)
      if (fd >= 0) close(fd);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double cpu0 = cpu_seconds(s.pid());
  for (int i = 0; i < 3; ++i) {  // the connected client is served throughout
    const auto t0 = Clock::now();
    ASSERT_TRUE(test::send_all(keep, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    std::string got;
    char buf[4096];
    for (ssize_t n; got.find("\"status\"") == std::string::npos && (n = recv(keep, buf, sizeof buf, 0)) > 0;)
      got.append(buf, size_t(n));
    EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  const double cpu = cpu_seconds(s.pid()) - cpu0;
  // About 1 s: the spinning loop used a full core; now a refusal per 100 ms pause. 0.5 s
  // leaves room for a loaded machine's accounting.
  EXPECT_LT(cpu, 0.5);
  s.signal(SIGTERM);  // handled under the flood: a clean exit, not the fixture's SIGKILL
  EXPECT_EQ(s.stop(), 0) << s.log().substr(0, 2000);
  done = true;
  flood.join();
  close(keep);
}

TEST(ServeHostile, FilesOutsideTheRootsOrNotImagesAreNotServed) {
  auto f = test::make_files("serve_links", 3);
  ASSERT_FALSE(test::build_index(f).empty());
  fs::write_atomic(f.dir + "/secret.txt", std::string("root:x:0:0:secret"));
  // After the build: image 0 becomes a link to a file outside the folder, image 1 a text file.
  ASSERT_EQ(::unlink(f.images[0].c_str()), 0);
  ASSERT_EQ(::symlink((f.dir + "/secret.txt").c_str(), f.images[0].c_str()), 0);
  fs::write_atomic(f.images[1], std::string("root:x:0:0:secret"));
  test::ServerProc s("--pretrained " + f.weights + " --index " + f.dir + "/idx", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  for (int id : {0, 1}) {
    auto a = raw_request(p, http_request("GET", "/v1/images/" + std::to_string(id), p));
    EXPECT_EQ(a.status(), 404) << a.text.substr(0, 300);
    EXPECT_EQ(a.text.find("secret"), std::string::npos) << a.text.substr(0, 300);
  }
  auto ok = raw_request(p, http_request("GET", "/v1/images/2", p));
  EXPECT_EQ(ok.status(), 200);
  EXPECT_NE(ok.text.find("Content-Type: image/png"), std::string::npos) << ok.text.substr(0, 300);
  // Cut short in place after it was served (the first answer's check is not reused for the
  // changed file): its first bytes still say PNG, the whole file no longer decodes.
  ASSERT_EQ(truncate(f.images[2].c_str(), off_t(fs::file_size(f.images[2]) / 2)), 0);
  auto cut = raw_request(p, http_request("GET", "/v1/images/2", p));
  EXPECT_EQ(cut.status(), 404) << cut.text.substr(0, 300);
  EXPECT_NE(cut.body().find("does not decode: PNG"), std::string::npos) << cut.body();
}

TEST(ServeHostile, KeyFileCapAuthSchemeHostAndProxyOrigin) {
  auto f = test::make_files("serve_access2", 0);
  // A 1 GiB sparse key file is refused at once (it was read whole: 3.2 GB).
  {
    std::ofstream big(f.dir + "/bigkey");
    big << "k\n";
  }
  ASSERT_EQ(truncate((f.dir + "/bigkey").c_str(), off_t(1) << 30), 0);
  auto r = test::run(test::openclip() + " serve --model test-tiny --pretrained " + f.weights +
                     " --port 0 --api-key-file " + f.dir + "/bigkey");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("the 4 KiB API key file cap"), std::string::npos) << r.out;
  fs::write_atomic(f.dir + "/key", std::string("s3cret\n"));
  test::ServerProc s("--pretrained " + f.weights + " --api-key-file " + f.dir + "/key", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  auto status = [&](const std::string& req) { return raw_request(p, req).status(); };
  const std::string body = kText, len = "Content-Length: " + std::to_string(body.size()) + "\r\n";
  // The scheme is case-insensitive (RFC 9110); the key is not.
  EXPECT_EQ(status(http_request("POST", "/v1/embed/text", p, kJson + "Authorization: bearer s3cret\r\n", body)), 200);
  EXPECT_EQ(status(http_request("POST", "/v1/embed/text", p, kJson + "Authorization: BEARER s3cret\r\n", body)), 200);
  EXPECT_EQ(status(http_request("POST", "/v1/embed/text", p, kJson + "Authorization: Bearer S3cret\r\n", body)), 401);
  // HTTP/1.0 with a foreign Host is refused as 1.1 is; without a Host it is served.
  auto a10 = raw_request(p, "GET /healthz HTTP/1.0\r\nHost: attacker.example\r\n\r\n");
  EXPECT_NE(a10.text.find(" 403 "), std::string::npos) << a10.text.substr(0, 200);
  auto b10 = raw_request(p, "GET /healthz HTTP/1.0\r\n\r\n");
  EXPECT_NE(b10.text.find(" 200 "), std::string::npos) << b10.text.substr(0, 200);
  // The page's own requests behind a TLS proxy carry Origin: https://HOST.
  const std::string key = "Authorization: Bearer s3cret\r\n";
  EXPECT_EQ(status(http_request("POST", "/v1/embed/text", p,
                                kJson + key + "Origin: https://127.0.0.1:" + std::to_string(p) + "\r\n", body)),
            200);
  EXPECT_EQ(
      status(http_request("POST", "/v1/embed/text", p, kJson + key + "Origin: https://attacker.example\r\n", body)),
      403);
}

}  // namespace
}  // namespace oc
