// libcurl multi driver for the downloader (see fetch.h).
#include "download/fetch.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

#include "core/check.h"

#ifdef OPENCLIP_HAVE_CURL
#include <curl/curl.h>
#endif

namespace oc::download {

std::string default_user_agent(const std::string& token) {
  std::string ua = "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:72.0) Gecko/20100101 Firefox/72.0";
  if (!token.empty()) ua += " (compatible; " + token + "; +https://github.com/rom1504/img2dataset)";
  return ua;
}

namespace {

std::string trim_lower(std::string s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

}  // namespace

bool robots_disallowed(const std::string& value, const std::string& token, const std::vector<std::string>& disallowed) {
  size_t colon = value.find(':');
  std::string directives = colon == std::string::npos ? value : value.substr(colon + 1);
  // As img2dataset: the part before ':' is a user-agent token; absent = applies to all.
  if (colon != std::string::npos && trim_lower(value.substr(0, colon)) != trim_lower(token)) return false;
  size_t p = 0;
  while (p <= directives.size()) {
    size_t q = directives.find(',', p);
    if (q == std::string::npos) q = directives.size();
    std::string d = trim_lower(directives.substr(p, q - p));
    if (std::find(disallowed.begin(), disallowed.end(), d) != disallowed.end()) return true;
    p = q + 1;
  }
  return false;
}

#ifdef OPENCLIP_HAVE_CURL

namespace {

struct Transfer {
  CURL* easy = nullptr;
  size_t index = 0;
  std::string url;
  std::vector<uint8_t> body;
  std::vector<std::string> robots;  // X-Robots-Tag values of the last response
  int attempts = 0;
  bool too_big = false;
  int64_t max_bytes = 0;
};

size_t on_body(char* p, size_t sz, size_t n, void* ud) {
  auto* t = static_cast<Transfer*>(ud);
  size_t len = sz * n;
  if (int64_t(t->body.size() + len) > t->max_bytes) {
    t->too_big = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  t->body.insert(t->body.end(), p, p + len);
  return len;
}

size_t on_header(char* p, size_t sz, size_t n, void* ud) {
  auto* t = static_cast<Transfer*>(ud);
  size_t len = sz * n;
  std::string line(p, len);
  if (line.rfind("HTTP/", 0) == 0) t->robots.clear();  // a new response (after a redirect)
  static constexpr char kName[] = "x-robots-tag:";
  if (len > sizeof(kName) - 1) {
    bool match = true;
    for (size_t i = 0; i + 1 < sizeof(kName) && match; ++i) match = std::tolower((unsigned char)p[i]) == kName[i];
    if (match) t->robots.push_back(line.substr(sizeof(kName) - 1));
  }
  return len;
}

}  // namespace

struct Fetcher::Impl {
  FetchOptions o;
  CURLM* multi = nullptr;
  std::vector<std::unique_ptr<Transfer>> live;

  void start(Transfer* t) {
    t->body.clear();
    t->robots.clear();
    t->too_big = false;
    ++t->attempts;
    CURL* e = t->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, long(o.max_redirects));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, long(o.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, long(o.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, o.user_agent.c_str());
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(o.max_bytes));
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85 replaced the bitmask options
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, long(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, long(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_multi_add_handle(multi, e);
  }

  std::string error_of(Transfer* t, CURLcode rc) {
    if (t->too_big || rc == CURLE_FILESIZE_EXCEEDED) return fmt::format("response body over {} bytes", o.max_bytes);
    if (rc == CURLE_HTTP_RETURNED_ERROR) {
      long code = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
      return fmt::format("HTTP Error {}", code);
    }
    if (rc != CURLE_OK) return curl_easy_strerror(rc);
    for (const auto& v : t->robots)
      if (robots_disallowed(v, o.user_agent_token, o.disallowed))
        return "Use of image disallowed by X-Robots-Tag directive";
    if (t->body.empty()) return "empty response body";
    return "";
  }
};

Fetcher::Fetcher(FetchOptions o) : impl_(std::make_unique<Impl>()) {
  static const bool inited = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  OC_CHECK(inited, "curl_global_init failed");
  impl_->o = std::move(o);
  if (impl_->o.user_agent.empty()) impl_->o.user_agent = default_user_agent(impl_->o.user_agent_token);
  impl_->multi = curl_multi_init();
  OC_CHECK(impl_->multi, "curl_multi_init failed");
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, long(impl_->o.concurrency));
}

Fetcher::~Fetcher() {
  for (auto& t : impl_->live) {
    curl_multi_remove_handle(impl_->multi, t->easy);
    curl_easy_cleanup(t->easy);
  }
  curl_multi_cleanup(impl_->multi);
}

void Fetcher::add(size_t index, const std::string& url) {
  auto t = std::make_unique<Transfer>();
  t->easy = curl_easy_init();
  OC_CHECK(t->easy, "curl_easy_init failed");
  t->index = index;
  t->url = url;
  t->max_bytes = impl_->o.max_bytes;
  impl_->start(t.get());
  impl_->live.push_back(std::move(t));
}

size_t Fetcher::in_flight() const { return impl_->live.size(); }

std::vector<Fetched> Fetcher::poll(int wait_ms) {
  std::vector<Fetched> done;
  int running = 0;
  curl_multi_perform(impl_->multi, &running);
  int msgs = 0;
  bool any = false;
  while (CURLMsg* m = curl_multi_info_read(impl_->multi, &msgs)) {
    if (m->msg != CURLMSG_DONE) continue;
    any = true;
    Transfer* t = nullptr;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
    CURLcode rc = m->data.result;
    curl_multi_remove_handle(impl_->multi, t->easy);
    std::string err = impl_->error_of(t, rc);
    const bool robots = err.rfind("Use of image disallowed", 0) == 0;
    if (!err.empty() && !robots && t->attempts <= impl_->o.retries) {
      impl_->start(t);
      continue;
    }
    Fetched f;
    f.index = t->index;
    f.error = std::move(err);
    if (f.error.empty()) f.body = std::move(t->body);
    done.push_back(std::move(f));
    curl_easy_cleanup(t->easy);
    t->easy = nullptr;
  }
  if (any)
    impl_->live.erase(std::remove_if(impl_->live.begin(), impl_->live.end(), [](auto& t) { return !t->easy; }),
                      impl_->live.end());
  if (done.empty() && !impl_->live.empty()) curl_multi_poll(impl_->multi, nullptr, 0, wait_ms, nullptr);
  return done;
}

#else  // built without libcurl: every URL fails with a clear message

struct Fetcher::Impl {
  std::vector<Fetched> pending;
};
Fetcher::Fetcher(FetchOptions) : impl_(std::make_unique<Impl>()) {}
Fetcher::~Fetcher() = default;
void Fetcher::add(size_t index, const std::string&) {
  impl_->pending.push_back({index, {}, "openclip was built without libcurl (install libcurl4-openssl-dev)"});
}
size_t Fetcher::in_flight() const { return impl_->pending.size(); }
std::vector<Fetched> Fetcher::poll(int) {
  std::vector<Fetched> done;
  done.swap(impl_->pending);
  return done;
}

#endif

}  // namespace oc::download
