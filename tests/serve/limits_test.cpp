// `openclip serve` against hostile clients: body limits whatever the framing (chunked,
// gzip), the per-request pixel budget, at most one range, request line and header caps,
// deadlines that a slow client cannot stretch, a burst answered with 503s instead of resets,
// idle connections that cost no CPU, and a SIGTERM drain that slow clients cannot hold up.
// Where a bound in time is tested, the comment gives its margin: the machine may be loaded.
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/base64.h"
#include "image/codec.h"
#include "raw_http.h"
#include "server_fixture.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::http_request;
using test::raw_request;
using test::RawAnswer;
using Clock = std::chrono::steady_clock;

const std::string kJson = "Content-Type: application/json\r\n";

void expect_json_error(const RawAnswer& a, int status, const std::string& needle = "") {
  ASSERT_FALSE(a.reset) << a.text.substr(0, 300);
  ASSERT_EQ(a.status(), status) << a.text.substr(0, 300);
  auto j = json::parse(a.body(), nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << a.text.substr(0, 300);
  EXPECT_EQ(j["error"]["code"], status);
  EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos) << a.body();
}

std::string text_body(const std::string& t) { return json{{"text", t}}.dump(); }

// A gzip stream of n zero bytes, compressed piecewise (deflate's limit: about 1 KB per MB).
std::string gzip_zeros(size_t n) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY);
  std::vector<uint8_t> in(1 << 20, 0);
  std::string out;
  std::vector<uint8_t> buf(1 << 16);
  for (size_t left = n; left > 0 || z.avail_in > 0;) {
    if (z.avail_in == 0) z.next_in = in.data(), z.avail_in = uInt(std::min(left, in.size())), left -= z.avail_in;
    z.next_out = buf.data(), z.avail_out = uInt(buf.size());
    deflate(&z, Z_NO_FLUSH);
    out.append(reinterpret_cast<char*>(buf.data()), buf.size() - z.avail_out);
  }
  for (int r = Z_OK; r != Z_STREAM_END;) {
    z.next_out = buf.data(), z.avail_out = uInt(buf.size());
    r = deflate(&z, Z_FINISH);
    out.append(reinterpret_cast<char*>(buf.data()), buf.size() - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

std::string chunked(const std::string& body, size_t chunk) {
  std::string out;
  for (size_t i = 0; i < body.size(); i += chunk) {
    const size_t n = std::min(chunk, body.size() - i);
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", n);
    out += hex + body.substr(i, n) + "\r\n";
  }
  return out + "0\r\n\r\n";
}

std::string chunked_post(int port, const std::string& body, size_t chunk) {
  return "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n" + kJson +
         "Transfer-Encoding: chunked\r\n\r\n" + chunked(body, chunk);
}

TEST(ServeLimits, BodyLimitHoldsWhateverTheFraming) {
  auto f = test::make_files("serve_body", 0);
  test::ServerProc s("--pretrained " + f.weights + " --max-body-bytes 100000", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  // 51 KB of gzip that inflates to 50 MB: refused from its headers, nothing inflated.
  const std::string gz = gzip_zeros(50u << 20);
  ASSERT_LT(gz.size(), 100000u);
  expect_json_error(raw_request(p, http_request("POST", "/v1/embed/text", p, kJson + "Content-Encoding: gzip\r\n", gz)), 415,
                    "Content-Encoding");
  // 300 KB chunked, in 4 KiB chunks and as one chunk: 413 at the 100,000th byte / the size line.
  const std::string big = text_body(std::string(300000, 'a'));
  expect_json_error(raw_request(p, chunked_post(p, big, 4096)), 413, "over the limit");
  expect_json_error(raw_request(p, chunked_post(p, big, big.size())), 413, "over the limit");
  // Content-Length over the limit: 413 before any of the body is read.
  expect_json_error(raw_request(p, "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\n" + kJson + "Content-Length: 200000000\r\n\r\n"),
                    413, "over the limit");
  // Both framings at once (request smuggling) and unknown transfer codings are refused.
  expect_json_error(raw_request(p, "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 400);
  expect_json_error(raw_request(p, "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 501);
  // A POST without a length has no body: answered at once (400), not after a read timeout.
  expect_json_error(raw_request(p, "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + kJson + "\r\n"), 400,
                    "not valid JSON");
  // Expect: 100-continue (curl sends it for bodies over 1 KB): the interim answer, then the body.
  const int fd = test::connect_local(p);
  const std::string body = text_body("continue");
  ASSERT_TRUE(test::send_all(fd, "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + kJson +
                                     "Expect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  char interim[25];
  ASSERT_EQ(recv(fd, interim, sizeof interim, MSG_WAITALL), 25);
  EXPECT_EQ(std::string(interim, 25), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(test::send_all(fd, body));
  EXPECT_EQ(test::read_to_close(fd).status(), 200);
  close(fd);
  // A chunked body within the limit is served.
  auto ok = raw_request(p, chunked_post(p, text_body("a chunked request"), 5));
  ASSERT_EQ(ok.status(), 200) << ok.text;
  EXPECT_EQ(json::parse(ok.body())["embeddings"].size(), 1u);
}

TEST(ServeLimits, PixelBudgetIsPerRequest) {
  auto f = test::make_files("serve_pixels", 0);
  ImageU8 img{900, 900, std::vector<uint8_t>(900 * 900 * 3, 128)};
  auto webp = encode_image(img, ImageFormat::Webp, 50);
  ASSERT_TRUE(webp.ok()) << webp.error();
  const std::string b64 = base64_encode(webp.value());
  // 810,000 pixels each: under the per-image limit, 16 of them far over the request's budget.
  test::ServerProc s("--pretrained " + f.weights + " --max-image-pixels 1000000 --max-request-pixels 3000000", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  auto many = raw_request(p, http_request("POST", "/v1/embed/image", p, kJson, json{{"images", std::vector<std::string>(16, b64)}}.dump()));
  expect_json_error(many, 413, "image 3 would take the request over its budget of 3000000 decoded pixels");
  auto three = raw_request(p, http_request("POST", "/v1/embed/image", p, kJson, json{{"images", std::vector<std::string>(3, b64)}}.dump()));
  ASSERT_EQ(three.status(), 200) << three.text.substr(0, 300);
  EXPECT_EQ(json::parse(three.body())["embeddings"].size(), 3u);
  const std::string texts = json{{"texts", std::vector<std::string>(100, std::string(4000, 'a'))}}.dump();
  expect_json_error(raw_request(p, http_request("POST", "/v1/embed/text", p, kJson, texts)), 413, "budget of 262144 bytes");
}

// Issue 40, item 8: a request's images are held as uint8 after resize and crop (S x S x 3
// bytes), not as floats (4x that), until the batcher's forward pass. test-tiny's S is 32:
// 16 images are 49,152 bytes as uint8 and 196,608 as floats; a 100,000-byte budget holds the
// first and refused the second with 503.
TEST(ServeLimits, PreprocessedImagesAreHeldAsBytesUntilTheBatch) {
  auto f = test::make_files("serve_uint8", 1);
  const std::string png = fs::read_text(f.images[0]).value();
  const std::string b64 = base64_encode({reinterpret_cast<const uint8_t*>(png.data()), png.size()});
  test::ServerProc s("--pretrained " + f.weights + " --max-inputs 16 --max-buffered-body 100000", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  auto one = raw_request(p, http_request("POST", "/v1/embed/image", p, kJson, json{{"image", b64}}.dump()));
  ASSERT_EQ(one.status(), 200) << one.text.substr(0, 300);
  auto all = raw_request(
      p, http_request("POST", "/v1/embed/image", p, kJson, json{{"images", std::vector<std::string>(16, b64)}}.dump()));
  ASSERT_EQ(all.status(), 200) << all.text.substr(0, 300);
  const auto rows = json::parse(all.body())["embeddings"];
  ASSERT_EQ(rows.size(), 16u);
  // The same image alone or in a pass of 16: equal within oneDNN's blocking (about 1e-7,
  // docs/SERVE.md "Dynamic batching"); a wrong row or channel order would differ by O(1).
  const auto want = json::parse(one.body())["embeddings"][0].get<std::vector<float>>();
  for (auto& r : rows) {
    const auto got = r.get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  }
}

TEST(ServeLimits, OneRangeAtMostAndImageIdsChecked) {
  auto f = test::make_files("serve_range", 2);
  ASSERT_FALSE(test::build_index(f).empty());
  test::ServerProc s("--pretrained " + f.weights + " --index " + f.dir + "/idx", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  auto whole = raw_request(p, http_request("GET", "/v1/images/0", p));
  ASSERT_EQ(whole.status(), 200) << whole.text.substr(0, 300);
  const std::string file = whole.body();
  ASSERT_GT(file.size(), 100u);
  // 200 overlapping ranges: the whole file once, not a 200-part answer.
  std::string ranges = "Range: bytes=0-";
  for (int i = 1; i < 200; ++i) ranges += ",0-";
  auto many = raw_request(p, http_request("GET", "/v1/images/0", p, ranges + "\r\n"));
  ASSERT_EQ(many.status(), 200) << many.text.substr(0, 300);
  EXPECT_EQ(many.body(), file);
  auto one = raw_request(p, http_request("GET", "/v1/images/0", p, "Range: bytes=2-5\r\n"));
  ASSERT_EQ(one.status(), 206) << one.text.substr(0, 300);
  EXPECT_EQ(one.body(), file.substr(2, 4));
  EXPECT_NE(one.text.find("Content-Range: bytes 2-5/" + std::to_string(file.size())), std::string::npos) << one.text;
  auto tail = raw_request(p, http_request("GET", "/v1/images/0", p, "Range: bytes=-3\r\n"));
  EXPECT_EQ(tail.body(), file.substr(file.size() - 3));
  expect_json_error(raw_request(p, http_request("GET", "/v1/images/0", p, "Range: bytes=" + std::to_string(file.size()) + "-\r\n")), 416);
  // Ids: 20 digits, past the end, not a number: 404 with no internal text.
  auto huge = raw_request(p, http_request("GET", "/v1/images/12345678901234567890", p));
  expect_json_error(huge, 404, "no image");
  EXPECT_EQ(huge.text.find("EXCEPTION"), std::string::npos) << huge.text;
  expect_json_error(raw_request(p, http_request("GET", "/v1/images/2", p)), 404, "no image 2");
  expect_json_error(raw_request(p, http_request("GET", "/v1/images/1x", p)), 404);
}

TEST(ServeLimits, RequestLineAndHeaderCaps) {
  auto f = test::make_files("serve_caps", 0);
  test::ServerProc s("--pretrained " + f.weights, f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  expect_json_error(raw_request(p, "GET /" + std::string(1 << 20, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 414);
  expect_json_error(raw_request(p, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(100000, 'b') + "\r\n\r\n"), 431);
  std::string many = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 200; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  expect_json_error(raw_request(p, many + "\r\n"), 431, "headers");
  expect_json_error(raw_request(p, "GET /healthz HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n"), 505);
  EXPECT_EQ(raw_request(p, http_request("GET", "/healthz", p)).status(), 200);
}

TEST(ServeLimits, ConnectionsOverTheCapGet503AtOnce) {
  auto f = test::make_files("serve_conns", 0);
  test::ServerProc s("--pretrained " + f.weights + " --max-connections 5 --header-timeout 120", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  std::vector<int> held;
  for (int i = 0; i < 5; ++i) {  // five connections in the middle of their headers
    held.push_back(test::connect_local(p));
    ASSERT_TRUE(test::send_all(held.back(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  }
  // The listen queue is served in order, so the sixth is accepted after the five.
  expect_json_error(raw_request(p, http_request("GET", "/healthz", p)), 503, "too many connections");
  for (int fd : held) close(fd);
  // The server sees the five closes in some order relative to the next connect: retry until
  // it is served (within milliseconds; 20 s bounds a loaded machine).
  int status = 0;
  for (auto end = Clock::now() + std::chrono::seconds(20); status != 200 && Clock::now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds(50)))
    status = raw_request(p, http_request("GET", "/healthz", p)).status();
  EXPECT_EQ(status, 200);
}

// Slow clients: one non-blocking socket each, fed a byte at a time by the test thread.
struct SlowClients {
  std::vector<int> fds;
  std::vector<std::string> got;
  SlowClients(int port, int n) {
    for (int i = 0; i < n; ++i) {
      fds.push_back(test::connect_local(port, 5));
      got.emplace_back();
      test::send_all(fds.back(), "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    }
  }
  ~SlowClients() {
    for (int fd : fds) close(fd);
  }
  // One byte to every client not yet answered; collects what the server sent. Returns how
  // many have been answered and closed.
  int tick() {
    int done = 0;
    for (size_t i = 0; i < fds.size(); ++i) {
      pollfd pf{fds[i], POLLIN, 0};
      if (poll(&pf, 1, 0) == 1) {
        char buf[4096];
        const ssize_t n = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) got[i].append(buf, size_t(n));
        if (n == 0 || (n < 0 && errno != EAGAIN)) got[i] += "<closed>";
      }
      if (got[i].find("<closed>") != std::string::npos) ++done;
      else if (got[i].empty()) send(fds[i], "a", 1, MSG_NOSIGNAL);
    }
    return done;
  }
};

TEST(ServeLimits, SlowlorisOf200ConnectionsDoesNotStopService) {
  auto f = test::make_files("serve_slowloris", 0);
  test::ServerProc s("--pretrained " + f.weights + " --header-timeout 10 --max-connections-per-client 1000",
                     f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  SlowClients slow(s.port(), 200);
  for (int fd : slow.fds) ASSERT_GE(fd, 0);
  const auto t0 = Clock::now();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/embed/text", text_body("served while 200 clients dribble"), "application/json");
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : httplib::to_string(r.error()));
  // Served in milliseconds when the machine is idle; 5 s is the margin for a loaded one. The
  // old server (128 threads, 10 s per read) answered nothing while the slow clients lasted.
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(slow.tick(), 0) << "the slow clients were still open while the request was served";
  // Each slow client gets 408 at its header deadline (10 s after it connected), whatever its
  // pace: a byte every 200 ms never extends it. 40 s bounds the wait on a loaded machine.
  int done = 0;
  for (auto end = Clock::now() + std::chrono::seconds(40); Clock::now() < end && done < 200;) {
    done = slow.tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(done, 200);
  int timeouts = 0;
  for (auto& g : slow.got) timeouts += g.rfind("HTTP/1.1 408 ", 0) == 0;
  EXPECT_EQ(timeouts, 200) << slow.got[0];
}

TEST(ServeLimits, BurstOf300GetsAnswersNotResets) {
  auto f = test::make_files("serve_burst", 0);
  // Default --max-queue (256) and --http-threads (128). A batch of 512 never fills from 256
  // queued requests, so the first pass waits the whole --max-wait-ms: for those 8 s every
  // admitted request is still waiting, and the 300 clients (connected in well under a
  // second, even on a loaded machine) meet a full queue: exactly 44 get 503.
  test::ServerProc s(
      "--pretrained " + f.weights + " --max-batch 512 --max-wait-ms 8000 --max-connections-per-client 1000",
      f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  std::vector<RawAnswer> answers(300);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < answers.size(); ++i)
    clients.emplace_back([&, i] {
      answers[i] = raw_request(p, http_request("POST", "/v1/embed/text", p, kJson, text_body("burst " + std::to_string(i))), false, 120);
    });
  for (auto& t : clients) t.join();
  int ok = 0, busy = 0;
  for (auto& a : answers) {
    ok += a.status() == 200;
    busy += a.status() == 503;
    if (a.status() != 200 && a.status() != 503) ADD_FAILURE() << (a.reset ? "reset: " : "") << a.text.substr(0, 200);
    if (a.status() == 503) {
      EXPECT_NE(a.text.find("Retry-After: 1\r\n"), std::string::npos) << a.text;
    }
  }
  EXPECT_EQ(ok, 256);
  EXPECT_EQ(busy, 44);
}

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  return ticks / double(sysconf(_SC_CLK_TCK));
}

TEST(ServeLimits, IdleKeepAliveConnectionsCostNoCpu) {
  auto f = test::make_files("serve_idle", 0);
  test::ServerProc s("--pretrained " + f.weights, f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  std::vector<int> fds;
  for (int i = 0; i < 120; ++i) {  // 120 keep-alive connections, each after one answered request
    fds.push_back(test::connect_local(s.port(), 30));
    ASSERT_TRUE(test::send_all(fds.back(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    std::string got;
    char buf[4096];
    for (ssize_t n; got.find("\"status\"") == std::string::npos && (n = recv(fds.back(), buf, sizeof buf, 0)) > 0;)
      got.append(buf, size_t(n));
    ASSERT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  }
  const double before = cpu_seconds(s.pid());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double used = cpu_seconds(s.pid()) - before;
  // httplib's 1 ms polling used about 0.9 s of CPU in 3 s for this; an epoll wait uses
  // about nothing. 0.3 s leaves room for a loaded machine's accounting.
  EXPECT_LT(used, 0.3);
  for (int fd : fds) close(fd);
}

TEST(ServeLimits, SigtermWithSlowClientsExitsWithinTheDrain) {
  auto f = test::make_files("serve_drain", 0);
  test::ServerProc s("--pretrained " + f.weights + " --drain-seconds 2 --header-timeout 120", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  SlowClients slow(s.port(), 5);
  const int idle = test::connect_local(s.port());
  for (int i = 0; i < 5; ++i) slow.tick(), std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = Clock::now();
  s.signal(SIGTERM);
  // The slow clients keep sending for up to 60 s: without a drain bound the server would
  // wait for them (their header deadline is 120 s).
  while (s.alive() && Clock::now() - t0 < std::chrono::seconds(60)) {
    slow.tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_FALSE(s.alive());
  EXPECT_EQ(s.exit_status(), 0) << s.log();
  // 2 s of drain, then the model's queue (empty) and the exit: 10 s of margin for a loaded machine.
  EXPECT_LT(took, 12.0) << s.log();
  close(idle);
}

}  // namespace
}  // namespace oc
