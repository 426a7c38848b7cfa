#include "serve/metrics.h"

#include <fmt/format.h>

namespace oc::serve {
namespace {
const std::vector<double> kLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
}  // namespace

void Histogram::observe(double v) {
  size_t b = 0;
  while (b < bounds_.size() && v > bounds_[b]) ++b;
  ++counts_[b];
  sum_ += v;
  ++n_;
}

std::string Histogram::render(const std::string& name, const std::string& labels) const {
  std::string out, sep = labels.empty() ? "" : ",";
  uint64_t cum = 0;
  for (size_t b = 0; b <= bounds_.size(); ++b) {
    cum += counts_[b];
    const std::string le = b < bounds_.size() ? fmt::format("{}", bounds_[b]) : "+Inf";
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, le, cum);
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, braces, sum_, name, braces, n_);
  return out;
}

void Metrics::request(const std::string& endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{endpoint, status}];
  latency_.try_emplace(endpoint, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::batch(const std::string& kind, int items) {
  std::lock_guard<std::mutex> l(mu_);
  batch_.try_emplace(kind, kBatchBounds).first->second.observe(items);
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string o;
  o += "# HELP openclip_requests_total HTTP requests by endpoint and status code.\n# TYPE openclip_requests_total counter\n";
  for (auto& [k, n] : requests_) o += fmt::format("openclip_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", k.first, k.second, n);
  o += "# HELP openclip_request_duration_seconds Request latency by endpoint.\n# TYPE openclip_request_duration_seconds histogram\n";
  for (auto& [k, h] : latency_) o += h.render("openclip_request_duration_seconds", fmt::format("endpoint=\"{}\"", k));
  o += "# HELP openclip_batch_size Inputs per model forward pass.\n# TYPE openclip_batch_size histogram\n";
  for (auto& [k, h] : batch_) o += h.render("openclip_batch_size", fmt::format("kind=\"{}\"", k));
  o += fmt::format("# HELP openclip_queue_depth Requests waiting for the model.\n# TYPE openclip_queue_depth gauge\n"
                   "openclip_queue_depth {}\n", queue_depth_.load());
  o += fmt::format("# HELP openclip_queue_rejected_total Requests refused with 503 because the queue was full.\n"
                   "# TYPE openclip_queue_rejected_total counter\nopenclip_queue_rejected_total {}\n", rejected_.load());
  return o;
}

}  // namespace oc::serve
