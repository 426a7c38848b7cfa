// `openclip serve`: the model (and optionally an index) behind a JSON HTTP API on our own
// HTTP/1.1 layer (serve/http_server.h): embeddings of texts and images, zero-shot label
// probabilities, index search, a search page, health and Prometheus metrics.
// docs/SERVE.md lists the endpoints, limits, access rules and error bodies.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/precision.h"

namespace oc::serve {

struct ServeOptions {
  std::string model = "ViT-B-32", weights;
  Precision precision = Precision::Fp32;
  std::string int8_scales;     // --int8-scales (InferenceOptions::int8_scales)
  std::string device = "cpu";  // --device (ops::resolve_device)
  std::string index_dir;  // "" = no search endpoints
  std::string host = "127.0.0.1";
  int port = 8080;        // 0 = any free port (bind() returns it)
  int max_batch = 32, max_wait_ms = 5;
  int max_queue = 256;     // requests handed to the handler threads and not answered (503 above)
  int http_threads = 128;  // handler threads: parse, decode, tokenize, wait for the model
  int max_connections = 1000;
  int max_connections_per_client = 0;  // per client address; 0: max_connections / 8 (at least 8)
  size_t max_body = 32u << 20;       // bytes per request body
  size_t max_buffered_body = 1u << 30;  // body bytes held over all connections (503 above)
  int64_t max_pixels = 25'000'000;   // per decoded image (decompression bombs)
  int64_t max_request_pixels = 100'000'000;  // decoded pixels per request
  size_t max_text_bytes = 4096;      // per text
  size_t max_request_text_bytes = 262144;  // all texts of a request
  int max_inputs = 256;              // texts, images or labels per request
  double header_timeout_s = 10, body_timeout_s = 60, drain_seconds = 10;
  double min_body_rate = 1024;            // bytes/s a body must keep up after a 2 s grace (408 below); 0: none
  double rate_limit = 0, rate_burst = 0;  // requests/s per client address (429 above); 0: no limit
  size_t max_unsent = 256u << 20;         // response bytes waiting for slow readers, all connections
  // /v1/embeddings {"image": "https://..."}: fetched only with allow_image_urls, within the
  // timeout, --max-body-bytes and 5 redirects; private addresses only with allow_private_image_urls.
  bool allow_image_urls = false, allow_private_image_urls = false;
  double image_url_timeout_s = 10;
  std::string api_key;               // "" = none (refused on a non-loopback host unless insecure_no_auth)
  bool insecure_no_auth = false;
  std::vector<std::string> allowed_hosts, cors_origins;
};

class Server {
 public:
  // Checks the options (a non-loopback host needs a key), loads the model and the index;
  // throws on bad input.
  explicit Server(const ServeOptions& opt);
  ~Server();
  int bind();   // throws when the address is in use; returns the port
  // Serves until stop(); then stops accepting, answers what is in progress and closes what
  // is left after drain_seconds; then finishes the model's queue.
  void run();
  void stop();  // callable from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::serve
