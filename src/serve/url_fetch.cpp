#include "serve/url_fetch.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>

namespace oc::serve {
namespace {

bool private_v4(uint32_t a) {  // host byte order
  auto in = [&](uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  return in(0x00000000, 8) || in(0x0A000000, 8) || in(0x64400000, 10) || in(0x7F000000, 8) || in(0xA9FE0000, 16) ||
         in(0xAC100000, 12) || in(0xC0000000, 24) || in(0xC0A80000, 16) || in(0xC6120000, 15) || in(0xE0000000, 4) ||
         in(0xF0000000, 4);
}

bool private_v6(const uint8_t* a) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t zeros[12] = {};
  if (std::memcmp(a, mapped, 12) == 0 || std::memcmp(a, nat64, 12) == 0 || std::memcmp(a, zeros, 12) == 0) {
    uint32_t v4;
    std::memcpy(&v4, a + 12, 4);
    return private_v4(ntohl(v4));  // also :: and ::1 (0/8)
  }
  return (a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || a[0] == 0xff;
}

struct Transfer {
  const UrlFetchOptions* opt;
  std::vector<uint8_t> body;
  bool over = false;
  std::string refused;  // a private address that was not connected to
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->body.size() + n > t->opt->max_bytes) {
    t->over = true;
    return 0;  // stops the transfer
  }
  t->body.insert(t->body.end(), data, data + n);
  return n;
}

curl_socket_t open_socket(void* user, curlsocktype, curl_sockaddr* a) {
  auto* t = static_cast<Transfer*>(user);
  const UrlFetchOptions& o = *t->opt;
  if (o.refuse ? o.refuse(&a->addr) : !o.allow_private && is_private_address(&a->addr)) {
    char buf[INET6_ADDRSTRLEN] = "?";
    const void* ip = a->family == AF_INET
                         ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&a->addr)->sin_addr)
                         : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&a->addr)->sin6_addr);
    inet_ntop(a->family, ip, buf, sizeof buf);
    t->refused = buf;
    return CURL_SOCKET_BAD;
  }
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

std::string failure(CURLcode rc, const Transfer& t, long status, const UrlFetchOptions& o) {
  if (!t.refused.empty())
    return "the URL leads to " + t.refused +
           ", a loopback, private or link-local address; the server fetches those only with "
           "--allow-private-image-urls";
  if (t.over || rc == CURLE_FILESIZE_EXCEEDED)
    return "the image is over the server's limit of " + std::to_string(o.max_bytes) + " bytes (--max-body-bytes)";
  if (rc == CURLE_OPERATION_TIMEDOUT)
    return "no whole answer within the server's " + std::to_string(o.timeout_s) + " s (--image-url-timeout)";
  if (rc == CURLE_TOO_MANY_REDIRECTS) return "more than " + std::to_string(o.max_redirects) + " redirects";
  if (rc == CURLE_UNSUPPORTED_PROTOCOL) return "only http and https URLs (and redirects to them) are fetched";
  if (rc != CURLE_OK) return curl_easy_strerror(rc);
  return "the URL answered HTTP " + std::to_string(status) + " (200 expected)";
}

}  // namespace

bool is_private_address(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) return private_v4(ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr));
  if (sa->sa_family == AF_INET6) return private_v6(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr.s6_addr);
  return true;  // anything else is not an internet address
}

UrlFetched fetch_url(const std::string& url, const UrlFetchOptions& o) {
  static const bool inited = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  UrlFetched out;
  CURL* h = inited ? curl_easy_init() : nullptr;
  if (!h) return {{}, "the server cannot fetch URLs (libcurl did not start)"};
  Transfer t{&o, {}, false, {}};
  const long ms = long(o.timeout_s * 1000);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, long(o.max_redirects));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROXY, "");  // no proxy from the environment: the checked address is the server's
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(o.max_bytes));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "openclip-cpp-serve");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
  curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &t);
  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(h);
  if (rc == CURLE_OK && status == 200 && !t.over) {
    out.body = std::move(t.body);
    return out;
  }
  out.error = failure(rc, t, status, o);
  return out;
}

}  // namespace oc::serve
