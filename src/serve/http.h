// HTTP/1.1 messages for `openclip serve`: the request, an incremental parser that enforces
// its own limits while bytes arrive (request line 414, header block and count 431, body 413
// whatever the framing, Content-Encoding refused with 415), the response, and the body
// helpers the endpoints need (query parameters, multipart/form-data). No sockets here:
// http_server.cpp feeds the parser. docs/SERVE.md, "The HTTP layer", says why it is ours.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/file.h"

namespace oc::serve {

// An error with its HTTP status; the message goes to the client, so it names the request's
// problem and never internal state.
struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& msg) : std::runtime_error(msg), status(status) {}
  int status;
};

}  // namespace oc::serve

namespace oc::serve::http {

struct Limits {
  size_t max_line = 8192;           // request line (414 above)
  size_t max_header_bytes = 16384;  // header block after the request line (431 above)
  size_t max_headers = 64;          // header lines (431 above)
  size_t max_body = 32u << 20;      // body bytes as read, after de-chunking (413 above)
};

struct Request {
  std::string method, target, path, query;  // path and query: the target split at '?'
  int minor_version = 1;                     // HTTP/1.x
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  bool chunked = false;
  uint64_t content_length = 0;
  // Set by the server when the client has gone while the request waits or runs: queued work
  // for it is dropped (Batcher). Null for requests not from a connection.
  std::shared_ptr<std::atomic<bool>> gone;

  // The first header of that name (lower case), or null.
  const std::string* header(std::string_view name) const;
  std::string header_or(std::string_view name, const std::string& fallback = "") const;
  bool has_body() const { return chunked || content_length > 0; }
  bool keep_alive() const;
  // The media type of Content-Type, lower-cased, without parameters ("" when absent).
  std::string media_type() const;
  // Query parameters, percent- and '+'-decoded; a repeated name keeps its first value.
  std::map<std::string, std::string> params() const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool close = false;  // Connection: close after this response
  // Instead of `body`: bytes [file_offset, file_offset + file_size) of an open file, read in
  // 64 KiB pieces as the client takes them (a slow reader of a 27 MB image holds 64 KiB).
  std::shared_ptr<const io::ReadFile> file;
  uint64_t file_offset = 0, file_size = 0;
};

// {"error": {"code": status, "message": message}}, closing the connection.
Response json_error(int status, const std::string& message);
// The status line, headers and body as sent (Content-Length always set; a file body is not
// included: the server streams it).
std::string serialize(const Response& r, bool keep_alive);
const char* reason_phrase(int status);

// Feeds bytes as they arrive; the parser removes what it consumed from the buffer, so bytes
// of a pipelined next request stay there.
class RequestParser {
 public:
  enum class State { Head, Body, Done, Error };
  explicit RequestParser(const Limits& limits) : lim_(limits) {}
  State feed(std::string& buf);
  State state() const { return state_; }
  bool started() const { return started_; }  // a byte of this request has arrived
  Request& request() { return req_; }
  int error_status() const { return err_status_; }
  const std::string& error_message() const { return err_msg_; }
  // The memory the body holds so far (it grows as bytes arrive, at most twice what arrived).
  size_t body_bytes_held() const;

 private:
  State fail(int status, std::string msg);
  State parse_head(std::string_view head);
  State parse_request_line(std::string_view line);
  State framing();
  State feed_chunked(std::string& buf);

  Limits lim_;
  Request req_;
  State state_ = State::Head;
  bool started_ = false;
  int err_status_ = 0;
  std::string err_msg_;
  enum class Chunk { Size, Data, DataEnd, Trailer } chunk_ = Chunk::Size;
  uint64_t chunk_left_ = 0;
  size_t trailer_bytes_ = 0;
};

// A Range header against a body of `size` bytes (RFC 9110, 14.2). One satisfiable range
// gives [first, last]; one that starts past the end is unsatisfiable (416); several ranges
// or a malformed header give nullopt: the whole body is sent, as the RFC permits, so no
// request can make the server build a multipart answer larger than the file.
struct ByteRange {
  uint64_t first = 0, last = 0;
  bool unsatisfiable = false;
};
std::optional<ByteRange> single_range(const std::string& header, uint64_t size);

std::string percent_decode(std::string_view s, bool plus_is_space);

struct Part {
  std::string name, filename, content_type, content;
};
// multipart/form-data parts (throws HttpError 400 on a malformed body or a missing
// boundary, 413 over max_parts).
std::vector<Part> parse_multipart(const Request& req, size_t max_parts);

}  // namespace oc::serve::http
