#include "hub/hub.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/fs.h"
#include "core/log.h"
#include "hub/cache.h"
#include "hub/hash.h"
#include "hub/http.h"
#include "hub/progress.h"

namespace oc::hub {

namespace {
namespace sfs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool truthy(std::string v) {
  for (char& c : v) c = char(std::toupper(static_cast<unsigned char>(c)));
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

std::string escape_path(const std::string& s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
      out += char(c);
    else
      out += std::string("%") + kHex[c >> 4] + kHex[c & 15];
  }
  return out;
}

// Where a download may go: the endpoint's host, over https its subdomains, and the hf.co CDN
// hosts for huggingface.co (the rule is documented in hub.h).
struct HostPolicy {
  UrlParts origin;
  bool any_https = false;  // URL downloads with a checksum
  bool allows(const std::string& url, std::string* why) const {
    UrlParts to;
    if (!parse_url(url, &to, why)) return false;
    if (to.host == origin.host) return true;
    const auto ends = [&](const std::string& d) { return to.host.size() > d.size() && to.host.ends_with("." + d); };
    if (to.scheme == "https" &&
        (any_https || ends(origin.host) || (origin.host == "huggingface.co" && (to.host == "hf.co" || ends("hf.co")))))
      return true;
    *why = "a redirect to another host (" + to.host + ", from " + origin.host +
           "); only the endpoint's host and its CDN hosts are followed";
    return false;
  }
};

std::vector<std::string> request_headers(const std::string& url, const HostPolicy& p, const HubOptions& o) {
  std::vector<std::string> h = {"Accept-Encoding: identity"};
  UrlParts u;
  std::string why;
  if (!o.token.empty() && parse_url(url, &u, &why) && u.host == p.origin.host && u.port == p.origin.port)
    h.push_back("Authorization: Bearer " + o.token);
  return h;
}

struct Meta {
  std::string commit, etag, location;
  int64_t size = -1;
};

std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  e.erase(std::remove(e.begin(), e.end(), '"'), e.end());
  return e;
}

[[noreturn]] void http_fail(const std::string& what, const HttpResponse& r, const HubOptions& o) {
  const std::string code = r.header("x-error-code"), msg = r.header("x-error-message");
  const std::string detail = msg.empty() ? (code.empty() ? "" : " (" + code + ")") : " (" + msg + ")";
  if (r.status == 404) throw NotFound(what + ": not found (HTTP 404)" + detail);
  if (r.status == 401 || r.status == 403)
    OC_USER_ERROR("{}: HTTP {}{}; a gated or private repository needs a token: set HF_TOKEN{}", what, r.status, detail,
                  o.token.empty() ? " (none is set)" : " (the one set was refused)");
  OC_USER_ERROR("{}: HTTP {}{}", what, r.status, detail);
}

bool transient(const HttpResponse& r) { return !r.error.empty() || r.status == 429 || r.status >= 500; }

void backoff(int failure, const HubOptions& o) {
  const double s = std::min(30.0, o.backoff_s * std::pow(2.0, failure - 1));
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// HEAD, following same-host redirects (a renamed repository), as get_hf_file_metadata.
Meta head_meta(const std::string& url, const std::string& what, const HostPolicy& p, const HubOptions& o) {
  std::string cur = url;
  for (int redirects = 0, failures = 0;;) {
    HttpRequest req{.url = cur, .head = true, .headers = request_headers(cur, p, o)};
    req.connect_timeout_s = o.connect_timeout_s;
    req.stall_timeout_s = o.stall_timeout_s;
    const HttpResponse r = http_request(req);
    if (transient(r)) {  // an unreachable host is not waited for (huggingface_hub does not retry it either)
      if (r.unreachable || ++failures > o.retries)
        OC_USER_ERROR("{}: {} from {} ({} attempts{})", what,
                      r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error, cur, failures + r.unreachable,
                      r.unreachable ? "; set HF_HUB_OFFLINE=1 to use the cache alone" : "");
      backoff(failures, o);
      continue;
    }
    const std::string loc = r.status >= 300 && r.status < 400 ? resolve_url(cur, r.header("location")) : "";
    UrlParts to;
    std::string why;
    if (!loc.empty() && parse_url(loc, &to, &why) && to.host == p.origin.host && to.port == p.origin.port) {
      if (++redirects > 10) OC_USER_ERROR("{}: more than 10 redirects", what);
      cur = loc;
      continue;
    }
    if (r.status >= 400 || (r.status >= 300 && loc.empty())) http_fail(what, r, o);
    Meta m;
    m.commit = r.header("x-repo-commit");
    m.etag = normalize_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
    // A redirect's Content-Length is its own (empty) body's: only X-Linked-Size sizes the file then.
    const std::string size = !r.header("x-linked-size").empty() ? r.header("x-linked-size")
                             : loc.empty()                      ? r.header("content-length")
                                                                : "";
    m.size =
        !size.empty() && size.size() < 19 && std::all_of(size.begin(), size.end(), ::isdigit) ? std::stoll(size) : -1;
    m.location = loc.empty() ? cur : loc;
    return m;
  }
}

void check_meta(const Meta& m, const std::string& what, const HubOptions& o) {
  if (!is_hex(m.commit, 40))
    OC_USER_ERROR("{}: the server sent no commit (X-Repo-Commit '{}'): {} does not speak the Hugging Face hub protocol",
                  what, m.commit.substr(0, 64), o.endpoint);
  bool etag_ok = !m.etag.empty() && m.etag.size() <= 128;
  for (char c : m.etag) etag_ok = etag_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  if (!etag_ok)
    OC_USER_ERROR("{}: the server's etag '{}' cannot name a file in the cache; refused", what, m.etag.substr(0, 64));
  if (m.size < 0) OC_USER_ERROR("{}: the server announced no size (X-Linked-Size / Content-Length)", what);
  if (m.size > o.max_bytes)
    OC_USER_ERROR("{}: the server announced {} bytes, more than the {}-byte limit; refused", what, m.size, o.max_bytes);
}

void remove_quietly(const std::string& p) {
  std::error_code ec;
  sfs::remove(p, ec);
}

struct Target {
  std::string url, incomplete, what;
  int64_t size = -1;  // the announced size (-1: unknown, bounded by max_bytes)
};

// One GET of t.url's remaining bytes into t.incomplete; returns the response.
HttpResponse get_once(const std::string& url, const Target& t, int64_t have, const HostPolicy& p, Progress& bar,
                      const HubOptions& o) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(t.incomplete.c_str(), "ab"), std::fclose);
  if (!f) OC_USER_ERROR("{}: cannot be opened for writing", t.incomplete);
  HttpRequest req{.url = url, .headers = request_headers(url, p, o), .range_from = have, .body = f.get()};
  req.max_total = t.size >= 0 ? t.size : o.max_bytes;
  req.connect_timeout_s = o.connect_timeout_s;
  req.stall_timeout_s = o.stall_timeout_s;
  req.progress = [&](int64_t n) { bar.update(have + n); };
  HttpResponse r = http_request(req);
  if (std::fflush(f.get()) != 0 && r.error.empty()) r.error = "cannot write the downloaded bytes to disk";
  return r;
}

// Downloads (or resumes) t.url into t.incomplete until it holds the announced size.
void fetch_to(const Target& t, const HostPolicy& p, const HubOptions& o) {
  int64_t have = std::max<int64_t>(0, fs::file_size(t.incomplete));
  if (t.size >= 0 && have > t.size) {
    remove_quietly(t.incomplete);
    have = 0;
  }
  Progress bar(t.what, t.size, have, o.progress);
  std::string cur = t.url;
  for (int redirects = 0, failures = 0;;) {
    if (t.size >= 0 && have == t.size) break;
    const HttpResponse r = get_once(cur, t, have, p, bar, o);
    have = std::max<int64_t>(0, fs::file_size(t.incomplete));
    if (r.over_limit) {
      remove_quietly(t.incomplete);
      OC_USER_ERROR("{}: the server sent more than the {} bytes it announced; the download was stopped and deleted",
                    t.what, t.size >= 0 ? t.size : o.max_bytes);
    }
    if (r.status >= 300 && r.status < 400) {
      const std::string loc = resolve_url(cur, r.header("location"));
      std::string why = "a redirect without a valid Location";
      if (loc.empty() || !p.allows(loc, &why)) OC_USER_ERROR("{}: {}; refused", t.what, why);
      if (++redirects > 10) OC_USER_ERROR("{}: more than 10 redirects", t.what);
      cur = loc;
      continue;
    }
    if (r.status == 416 && have > 0) {  // a stale .incomplete the server cannot resume
      remove_quietly(t.incomplete);
      have = 0;
      continue;
    }
    if (r.status == 206 &&
        r.header("content-range").rfind("bytes " + std::to_string(have - r.body_bytes) + "-", 0) != 0) {
      remove_quietly(t.incomplete);
      OC_USER_ERROR("{}: the server answered the range request with another range ({}); deleted", t.what,
                    r.header("content-range"));
    }
    if (!transient(r) && r.status >= 400) http_fail(t.what, r, o);
    if (transient(r) || (t.size >= 0 && have < t.size)) {
      if (++failures > o.retries)
        OC_USER_ERROR("{}: {} after {} attempts; {} of {} bytes are kept in {} and the next run resumes", t.what,
                      r.error.empty() ? "the body ended early" : r.error, failures, have, t.size, t.incomplete);
      backoff(failures, o);
      continue;
    }
    break;  // a whole body of unknown size
  }
  bar.finish(have);
}

// The downloaded file against its etag: LFS files are named by SHA-256, git files by the
// blob's SHA-1; other etags (a server's own) are checked by size alone.
void verify_etag(const Target& t, const std::string& etag) {
  const int64_t size = fs::file_size(t.incomplete);
  if (size != t.size) {
    remove_quietly(t.incomplete);
    OC_USER_ERROR("{}: {} bytes came, the server announced {}; deleted", t.what, size, t.size);
  }
  std::string got;
  if (is_hex(etag, 64))
    got = file_digest(t.incomplete, Digest::Kind::Sha256);
  else if (is_hex(etag, 40))
    got = file_digest(t.incomplete, Digest::Kind::GitBlobSha1, size);
  std::string want = etag;
  for (char& c : want) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (!got.empty() && got != want) {
    remove_quietly(t.incomplete);
    OC_USER_ERROR(
        "{}: the downloaded file's checksum {} is not its etag {}: corrupted in transit or on the server; "
        "deleted",
        t.what, got, etag);
  }
}

HostPolicy policy_for(const std::string& url, bool any_https) {
  HostPolicy p;
  std::string why;
  if (!parse_url(url, &p.origin, &why)) OC_USER_ERROR("{}", why);
  p.any_https = any_https;
  return p;
}
}  // namespace

HubOptions hub_options_from_env(const std::string& cache_dir) {
  HubOptions o;
  std::string endpoint = env("HF_ENDPOINT");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.empty()) o.endpoint = endpoint;
  const std::string home = env("HOME").empty() ? "." : env("HOME");
  const std::string hf_home = !env("HF_HOME").empty()          ? env("HF_HOME")
                              : !env("XDG_CACHE_HOME").empty() ? env("XDG_CACHE_HOME") + "/huggingface"
                                                               : home + "/.cache/huggingface";
  o.cache = !cache_dir.empty() ? cache_dir : !env("HF_HUB_CACHE").empty() ? env("HF_HUB_CACHE") : hf_home + "/hub";
  o.token = env("HF_TOKEN");
  if (o.token.empty() && fs::exists(hf_home + "/token")) {
    auto t = fs::read_text(hf_home + "/token");
    if (t) o.token = *t;
    while (!o.token.empty() && std::isspace(static_cast<unsigned char>(o.token.back()))) o.token.pop_back();
  }
  o.offline = truthy(env("HF_HUB_OFFLINE"));
  return o;
}

std::string cached_file(const std::string& repo_id, const std::string& filename, const std::string& revision,
                        const HubOptions& o) {
  check_repo_id(repo_id);
  check_filename(filename);
  check_revision(revision);
  const RepoCache rc{o.cache, repo_id};
  const std::string commit = rc.commit_of(revision);
  return commit.empty() ? "" : rc.cached(commit, filename);
}

std::string hf_hub_download(const std::string& repo_id, const std::string& filename, const std::string& revision,
                            const HubOptions& o) {
  const std::string cached = cached_file(repo_id, filename, revision, o);
  const std::string what = repo_id + "/" + filename + (revision == "main" ? "" : "@" + revision);
  if (!cached.empty() && is_hex(revision, 40)) return cached;  // a commit's files never change
  if (o.offline) {
    if (!cached.empty()) return cached;
    throw NotFound(what + ": not in the cache " + o.cache + ", and HF_HUB_OFFLINE is set (no request is made)");
  }
  const std::string url =
      o.endpoint + "/" + repo_id + "/resolve/" + escape_path(revision, false) + "/" + escape_path(filename, true);
  const HostPolicy p = policy_for(o.endpoint, false);
  Meta m;
  try {
    HubOptions once = o;  // with a cached copy, an unreachable server is not waited for (as huggingface_hub)
    if (!cached.empty()) once.retries = 0;
    m = head_meta(url, what, p, once);
  } catch (const NotFound&) {
    throw;
  } catch (const oc::Error& e) {
    if (cached.empty()) throw;
    log::warn("{}; using the cached {}", e.what(), cached);
    return cached;
  }
  std::string why;
  if (!p.allows(m.location, &why)) OC_USER_ERROR("{}: the file is served from {}: {}; refused", what, m.location, why);
  check_meta(m, what, o);
  const RepoCache rc{o.cache, repo_id};
  rc.write_ref(revision, m.commit);
  if (const std::string c = rc.cached(m.commit, filename); !c.empty()) return c;
  const std::string blob = rc.blob(m.etag);
  FileLock lock(rc.lock(m.etag));
  if (!fs::exists(blob)) {
    fs::make_dirs(fs::dirname(blob));
    const Target t{m.location, blob + ".incomplete", what, m.size};
    fetch_to(t, p, o);
    verify_etag(t, m.etag);
    std::error_code ec;
    sfs::rename(t.incomplete, blob, ec);
    if (ec) OC_USER_ERROR("cannot rename {} to {}: {}", t.incomplete, blob, ec.message());
  }
  rc.link(m.commit, filename, m.etag);
  return rc.cached(m.commit, filename);
}

std::string download_url(const std::string& url, const std::string& dir, const std::string& sha256_prefix,
                         const HubOptions& o) {
  const std::string target = fs::join(dir, url.substr(url.rfind('/') + 1));
  check_filename(sfs::path(target).filename().string());
  auto matches = [&](const std::string& path) {
    return sha256_prefix.empty() || file_digest(path, Digest::Kind::Sha256).rfind(sha256_prefix, 0) == 0;
  };
  std::error_code ec;
  if (sfs::exists(target, ec) && !sfs::is_regular_file(target, ec))
    OC_USER_ERROR("{} exists and is not a regular file", target);
  if (sfs::is_regular_file(target, ec)) {
    if (matches(target)) return target;
    log::warn("{} exists, but its SHA-256 does not start with {}; downloading it again", target, sha256_prefix);
  }
  if (o.offline) throw NotFound(target + ": not on disk, and HF_HUB_OFFLINE is set (no request is made)");
  fs::make_dirs(dir);
  FileLock lock(target + ".lock");
  if (sfs::is_regular_file(target, ec) && matches(target)) return target;  // another process finished it
  const HostPolicy p = policy_for(url, !sha256_prefix.empty());
  const Meta m = head_meta(url, url, p, o);  // follows same-host redirects; the size bounds the body
  std::string why;
  if (!p.allows(m.location, &why)) OC_USER_ERROR("{}: {}; refused", url, why);
  if (m.size > o.max_bytes)
    OC_USER_ERROR("{}: {} bytes announced, more than the {}-byte limit", url, m.size, o.max_bytes);
  const Target t{m.location, target + ".incomplete", url, m.size};
  fetch_to(t, p, o);
  if (m.size >= 0 && fs::file_size(t.incomplete) != m.size) verify_etag(t, "");
  if (!matches(t.incomplete)) {
    remove_quietly(t.incomplete);
    OC_USER_ERROR("{}: downloaded, but its SHA-256 does not start with {} (as OpenCLIP checks); deleted", url,
                  sha256_prefix);
  }
  sfs::rename(t.incomplete, target, ec);
  if (ec) OC_USER_ERROR("cannot rename {} to {}: {}", t.incomplete, target, ec.message());
  return target;
}

}  // namespace oc::hub
