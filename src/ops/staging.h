// Host arrays handed to the ops of a backend, for callers whose data lives on the host (the
// eval's similarity scores and validation loss: their features come out of Clip::encode_*,
// their rankings and reports run on the host). On a host-memory backend (ref, cpu) the op
// reads and writes the host array itself: nothing is copied, as CommIO and Backend::prefetch
// pass host memory through. On another backend (cuda; the guarded test backend) a Staging
// keeps one buffer of that backend, grown to the largest array asked for and reused, that
// upload() fills and download() copies back.
#pragma once
#include <span>
#include <string>

#include "ops/backend.h"

namespace oc::ops {

class Staging {
 public:
  // `what` names the buffer in an allocation error ("retrieval text features").
  Staging(Backend& be, std::string what) : be_(be), what_(std::move(what)) {}
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // Memory of the backend holding `host`, valid until the next upload/output call on this
  // Staging. Where the backend reads host memory it is host.data(): `host` must then stay
  // unchanged while the ops that read it run.
  const float* upload(std::span<const float> host);
  // Memory of the backend for ops to write host.size() floats into; download() then brings
  // them into `host` (which must outlive that call).
  float* output(std::span<float> host);
  void download();

 private:
  float* room(size_t floats);
  Backend& be_;
  std::string what_;
  Buffer buf_;
  std::span<float> out_;
};

}  // namespace oc::ops
