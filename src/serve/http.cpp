#include "serve/http.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace oc::serve::http {
namespace {

using State = RequestParser::State;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Comma-separated tokens of a header value contain `want` (case-insensitive).
bool has_token(std::string_view value, std::string_view want) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (lower(trim(value.substr(0, comma))) == want) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// Splits "a; b=\"c;d\"; e" at the semicolons outside quotes.
std::vector<std::string_view> split_params(std::string_view v) {
  std::vector<std::string_view> out;
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= v.size(); ++i) {
    if (i < v.size() && v[i] == '"') quoted = !quoted;
    if (i == v.size() || (v[i] == ';' && !quoted)) out.push_back(trim(v.substr(start, i - start))), start = i + 1;
  }
  return out;
}

// The value of parameter `name` in a header value such as `form-data; name="x"`.
std::optional<std::string> header_param(std::string_view value, std::string_view name) {
  auto parts = split_params(value);
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos || lower(trim(parts[i].substr(0, eq))) != name) continue;
    std::string_view v = trim(parts[i].substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v);
  }
  return std::nullopt;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = char(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

}  // namespace

const std::string* Request::header(std::string_view name) const {
  for (auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

std::string Request::header_or(std::string_view name, const std::string& fallback) const {
  auto* v = header(name);
  return v ? *v : fallback;
}

bool Request::keep_alive() const {
  const std::string c = header_or("connection");
  return minor_version >= 1 ? !has_token(c, "close") : has_token(c, "keep-alive");
}

std::string Request::media_type() const {
  const std::string ct = header_or("content-type");
  return lower(trim(std::string_view(ct).substr(0, ct.find(';'))));
}

std::map<std::string, std::string> Request::params() const {
  std::map<std::string, std::string> out;
  std::string_view q = query;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view kv = q.substr(0, amp);
    const size_t eq = kv.find('=');
    if (!kv.empty())
      out.emplace(percent_decode(kv.substr(0, eq), true), eq == std::string_view::npos ? "" : percent_decode(kv.substr(eq + 1), true));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out.push_back(char(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(plus_is_space && s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

std::optional<ByteRange> single_range(const std::string& header, uint64_t size) {
  std::string_view v = trim(header);
  if (v.substr(0, 6) != "bytes=" || v.find(',') != std::string_view::npos) return std::nullopt;
  v.remove_prefix(6);
  const size_t dash = v.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view a = trim(v.substr(0, dash)), b = trim(v.substr(dash + 1));
  auto number = [](std::string_view d) -> std::optional<uint64_t> {
    if (d.empty() || d.size() > 18 || !std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return std::stoull(std::string(d));
  };
  ByteRange r;
  if (a.empty()) {  // the last n bytes
    auto n = number(b);
    if (!n) return std::nullopt;
    if (*n == 0 || size == 0) return ByteRange{0, 0, true};
    r.first = size - std::min(*n, size), r.last = size - 1;
    return r;
  }
  auto first = number(a);
  auto last = b.empty() ? std::optional<uint64_t>(UINT64_MAX) : number(b);
  if (!first || !last || *last < *first) return std::nullopt;
  if (*first >= size) return ByteRange{0, 0, true};
  r.first = *first, r.last = std::min(*last, size - 1);
  return r;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

Response json_error(int status, const std::string& message) {
  Response r;
  r.status = status;
  r.close = true;
  const nlohmann::json j = {{"error", {{"code", status}, {"message", message}}}};
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

std::string serialize(const Response& r, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) + "\r\n";
  if (r.status != 204 && !r.content_type.empty()) out += "Content-Type: " + r.content_type + "\r\n";
  for (auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  if (r.status != 204) out += "Content-Length: " + std::to_string(r.file ? r.file_size : r.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!r.file) out += r.body;
  return out;
}

State RequestParser::fail(int status, std::string msg) {
  err_status_ = status;
  err_msg_ = std::move(msg);
  return state_ = State::Error;
}

size_t RequestParser::body_bytes_held() const { return req_.body.capacity(); }

State RequestParser::feed(std::string& buf) {
  if (state_ == State::Head) {
    if (!started_) {  // empty lines before a request are ignored (RFC 9112, 2.2)
      size_t skip = 0;
      while (skip < buf.size() && (buf[skip] == '\r' || buf[skip] == '\n')) ++skip;
      buf.erase(0, skip);
      if (buf.empty()) return state_;
      started_ = true;
    }
    const size_t line_end = buf.find("\r\n");
    if ((line_end == std::string::npos ? buf.size() : line_end) > lim_.max_line)
      return fail(414, "the request line is over " + std::to_string(lim_.max_line) + " bytes");
    if (line_end == std::string::npos) return state_;
    const size_t end = buf.find("\r\n\r\n", line_end);
    const size_t block = (end == std::string::npos ? buf.size() : end) - line_end;
    if (block > lim_.max_header_bytes + 2)
      return fail(431, "the request headers are over " + std::to_string(lim_.max_header_bytes) + " bytes");
    if (end == std::string::npos) return state_;
    const std::string head = buf.substr(0, end + 2);
    buf.erase(0, end + 4);
    if (parse_head(head) == State::Error || framing() == State::Error) return state_;
  }
  if (state_ == State::Body) {
    if (req_.chunked) return feed_chunked(buf);
    const size_t take = std::min(buf.size(), size_t(req_.content_length) - req_.body.size());
    // Memory grows with the bytes that arrive (doubling, never past Content-Length): a
    // header announcing 32 MiB and no body costs nothing (issue 40, item 5).
    if (req_.body.size() + take > req_.body.capacity())
      req_.body.reserve(
          std::min(size_t(req_.content_length), std::max(2 * req_.body.capacity(), req_.body.size() + take)));
    req_.body.append(buf, 0, take);
    buf.erase(0, take);
    if (req_.body.size() == req_.content_length) state_ = State::Done;
  }
  return state_;
}

State RequestParser::parse_head(std::string_view head) {
  size_t pos = head.find("\r\n");
  if (parse_request_line(head.substr(0, pos)) == State::Error) return state_;
  for (pos += 2; pos < head.size();) {
    const size_t eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (req_.headers.size() >= lim_.max_headers)
      return fail(431, "more than " + std::to_string(lim_.max_headers) + " request headers");
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos ||
        !std::all_of(line.begin(), line.begin() + long(colon), is_token_char))
      return fail(400, "malformed header line " + std::to_string(req_.headers.size() + 1));
    const std::string_view value = trim(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](char c) { return (c >= 0 && c < 32 && c != '\t') || c == 127; }))
      return fail(400, "a control character in header line " + std::to_string(req_.headers.size() + 1));
    req_.headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  return state_;
}

State RequestParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == sp2) return fail(400, "malformed request line");
  req_.method = std::string(line.substr(0, sp1));
  req_.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const std::string_view version = line.substr(sp2 + 1);
  if (req_.method.empty() || req_.method.size() > 16 ||
      !std::all_of(req_.method.begin(), req_.method.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
    return fail(400, "malformed request method");
  if (req_.target.empty() || req_.target[0] != '/' ||
      std::any_of(req_.target.begin(), req_.target.end(), [](char c) { return c <= 32 || c == 127; }))
    return fail(400, "malformed request target");
  if (version == "HTTP/1.1") req_.minor_version = 1;
  else if (version == "HTTP/1.0") req_.minor_version = 0;
  else if (version.substr(0, 5) == "HTTP/") return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
  else return fail(400, "malformed request line");
  const size_t q = req_.target.find('?');
  req_.path = req_.target.substr(0, q);
  req_.query = q == std::string::npos ? "" : req_.target.substr(q + 1);
  return state_;
}

// How the body is framed (RFC 9112, 6): chunked, or Content-Length, or none.
State RequestParser::framing() {
  int hosts = 0;
  bool has_length = false, has_te = false;
  for (auto& [k, v] : req_.headers) {
    if (k == "host") ++hosts;
    if (k == "transfer-encoding") {
      if (lower(v) != "chunked" || has_te) return fail(501, "only Transfer-Encoding: chunked is supported");
      has_te = req_.chunked = true;
    }
    if (k == "content-length") {
      if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return fail(400, "malformed Content-Length");
      const uint64_t n = std::stoull(v);
      if (has_length && n != req_.content_length) return fail(400, "conflicting Content-Length headers");
      has_length = true, req_.content_length = n;
    }
    if (k == "content-encoding" && lower(v) != "identity")
      return fail(415, "Content-Encoding \"" + v + "\" is not accepted: send the body uncompressed");
  }
  if (req_.minor_version >= 1 && hosts != 1) return fail(400, "an HTTP/1.1 request needs exactly one Host header");
  if (has_te && (has_length || req_.minor_version == 0)) return fail(400, "Transfer-Encoding with Content-Length or HTTP/1.0");
  if (req_.content_length > lim_.max_body)
    return fail(413, "the request body is over the limit of " + std::to_string(lim_.max_body) + " bytes");
  return state_ = req_.has_body() ? State::Body : State::Done;
}

State RequestParser::feed_chunked(std::string& buf) {
  for (;;) {
    if (chunk_ == Chunk::Data) {
      const size_t take = size_t(std::min<uint64_t>(chunk_left_, buf.size()));
      req_.body.append(buf, 0, take);
      buf.erase(0, take);
      chunk_left_ -= take;
      if (chunk_left_ > 0) return state_;
      chunk_ = Chunk::DataEnd;
      continue;
    }
    if (chunk_ == Chunk::DataEnd) {
      if (buf.size() < 2) return state_;
      if (buf.compare(0, 2, "\r\n") != 0) return fail(400, "malformed chunked body (no CRLF after a chunk)");
      buf.erase(0, 2);
      chunk_ = Chunk::Size;
      continue;
    }
    const size_t eol = buf.find("\r\n");
    if (chunk_ == Chunk::Trailer) {
      const size_t n = eol == std::string::npos ? buf.size() : eol + 2;
      if (trailer_bytes_ + n > lim_.max_header_bytes) return fail(431, "the chunked trailer is too long");
      if (eol == std::string::npos) return state_;
      trailer_bytes_ += n;
      buf.erase(0, n);
      if (eol == 0) return state_ = State::Done;
      continue;
    }
    if (eol == std::string::npos) return buf.size() > 1024 ? fail(400, "malformed chunk size line") : state_;
    const std::string_view line = trim(std::string_view(buf).substr(0, std::min(eol, buf.find(';'))));
    if (line.empty() || line.size() > 16 || !std::all_of(line.begin(), line.end(), [](char c) { return hex_value(c) >= 0; }))
      return fail(400, "malformed chunk size");
    uint64_t size = 0;
    for (char c : line) size = size * 16 + uint64_t(hex_value(c));
    buf.erase(0, eol + 2);
    if (size > lim_.max_body - req_.body.size())
      return fail(413, "the request body is over the limit of " + std::to_string(lim_.max_body) + " bytes");
    chunk_left_ = size;
    chunk_ = size == 0 ? Chunk::Trailer : Chunk::Data;
  }
}

std::vector<Part> parse_multipart(const Request& req, size_t max_parts) {
  const auto boundary = header_param(req.header_or("content-type"), "boundary");
  if (!boundary || boundary->empty() || boundary->size() > 200) throw HttpError(400, "multipart/form-data without a boundary");
  const std::string& body = req.body;
  const std::string delim = "--" + *boundary;
  size_t pos = body.find(delim);
  if (pos == std::string::npos) throw HttpError(400, "the multipart body has no boundary line");
  std::vector<Part> parts;
  for (pos += delim.size(); body.compare(pos, 2, "--") != 0;) {
    if (body.compare(pos, 2, "\r\n") != 0) throw HttpError(400, "malformed multipart body at byte " + std::to_string(pos));
    const size_t hend = body.find("\r\n\r\n", pos);
    if (hend == std::string::npos) throw HttpError(400, "unterminated multipart headers at byte " + std::to_string(pos));
    Part p;
    for (size_t at = pos + 2; at < hend + 2;) {
      const size_t eol = body.find("\r\n", at);
      const std::string_view line = std::string_view(body).substr(at, eol - at);
      at = eol + 2;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string name = lower(trim(line.substr(0, colon)));
      const std::string_view value = trim(line.substr(colon + 1));
      if (name == "content-type") p.content_type = std::string(value);
      if (name == "content-disposition") {
        p.name = header_param(value, "name").value_or("");
        p.filename = header_param(value, "filename").value_or("");
      }
    }
    const size_t next = body.find("\r\n" + delim, hend + 4);
    if (next == std::string::npos) throw HttpError(400, "unterminated multipart part at byte " + std::to_string(hend + 4));
    if (parts.size() >= max_parts) throw HttpError(413, "more than " + std::to_string(max_parts) + " multipart parts");
    p.content = body.substr(hend + 4, next - hend - 4);
    parts.push_back(std::move(p));
    pos = next + 2 + delim.size();
  }
  return parts;
}

}  // namespace oc::serve::http
