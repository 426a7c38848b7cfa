// libFuzzer target: TensorBoard event files (TFRecord framing with masked CRC-32C, Event
// protobufs: scalars, tensors, session logs) with and without restart semantics.
#include "fuzz_util.h"
#include "io/tfevents.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  fuzz::guarded([&] {
    for (bool restarts : {false, true}) {
      auto scan = io::scan_events(in, restarts, "fuzz.tfevents");
      if (scan.ok()) fuzz::check(scan->complete_bytes <= size);
    }
  });
  return 0;
}
