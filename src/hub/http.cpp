#include "hub/http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace oc::hub {

namespace {
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

struct Transfer {
  const HttpRequest* req;
  HttpResponse* resp;
  CURL* curl;
  bool disk_error = false;
  bool started = false;
  int64_t offset = 0;  // the file's size before this body
};

// The first chunk of a 200/206 body: where it lands in the file.
bool start_body(Transfer* t, long status) {
  t->started = true;
  t->offset = t->req->range_from;
  if (status == 200 && t->req->range_from > 0 && t->req->body) {
    t->resp->restarted = true;
    t->offset = 0;
    std::fflush(t->req->body);
    if (::ftruncate(::fileno(t->req->body), 0) != 0) return false;
  }
  return true;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->resp->headers.clear();  // a new response (after 100-continue)
  const size_t colon = line.find(':');
  if (colon != std::string::npos) t->resp->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 && status != 206) {  // an error page or a redirect's body: kept for the message
    const size_t keep = std::min(len, size_t(2048) - std::min(size_t(2048), t->resp->error_body.size()));
    t->resp->error_body.append(data, keep);
    return t->resp->error_body.size() >= 2048 ? 0 : len;
  }
  if (!t->started && !start_body(t, status)) {
    t->disk_error = true;
    return 0;
  }
  const int64_t limit = t->req->max_total;
  if (limit >= 0 && t->offset + t->resp->body_bytes + int64_t(len) > limit) {
    t->resp->over_limit = true;
    return 0;  // stops the transfer (CURLE_WRITE_ERROR)
  }
  if (t->req->body && std::fwrite(data, 1, len, t->req->body) != len) {
    t->disk_error = true;
    return 0;
  }
  t->resp->body_bytes += int64_t(len);
  if (t->req->progress) t->req->progress(t->resp->body_bytes);
  return len;
}
}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_request(const HttpRequest& r) {
  global_init();
  HttpResponse resp;
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) {
    resp.error = "curl_easy_init failed";
    return resp;
  }
  Transfer t{&r, &resp, h.get()};
  curl_slist* hdrs = nullptr;
  for (const auto& x : r.headers) hdrs = curl_slist_append(hdrs, x.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hold(hdrs, curl_slist_free_all);
  CURL* c = h.get();
  curl_easy_setopt(c, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "openclip-cpp/" OPENCLIP_VERSION " (huggingface_hub protocol)");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(r.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(r.stall_timeout_s)));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (r.head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  std::string range;
  if (r.range_from > 0) {
    range = std::to_string(r.range_from) + "-";
    curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  if (t.disk_error)
    resp.error = "cannot write the downloaded bytes to disk";
  else if (resp.over_limit)
    resp.error = "the body goes past the " + std::to_string(r.max_total) + " bytes expected";
  else if (rc == CURLE_WRITE_ERROR && resp.error_body.size() >= 2048)
    resp.error = "";  // an error page, cut short
  else if (rc != CURLE_OK)
    resp.error = curl_easy_strerror(rc);
  resp.unreachable =
      rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_COULDNT_CONNECT;
  return resp;
}

bool parse_url(const std::string& url, UrlParts* out, std::string* error) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), curl_url_cleanup);
  if (curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    *error = "not a valid URL: " + url;
    return false;
  }
  auto part = [&](CURLUPart p) {
    char* s = nullptr;
    std::string v;
    if (curl_url_get(u.get(), p, &s, 0) == CURLUE_OK && s) v = s;
    curl_free(s);
    return lower(v);
  };
  out->scheme = part(CURLUPART_SCHEME);
  out->host = part(CURLUPART_HOST);
  out->port = part(CURLUPART_PORT);
  if (out->scheme != "http" && out->scheme != "https") {
    *error = "not an http(s) URL: " + url;
    return false;
  }
  return true;
}

std::string resolve_url(const std::string& base, const std::string& location) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), curl_url_cleanup);
  if (curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK) return "";
  if (curl_url_set(u.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK) return "";
  char* s = nullptr;
  std::string v;
  if (curl_url_get(u.get(), CURLUPART_URL, &s, 0) == CURLUE_OK && s) v = s;
  curl_free(s);
  return v;
}

}  // namespace oc::hub
