// A tiny op profiler for `openclip bench`: named scopes accumulate wall time when enabled.
// Disabled (the default) it costs one branch per scope.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/timer.h"

namespace oc::profile {

void set_enabled(bool on);
bool enabled();
// A device backend runs asynchronously: with a sync function set, every scope waits for the
// device at its start and end, so its time is the device's (bench's OPENCLIP_PROFILE_SYNC=1).
void set_sync(std::function<void()> sync);
void sync_point();
void reset();
void add(const char* name, double seconds);
struct Entry {
  std::string name;
  double seconds;
  long calls;
};
std::vector<Entry> report();  // sorted by time, descending

class Scope {
 public:
  explicit Scope(const char* name)
      : name_(enabled() ? name : nullptr), t0_(name_ ? (sync_point(), now_seconds()) : 0) {}
  ~Scope() {
    if (name_) {
      sync_point();
      add(name_, now_seconds() - t0_);
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
  double t0_;
};

}  // namespace oc::profile

#define OC_PROFILE_CAT2(a, b) a##b
#define OC_PROFILE_CAT(a, b) OC_PROFILE_CAT2(a, b)
#define OC_PROFILE(name) ::oc::profile::Scope OC_PROFILE_CAT(oc_prof_, __LINE__)(name)
