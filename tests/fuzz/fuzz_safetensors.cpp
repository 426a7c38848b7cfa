// libFuzzer target: safetensors files (length prefix, JSON header with every check of the
// reference implementation, tensor reads). The input is used twice: as a whole file, and
// as the JSON header alone (parse_safetensors_header) so the fuzzer reaches the JSON checks
// without having to find the length prefix first.
#include "fuzz_util.h"
#include "io/safetensors.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::guarded([&] {
    auto h = io::parse_safetensors_header(std::span<const uint8_t>(data, size), 8 + size + 4096, "fuzz.json");
    if (h.ok())
      for (const auto& e : h->tensors) fuzz::check(e.begin <= e.end && e.end <= 4096);
  });
  std::string path = fuzz::write_input(data, size, ".safetensors");
  fuzz::guarded([&] {
    auto st = io::read_safetensors(path);
    if (!st.ok()) return;
    for (const auto& [name, t] : st->tensors) (void)t;
  });
  return 0;
}
