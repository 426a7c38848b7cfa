// libFuzzer target: the ZIP reader torch checkpoints are opened with (end records, zip64,
// central directory, local headers, payload reads with their CRC-32).
#include "fuzz_util.h"
#include "io/zip.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::write_input(data, size, ".zip");
  fuzz::guarded([&] {
    auto z = io::ZipReader::open(path);
    if (!z.ok()) return;
    for (const io::ZipEntry& e : z->entries()) {
      fuzz::check(e.data_offset + e.size <= size);  // open() bounds-checks every entry
      fuzz::check(z->find(e.name) != nullptr);
      auto bytes = z->read_all(e);
      if (bytes.ok()) fuzz::check(bytes->size() == e.size);
    }
  });
  return 0;
}
