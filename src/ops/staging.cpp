#include "ops/staging.h"

namespace oc::ops {

float* Staging::room(size_t floats) {
  if (buf_.floats() < floats) {
    buf_.reset();  // the old buffer goes before the larger one is asked for
    buf_ = be_.alloc_floats(floats, what_, /*zero=*/false);
  }
  return buf_.f32();
}

const float* Staging::upload(std::span<const float> host) {
  out_ = {};
  if (be_.host_memory()) return host.data();
  float* d = room(host.size());
  be_.copy_from_host(d, host.data(), host.size_bytes());
  return d;
}

float* Staging::output(std::span<float> host) {
  out_ = host;
  return be_.host_memory() ? host.data() : room(host.size());
}

void Staging::download() {
  if (!be_.host_memory() && !out_.empty()) be_.copy_to_host(out_.data(), buf_.f32(), out_.size_bytes());
  out_ = {};
}

}  // namespace oc::ops
