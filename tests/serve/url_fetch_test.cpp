// serve/url_fetch: the fetcher behind --allow-image-urls, against an HTTP server on
// 127.0.0.1 (a private address: the tests that fetch allow private addresses; the refusal
// of private addresses is tested on the same server without that allowance).
#include "serve/url_fetch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>

#include <thread>

namespace oc::serve {
namespace {

bool private_ip(const char* text) {
  sockaddr_storage ss{};
  if (inet_pton(AF_INET, text, &reinterpret_cast<sockaddr_in&>(ss).sin_addr) == 1) {
    ss.ss_family = AF_INET;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, text, &reinterpret_cast<sockaddr_in6&>(ss).sin6_addr), 1) << text;
    ss.ss_family = AF_INET6;
  }
  return is_private_address(reinterpret_cast<const sockaddr*>(&ss));
}

TEST(UrlFetch, PrivateAddresses) {
  for (const char* a : {"127.0.0.1",
                        "127.255.0.9",
                        "10.1.2.3",
                        "172.16.0.1",
                        "172.31.255.255",
                        "192.168.1.1",
                        "169.254.169.254",
                        "100.64.0.1",
                        "0.0.0.0",
                        "224.0.0.1",
                        "255.255.255.255",
                        "::1",
                        "::",
                        "fc00::1",
                        "fd12:3456::1",
                        "fe80::1",
                        "ff02::1",
                        "::ffff:127.0.0.1",
                        "::ffff:10.0.0.1",
                        "64:ff9b::a9fe:a9fe"})
    EXPECT_TRUE(private_ip(a)) << a;
  for (const char* a : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2001:4860:4860::8888",
                        "2606:4700::1111", "::ffff:8.8.8.8"})
    EXPECT_FALSE(private_ip(a)) << a;
}

class UrlFetchOrigin : public ::testing::Test {
 protected:
  void SetUp() override {
    srv.Get("/a.png", [](const httplib::Request&, httplib::Response& r) { r.set_content("PNGBYTES", "image/png"); });
    srv.Get("/big",
            [](const httplib::Request&, httplib::Response& r) { r.set_content(std::string(5000, 'x'), "image/png"); });
    srv.Get("/missing", [](const httplib::Request&, httplib::Response& r) { r.status = 404; });
    srv.Get("/to-a", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/a.png"); });
    srv.Get("/to-file", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("file:///etc/passwd"); });
    srv.Get(R"(/hop/(\d+))", [](const httplib::Request& q, httplib::Response& r) {
      r.set_redirect("/hop/" + std::to_string(std::stoi(q.matches[1]) + 1));
    });
    srv.Get("/slow", [](const httplib::Request&, httplib::Response& r) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      r.set_content("late", "image/png");
    });
    port = srv.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    th = std::thread([this] { srv.listen_after_bind(); });
    while (!srv.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    srv.stop();
    th.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
  UrlFetched get(const std::string& path, UrlFetchOptions o = {}) {
    o.allow_private = true;
    return fetch_url(url(path), o);
  }
  httplib::Server srv;
  std::thread th;
  int port = 0;
};

TEST_F(UrlFetchOrigin, FetchesAndFollowsRedirects) {
  auto f = get("/a.png");
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(std::string(f.body.begin(), f.body.end()), "PNGBYTES");
  auto r = get("/to-a");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(std::string(r.body.begin(), r.body.end()), "PNGBYTES");
}

TEST_F(UrlFetchOrigin, PrivateAddressRefusedUnlessAllowed) {
  UrlFetchOptions o;  // allow_private = false
  auto f = fetch_url(url("/a.png"), o);
  EXPECT_TRUE(f.body.empty());
  EXPECT_NE(f.error.find("127.0.0.1"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("--allow-private-image-urls"), std::string::npos) << f.error;
  // By name too: localhost resolves to a loopback address, checked when the socket opens.
  auto n = fetch_url("http://localhost:" + std::to_string(port) + "/a.png", o);
  EXPECT_NE(n.error.find("--allow-private-image-urls"), std::string::npos) << n.error;
}

// A first hop that is allowed, redirecting to one that is not (a public page sending the
// server to 169.254.169.254 or its own network): the redirect's connection is checked too. No
// public address is reachable here, so two origins on 127.0.0.1 stand in: the refusal is
// told to refuse the fixture's port only, and a second server redirects to it.
TEST_F(UrlFetchOrigin, ARedirectToARefusedAddressIsRefused) {
  httplib::Server first;
  const std::string target = url("/a.png");
  first.Get("/own.png", [](const httplib::Request&, httplib::Response& r) { r.set_content("OWN", "image/png"); });
  first.Get("/away", [&](const httplib::Request&, httplib::Response& r) { r.set_redirect(target); });
  const int first_port = first.bind_to_any_port("127.0.0.1");
  ASSERT_GT(first_port, 0);
  std::thread t([&] { first.listen_after_bind(); });
  while (!first.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  UrlFetchOptions o;
  int refused_calls = 0;
  o.refuse = [&](const sockaddr* sa) {
    const bool refuse = sa->sa_family == AF_INET && ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port) == port;
    refused_calls += refuse;
    return refuse;
  };
  const std::string first_url = "http://127.0.0.1:" + std::to_string(first_port);
  auto own = fetch_url(first_url + "/own.png", o);  // the first origin itself is allowed
  EXPECT_EQ(own.error, "");
  EXPECT_EQ(std::string(own.body.begin(), own.body.end()), "OWN");
  EXPECT_EQ(refused_calls, 0);
  auto away = fetch_url(first_url + "/away", o);
  EXPECT_TRUE(away.body.empty());
  EXPECT_NE(away.error.find("the URL leads to 127.0.0.1"), std::string::npos) << away.error;
  EXPECT_NE(away.error.find("--allow-private-image-urls"), std::string::npos) << away.error;
  EXPECT_EQ(refused_calls, 1);
  // Without the stand-in, the same redirect under --allow-private-image-urls is followed.
  UrlFetchOptions allow;
  allow.allow_private = true;
  auto followed = fetch_url(first_url + "/away", allow);
  EXPECT_EQ(followed.error, "");
  EXPECT_EQ(std::string(followed.body.begin(), followed.body.end()), "PNGBYTES");
  first.stop();
  t.join();
}

TEST_F(UrlFetchOrigin, BoundedInSizeRedirectsSchemesAndTime) {
  UrlFetchOptions small;
  small.max_bytes = 4096;
  auto big = get("/big", small);
  EXPECT_NE(big.error.find("over the server's limit of 4096 bytes"), std::string::npos) << big.error;
  EXPECT_TRUE(big.body.empty());
  auto loop = get("/hop/0");
  EXPECT_NE(loop.error.find("more than 5 redirects"), std::string::npos) << loop.error;
  auto file = get("/to-file");
  EXPECT_NE(file.error.find("only http and https"), std::string::npos) << file.error;
  EXPECT_NE(fetch_url("file:///etc/passwd", {}).error, "");
  auto missing = get("/missing");
  EXPECT_NE(missing.error.find("HTTP 404"), std::string::npos) << missing.error;
  UrlFetchOptions quick;
  quick.timeout_s = 1;  // the origin answers after 3 s
  auto slow = get("/slow", quick);
  EXPECT_NE(slow.error.find("--image-url-timeout"), std::string::npos) << slow.error;
}

}  // namespace
}  // namespace oc::serve
