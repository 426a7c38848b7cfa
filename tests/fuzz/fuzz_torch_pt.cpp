// libFuzzer target: torch.save checkpoints end to end (zip container, data.pkl through the
// pickle VM, storages read and views materialized) and the state_dict extraction.
#include "fuzz_util.h"
#include "io/torch_pt.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::write_input(data, size, ".pt");
  fuzz::guarded([&] {
    auto v = io::load_pt(path);
    if (!v.ok()) return;
    auto sd = io::extract_state_dict(*v);
    if (!sd.ok()) return;
    for (const auto& [name, t] : *sd) fuzz::check(t != nullptr);
  });
  return 0;
}
