// `openclip serve`: the model (and optionally an index) behind a JSON HTTP API on
// cpp-httplib (Debian's libcpp-httplib-dev): embeddings of texts and images, zero-shot
// label probabilities, index search, a search page, health and Prometheus metrics.
// docs/SERVE.md lists the endpoints, limits and error bodies.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace oc::serve {

struct ServeOptions {
  std::string model = "ViT-B-32", weights, precision = "fp32";
  std::string index_dir;  // "" = no search endpoints
  std::string host = "127.0.0.1";
  int port = 8080;        // 0 = any free port (bind() returns it)
  int max_batch = 32, max_wait_ms = 5, max_queue = 256;
  int http_threads = 128;  // concurrent connections served
  size_t max_body = 32u << 20;       // bytes per request body
  int64_t max_pixels = 25'000'000;   // per decoded image (decompression bombs)
  size_t max_text_bytes = 4096;      // per text
  int max_inputs = 256;              // texts, images or labels per request
};

class Server {
 public:
  explicit Server(const ServeOptions& opt);  // loads the model and the index; throws on bad input
  ~Server();
  int bind();   // throws when the address is in use; returns the port
  void run();   // serves until stop(); then finishes the requests in flight and the queue
  void stop();  // callable from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::serve
