// The registry of backends: which this build knows, and the instance a --device value selects.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/backend.h"

namespace oc::ops {

struct BackendInfo {
  std::string name;         // "ref", "cpu", "cuda"
  std::string description;  // one line for `openclip info`
  bool available;           // false: registered but unusable here (no GPU); reason in description
};
// Every backend this build knows, in registration order.
std::vector<BackendInfo> backend_list();
// A new instance of the named backend. Unknown or unavailable names are a user error that
// lists the available ones.
std::unique_ptr<Backend> make_backend(std::string_view name);
// The process-wide instance of the named backend (created on first use, never destroyed, so
// buffers of long-lived objects can outlive any scope). default_backend() is "cpu".
Backend& backend(std::string_view name);
// The backend name a --device value selects: the name itself when registered and available
// ("cuda:0" selects "cuda"). Anything else is a user error listing the available names; for
// "cuda..." it names what is missing: "built without CUDA" or "no visible GPU".
std::string resolve_device(std::string_view device);

}  // namespace oc::ops
