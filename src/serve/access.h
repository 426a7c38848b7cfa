// Who may call `openclip serve` (docs/SERVE.md, "Who may call"), checked on the headers
// before a body is read:
//   - Host: an IP literal, localhost, the bound host name or one of --allowed-hosts. A DNS
//     rebinding attack always sends its own domain name, so it is refused (403).
//   - Origin: a browser request from another origin (any cross-site form or fetch carries
//     one) is refused (403) unless --cors-origin lists it; then it gets CORS headers, and
//     OPTIONS preflights are answered.
//   - the API key (--api-key / --api-key-file) as `Authorization: Bearer KEY` (401 without);
//     the page and /healthz are open.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "serve/http.h"

namespace oc::serve {

struct AccessPolicy {
  std::string bound_host;
  std::vector<std::string> allowed_hosts, cors_origins;
  std::string api_key;  // "" = no key
};

// A refusal (403/401, or the answer to a preflight), or nullopt when the request may go on.
std::optional<http::Response> check_access(const AccessPolicy& p, const http::Request& req, bool needs_key);
// Access-Control-Allow-Origin for an allowed cross-origin request.
void add_cors_headers(const AccessPolicy& p, const http::Request& req, http::Response& res);
bool is_loopback_host(const std::string& host);
// "a,b , c" -> {"a", "b", "c"}
std::vector<std::string> split_list(const std::string& s);

}  // namespace oc::serve
