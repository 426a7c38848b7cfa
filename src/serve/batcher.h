// Dynamic batching across clients: HTTP threads submit prepared inputs (token ids, or images
// resized and cropped to the model's input as uint8) and wait; one worker thread owns the model and runs a forward pass
// over the jobs of one kind that arrived within --max-wait-ms of the oldest, up to --max-batch inputs. Images stay
// uint8 (S x S x 3, a quarter of the floats) until their forward pass: ToTensor + Normalize
// run there, one pass of floats at a time (issue 40, item 8). Each job gets back exactly its
// own rows. A full queue refuses at once (QueueFull -> 503).
#pragma once
#include <atomic>
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
  // Inputs (texts, images) waiting over all jobs; 0: 8 x max_batch. A job alone in the queue
  // is always taken, however large.
  int64_t max_queued_inputs = 0;
};

struct QueueFull : std::runtime_error {
  QueueFull() : std::runtime_error("the request queue is full; retry later") {}
};
struct ShuttingDown : std::runtime_error {
  ShuttingDown() : std::runtime_error("the server is shutting down") {}
};
// The client of a queued job went away: the job was dropped, not computed.
struct ClientGone : std::runtime_error {
  ClientGone() : std::runtime_error("the client went away") {}
};

// While alive, run() calls on this thread belong to a request whose client may go away:
// once `gone` is set, their queued jobs are dropped before the next batch (the server
// sets it around each handler; http::Request::gone).
class CancelScope {
 public:
  explicit CancelScope(std::shared_ptr<std::atomic<bool>> gone);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  std::shared_ptr<std::atomic<bool>> prev_;
};

enum class Kind { Text, Image };

class Batcher {
 public:
  Batcher(InferenceModel& enc, BatcherOptions opt, Metrics* metrics);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // data: n rows of token ids (Text, context_length each) or of images after the eval
  // transform's resize and crop (Image, S*S*3 uint8 each, HWC: preprocess_eval's uint8 form).
  // Blocks until done; returns n rows of embed_dim floats. Throws QueueFull, ShuttingDown,
  // or the model's error.
  std::vector<float> run(Kind kind, std::vector<int32_t> ids, std::vector<uint8_t> hwc, int64_t n);
  // Drops every queued job (its run() throws ShuttingDown), lets the batch in progress
  // finish, and stops the worker. Later run() calls throw ShuttingDown.
  void stop();
  int64_t queue_depth() const;

 private:
  struct Job {
    Kind kind;
    std::vector<int32_t> ids;
    std::vector<uint8_t> hwc;
    int64_t n;
    std::chrono::steady_clock::time_point arrived;
    std::promise<std::vector<float>> done;
    std::shared_ptr<std::atomic<bool>> gone;
  };
  void drop_gone();  // lock held
  void loop();
  std::vector<std::unique_ptr<Job>> take_batch(std::unique_lock<std::mutex>& lock);
  void forward(std::vector<std::unique_ptr<Job>>& jobs);

  InferenceModel& enc_;
  BatcherOptions opt_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> q_;
  int64_t queued_inputs_ = 0;
  bool stopping_ = false;
  std::vector<uint8_t> hwc_;  // the worker's: images of several jobs gathered (forward)
  std::vector<float> pixels_;  // the worker's: one pass's normalized floats (forward)
  std::thread worker_;
};

}  // namespace oc::serve
