#include "serve/access.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "index/checksum.h"

namespace oc::serve {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The host part of a Host header: "[::1]:8080" -> "::1", "Example.org:80" -> "example.org".
std::string host_name(const std::string& host_header) {
  std::string h = lower(host_header);
  if (!h.empty() && h[0] == '[') {
    const size_t close = h.find(']');
    return close == std::string::npos ? "" : h.substr(1, close - 1);
  }
  const size_t colon = h.find(':');
  return colon == std::string::npos ? h : h.substr(0, colon);
}

bool is_ip_literal(const std::string& h) {
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

bool host_allowed(const AccessPolicy& p, const std::string& host_header) {
  const std::string h = host_name(host_header);
  if (h.empty()) return false;
  if (h == "localhost" || is_ip_literal(h) || h == lower(p.bound_host)) return true;
  return std::any_of(p.allowed_hosts.begin(), p.allowed_hosts.end(), [&](const std::string& a) { return lower(a) == h; });
}

bool cors_allowed(const AccessPolicy& p, const std::string& origin) {
  return std::find(p.cors_origins.begin(), p.cors_origins.end(), origin) != p.cors_origins.end() ||
         std::find(p.cors_origins.begin(), p.cors_origins.end(), "*") != p.cors_origins.end();
}

// Compares in time independent of where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i)
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

http::Response refuse(int status, const std::string& msg) {
  http::Response r = http::json_error(status, msg);
  r.close = false;
  return r;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  const std::string h = lower(host);
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != ',') continue;
    std::string item = s.substr(start, i - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = i + 1;
  }
  return out;
}

std::optional<http::Response> check_access(const AccessPolicy& p, const http::Request& req, bool needs_key) {
  const std::string host = req.header_or("host");
  // HTTP/1.0 has no Host requirement, but one that is sent is checked all the same (a
  // rebinding page's request names the attacker's host whatever the version).
  if ((req.minor_version >= 1 || req.header("host")) && !host_allowed(p, host))
    return refuse(403, "this server does not answer for the Host it was asked by (start it with --allowed-hosts)");
  if (const std::string* origin = req.header("origin")) {
    // The page's own requests: http://HOST, or https://HOST behind a TLS proxy (HOST passed
    // the check above, and a browser names the page's origin, not the target's).
    const bool same = *origin == "http://" + host || *origin == "https://" + host;
    if (!same && !cors_allowed(p, *origin))
      return refuse(403, "cross-origin requests are refused (allow an origin with --cors-origin)");
    if (req.method == "OPTIONS") {  // a preflight: no key needed, none sent
      http::Response r;
      r.status = 204;
      r.headers = {{"Access-Control-Allow-Methods", "GET, POST"},
                   {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                   {"Access-Control-Max-Age", "600"}};
      add_cors_headers(p, req, r);
      return r;
    }
  }
  if (needs_key && !p.api_key.empty()) {
    const std::string auth = req.header_or("authorization");
    // The scheme is case-insensitive (RFC 9110 11.1); the keys are compared as SHA-256
    // digests, in time independent of the key, its length and the header's.
    const bool bearer = auth.size() > 7 && lower(auth.substr(0, 7)) == "bearer ";
    if (!bearer || !same_secret(index::bytes_sha256(auth.substr(7)), index::bytes_sha256(p.api_key))) {
      http::Response r = refuse(401, "an API key is required: send Authorization: Bearer KEY");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
  }
  return std::nullopt;
}

void add_cors_headers(const AccessPolicy& p, const http::Request& req, http::Response& res) {
  const std::string* origin = req.header("origin");
  if (!origin || p.cors_origins.empty() || !cors_allowed(p, *origin)) return;
  res.headers.emplace_back("Access-Control-Allow-Origin", *origin);
  res.headers.emplace_back("Vary", "Origin");
}

}  // namespace oc::serve
