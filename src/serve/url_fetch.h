// Image URLs fetched by the server for /v1/embeddings (issue 37; only with
// --allow-image-urls): one http(s) GET with libcurl, bounded in size (the body stops at
// max_bytes), time (one deadline for resolving, connecting, redirects and the body) and
// redirects (at most max_redirects, http and https only: never file:, ftp: or others).
// The address every connection goes to is checked as the socket is opened, after DNS and on
// every redirect, so a public name that resolves (or redirects) to a private address is
// refused too; no proxy from the environment is used (its address would be the one checked).
// No content encoding is asked for or decoded (no compression bombs).
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace oc::serve {

struct UrlFetchOptions {
  size_t max_bytes = 32u << 20;
  double timeout_s = 10;
  int max_redirects = 5;
  bool allow_private = false;  // loopback, private, link-local, CGNAT, multicast, reserved
  // The addresses refused (empty: is_private_address unless allow_private). The tests set it
  // to tell two origins on 127.0.0.1 apart, so that a redirect's hop can be refused while the
  // first one is allowed (no public address is reachable from a test).
  std::function<bool(const sockaddr*)> refuse;
};

struct UrlFetched {
  std::vector<uint8_t> body;
  std::string error;  // "" on success; otherwise what failed, for the client (no server paths)
};

UrlFetched fetch_url(const std::string& url, const UrlFetchOptions& o);

// True for addresses outside the public internet: 0/8, 10/8, 100.64/10, 127/8, 169.254/16,
// 172.16/12, 192.0.0/24, 192.168/16, 198.18/15, 224/4 and 240/4; IPv6 ::, ::1, fc00::/7,
// fe80::/10, ff00::/8, and the IPv4-mapped, IPv4-compatible and NAT64 (64:ff9b::/96) forms of
// the IPv4 ones.
bool is_private_address(const sockaddr* sa);

}  // namespace oc::serve
