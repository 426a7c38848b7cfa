// Server metrics in Prometheus' text exposition format (version 0.0.4): requests by
// endpoint and status, request latency and batch-size histograms, queue depth and rejects.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace oc::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}
  void observe(double v);
  // name{labels,le="..."} lines plus _sum and _count; labels: "" or `k="v"`.
  std::string render(const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last = +Inf
  double sum_ = 0;
  uint64_t n_ = 0;
};

class Metrics {
 public:
  void request(const std::string& endpoint, int status, double seconds);
  void batch(const std::string& kind, int items);
  void rejected() { rejected_.fetch_add(1); }
  void set_queue_depth(int64_t d) { queue_depth_.store(d); }
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_, batch_;
  std::atomic<int64_t> queue_depth_{0};
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace oc::serve
