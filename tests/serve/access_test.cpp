// Who may call `openclip serve`: the Host check against DNS rebinding, the API key, the
// Origin check and CORS, content types a web page can send without a preflight, and the
// refusal to serve the network without a key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "raw_http.h"
#include "server_fixture.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::http_request;
using test::raw_request;

const std::string kJson = "Content-Type: application/json\r\n";
const std::string kBody = json{{"text", "who may call"}}.dump();

int status(int port, const std::string& headers, const std::string& host = "", const std::string& type = kJson,
           const std::string& path = "/v1/embed/text") {
  auto a = raw_request(port, http_request(path == "/v1/embed/text" ? "POST" : "GET", path, port, type + headers,
                                          path == "/v1/embed/text" ? kBody : "", host));
  return a.status();
}

TEST(ServeAccess, HostKeyOriginAndContentType) {
  auto f = test::make_files("serve_access", 0);
  fs::write_atomic(f.dir + "/key", std::string("s3cret-key\n"));
  test::ServerProc s("--pretrained " + f.weights + " --api-key-file " + f.dir + "/key", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  const std::string key = "Authorization: Bearer s3cret-key\r\n", port = ":" + std::to_string(p);
  EXPECT_EQ(status(p, ""), 401);
  EXPECT_EQ(status(p, "Authorization: Bearer s3cret-kez\r\n"), 401);
  EXPECT_EQ(status(p, "Authorization: s3cret-key\r\n"), 401);
  EXPECT_EQ(status(p, key), 200);
  auto missing = raw_request(p, http_request("POST", "/v1/embed/text", p, kJson, kBody));
  EXPECT_NE(missing.text.find("WWW-Authenticate: Bearer"), std::string::npos) << missing.text;
  // DNS rebinding: a page on attacker.example whose name now points at 127.0.0.1.
  EXPECT_EQ(status(p, key, "attacker.example" + port), 403);
  EXPECT_EQ(status(p, key, "localhost" + port), 200);
  EXPECT_EQ(status(p, key, "[::1]" + port), 200);
  // A cross-site form or fetch carries its Origin; the same origin (the page) is served.
  EXPECT_EQ(status(p, key + "Origin: http://attacker.example\r\n"), 403);
  EXPECT_EQ(status(p, key + "Origin: http://127.0.0.1" + port + "\r\n"), 200);
  EXPECT_EQ(raw_request(p, http_request("OPTIONS", "/v1/embed/text", p, "Origin: http://attacker.example\r\n")).status(), 403);
  // Bodies a page can send without a preflight are not read as JSON.
  EXPECT_EQ(status(p, key, "", "Content-Type: application/x-www-form-urlencoded\r\n"), 415);
  EXPECT_EQ(status(p, key, "", "Content-Type: text/plain\r\n"), 415);
  EXPECT_EQ(status(p, key, "", "Content-Type: application/json; charset=utf-8\r\n"), 200);
  // The page and the health check are open; the metrics are not.
  EXPECT_EQ(status(p, "", "", "", "/healthz"), 200);
  EXPECT_EQ(status(p, "", "", "", "/"), 200);
  EXPECT_EQ(status(p, "", "", "", "/metrics"), 401);
  EXPECT_EQ(status(p, key, "", "", "/metrics"), 200);
}

TEST(ServeAccess, CorsOnlyForListedOrigins) {
  auto f = test::make_files("serve_cors", 0);
  test::ServerProc s("--pretrained " + f.weights + " --cors-origin http://app.example", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  auto pre = raw_request(p, http_request("OPTIONS", "/v1/embed/text", p,
                                         "Origin: http://app.example\r\nAccess-Control-Request-Method: POST\r\n"));
  ASSERT_EQ(pre.status(), 204) << pre.text;
  EXPECT_NE(pre.text.find("Access-Control-Allow-Origin: http://app.example\r\n"), std::string::npos) << pre.text;
  auto ok = raw_request(p, http_request("POST", "/v1/embed/text", p, kJson + "Origin: http://app.example\r\n", kBody));
  ASSERT_EQ(ok.status(), 200) << ok.text;
  EXPECT_NE(ok.text.find("Access-Control-Allow-Origin: http://app.example\r\n"), std::string::npos) << ok.text;
  EXPECT_EQ(status(p, "Origin: http://other.example\r\n"), 403);
  auto plain = raw_request(p, http_request("POST", "/v1/embed/text", p, kJson, kBody));  // no Origin: no CORS headers
  ASSERT_EQ(plain.status(), 200);
  EXPECT_EQ(plain.text.find("Access-Control"), std::string::npos) << plain.text;
}

TEST(ServeAccess, TheNetworkNeedsAKey) {
  auto f = test::make_files("serve_nokey", 0);
  auto r = test::run(test::openclip() + " serve --model test-tiny --pretrained " + f.weights + " --host 0.0.0.0 --port 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--api-key"), std::string::npos) << r.out;
  auto empty = test::run(test::openclip() + " serve --model test-tiny --pretrained " + f.weights + " --api-key-file /nonexistent/key");
  EXPECT_EQ(empty.status, 1);
  EXPECT_NE(empty.out.find("--api-key-file /nonexistent/key"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace oc
