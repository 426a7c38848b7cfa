// Dynamic batching across clients: HTTP threads submit prepared inputs (pixels or token ids)
// and wait; one worker thread owns the model and runs a forward pass over the jobs of one
// kind that arrived within --max-wait-ms of the oldest, up to --max-batch inputs. Each job
// gets back exactly its own rows. A full queue refuses at once (QueueFull -> 503).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "model/inference.h"
#include "serve/metrics.h"

namespace oc::serve {

struct BatcherOptions {
  int max_batch = 32;    // inputs per forward pass
  int max_wait_ms = 5;   // how long the oldest job waits for company
  int max_queue = 256;   // jobs waiting (not yet in a forward pass)
};

struct QueueFull : std::runtime_error {
  QueueFull() : std::runtime_error("the request queue is full; retry later") {}
};
struct ShuttingDown : std::runtime_error {
  ShuttingDown() : std::runtime_error("the server is shutting down") {}
};

enum class Kind { Text, Image };

class Batcher {
 public:
  Batcher(InferenceModel& enc, BatcherOptions opt, Metrics* metrics);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // data: n rows of token ids (Text, context_length each) or pixels (Image, 3*S*S each).
  // Blocks until done; returns n rows of embed_dim floats. Throws QueueFull, ShuttingDown,
  // or the model's error.
  std::vector<float> run(Kind kind, std::vector<int32_t> ids, std::vector<float> pixels, int64_t n);
  // Finishes every queued job, then stops the worker. Later run() calls throw ShuttingDown.
  void stop();
  int64_t queue_depth() const;

 private:
  struct Job {
    Kind kind;
    std::vector<int32_t> ids;
    std::vector<float> pixels;
    int64_t n;
    std::chrono::steady_clock::time_point arrived;
    std::promise<std::vector<float>> done;
  };
  void loop();
  std::vector<std::unique_ptr<Job>> take_batch(std::unique_lock<std::mutex>& lock);
  void forward(std::vector<std::unique_ptr<Job>>& jobs);

  InferenceModel& enc_;
  BatcherOptions opt_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> q_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace oc::serve
