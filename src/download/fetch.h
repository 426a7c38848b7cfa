// Concurrent HTTP(S) fetching with libcurl's multi interface, one thread driving many
// transfers: redirects followed (bounded), a total timeout per attempt, a body size limit,
// retries, and img2dataset's X-Robots-Tag opt-out. Every failure is a per-URL error
// message, never an exception.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oc::download {

struct FetchOptions {
  int concurrency = 64;        // transfers in flight at once
  double timeout_s = 10;       // whole attempt (connect + transfer), as a total
  int retries = 0;             // extra attempts after a failure (no backoff, as img2dataset)
  int64_t max_bytes = 32 << 20;  // a body above this fails (bounds memory per transfer)
  int max_redirects = 10;
  std::string user_agent;
  std::string user_agent_token;          // matches "<token>:" X-Robots-Tag prefixes
  std::vector<std::string> disallowed;   // lower-case directives that opt an image out
};

// "Mozilla/5.0 (X11; Ubuntu; ...) Firefox/72.0" (+ " (compatible; <token>; +https://github.com/rom1504/img2dataset)")
std::string default_user_agent(const std::string& token);

// img2dataset's is_disallowed for one X-Robots-Tag value: "[ua-token:] d1, d2".
bool robots_disallowed(const std::string& header_value, const std::string& token,
                       const std::vector<std::string>& disallowed);

struct Fetched {
  size_t index = 0;
  std::vector<uint8_t> body;
  std::string error;  // empty on success
};

class Fetcher {
 public:
  explicit Fetcher(FetchOptions o);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  void add(size_t index, const std::string& url);
  size_t in_flight() const;
  // Drives the transfers for up to wait_ms and returns those that finished (after retries).
  std::vector<Fetched> poll(int wait_ms);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::download
