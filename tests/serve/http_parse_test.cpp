// serve/http's request parser without sockets: the same request fed whole and a byte at a
// time parses the same, pipelined bytes stay for the next request, every cap fires at the
// first byte over it; multipart and Range parsing.
#include <gtest/gtest.h>

#include "serve/http.h"

namespace oc::serve::http {
namespace {

using State = RequestParser::State;

State feed_bytewise(RequestParser& p, const std::string& bytes, std::string& buf) {
  State st = State::Head;
  for (char c : bytes) {
    buf.push_back(c);
    st = p.feed(buf);
    if (st == State::Done || st == State::Error) break;
  }
  return st;
}

const std::string kChunked =
    "POST /v1/embed/text?k=3&q=a+b%21 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-Two:  spaced value \r\n\r\n"
    "5;ext=1\r\nhello\r\nb\r\n, chunked!!\r\n0\r\nTrailer: x\r\n\r\n";

TEST(HttpParse, ChunkedWholeOrBytewiseAndPipelined) {
  for (bool bytewise : {false, true}) {
    RequestParser p({});
    std::string buf;
    const std::string next = "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n";
    State st;
    if (bytewise) {
      st = feed_bytewise(p, kChunked + next, buf);
    } else {
      buf = kChunked + next;
      st = p.feed(buf);
    }
    ASSERT_EQ(st, State::Done) << p.error_message();
    const Request& r = p.request();
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/v1/embed/text");
    EXPECT_EQ(r.body, "hello, chunked!!");
    EXPECT_EQ(r.header_or("x-two"), "spaced value");
    EXPECT_EQ(r.params().at("q"), "a b!");
    EXPECT_EQ(r.params().at("k"), "3");
    EXPECT_TRUE(r.keep_alive());
    if (!bytewise) {
      EXPECT_EQ(buf, next);  // the next request's bytes are left for it
      RequestParser q({});
      ASSERT_EQ(q.feed(buf), State::Done);
      EXPECT_EQ(q.request().path, "/healthz");
    }
  }
}

TEST(HttpParse, CapsFireAtTheFirstByteOver) {
  Limits lim;
  lim.max_line = 100, lim.max_header_bytes = 200, lim.max_headers = 4, lim.max_body = 10;
  auto error_of = [&](const std::string& bytes) {
    RequestParser p(lim);
    std::string buf;
    feed_bytewise(p, bytes, buf);
    return p.state() == State::Error ? p.error_status() : 0;
  };
  EXPECT_EQ(error_of("GET /" + std::string(95, 'a') + "x"), 414);  // no CRLF needed
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nX: " + std::string(300, 'a')), 431);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"), 431);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"), 413);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\n"), 413);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\n"), 415);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n"), 400);  // no Host
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n"), 400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789"), 0);
}

TEST(HttpParse, MultipartAndRanges) {
  Request r;
  r.headers = {{"content-type", "multipart/form-data; boundary=\"b;1\""}};
  r.body = "preamble\r\n--b;1\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a;b.png\"\r\n"
           "Content-Type: image/png\r\n\r\nPNG\r\nDATA\r\n--b;1\r\nContent-Disposition: form-data; name=labels\r\n\r\na dog\r\n--b;1--\r\n";
  auto parts = parse_multipart(r, 8);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "image");
  EXPECT_EQ(parts[0].filename, "a;b.png");
  EXPECT_EQ(parts[0].content, "PNG\r\nDATA");
  EXPECT_EQ(parts[1].name, "labels");
  EXPECT_EQ(parts[1].content, "a dog");
  EXPECT_THROW(parse_multipart(r, 1), HttpError);
  r.body = "--b;1\r\nContent-Disposition: form-data; name=x\r\n\r\nno end";
  EXPECT_THROW(parse_multipart(r, 8), HttpError);

  auto rg = single_range("bytes=2-5", 10);
  ASSERT_TRUE(rg && !rg->unsatisfiable);
  EXPECT_EQ(rg->first, 2u);
  EXPECT_EQ(rg->last, 5u);
  EXPECT_EQ(single_range("bytes=-3", 10)->first, 7u);
  EXPECT_EQ(single_range("bytes=4-100", 10)->last, 9u);
  EXPECT_TRUE(single_range("bytes=10-", 10)->unsatisfiable);
  EXPECT_FALSE(single_range("bytes=0-1,3-4", 10));  // several: the whole body
  EXPECT_FALSE(single_range("bytes=5-2", 10));
  EXPECT_FALSE(single_range("items=0-1", 10));
}

}  // namespace
}  // namespace oc::serve::http
