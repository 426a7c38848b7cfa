// One HTTP request with libcurl, for the hub downloader: redirects are not followed here (the
// caller decides which to follow, hub/hub.cpp), the body goes to a file and stops at a limit,
// a connection that stalls is dropped. No exceptions: a transport failure is `error`.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace oc::hub {

struct HttpRequest {
  std::string url;
  bool head = false;
  std::vector<std::string> headers;  // "Name: value"
  int64_t range_from = 0;            // > 0: "Range: bytes=N-"
  std::FILE* body = nullptr;         // GET: where a 200/206 body goes (opened for append at range_from
                                     // bytes; a 200 answer to a Range request truncates it first)
  int64_t max_total = -1;            // >= 0: the file may not grow past this (the transfer stops)
  double connect_timeout_s = 10;
  double stall_timeout_s = 30;  // less than 1 byte/s for this long: dropped
  std::function<void(int64_t body_bytes)> progress;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response, names lower-case
  int64_t body_bytes = 0;
  bool over_limit = false;   // the file would have grown past max_total (the transfer was stopped)
  bool restarted = false;    // a 200 came for a Range request: the file was truncated first
  std::string error_body;    // the first 2 KiB of a body that is not 200/206 (for the error)
  std::string error;         // a transport or disk error ("" when a whole response came)
  bool unreachable = false;  // the host did not resolve or refused the connection
  std::string header(const std::string& lower_name) const;
};

HttpResponse http_request(const HttpRequest& r);

struct UrlParts {
  std::string scheme, host, port;  // lower-case scheme and host; port "" when default
};
// An absolute http(s) URL's parts, or an error message.
bool parse_url(const std::string& url, UrlParts* out, std::string* error);
// `location` (a Location header, absolute or relative) against `base`; "" when invalid.
std::string resolve_url(const std::string& base, const std::string& location);

}  // namespace oc::hub
