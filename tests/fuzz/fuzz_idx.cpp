// libFuzzer target: Fashion-MNIST IDX files (images and labels; plain or gzipped, as gzopen
// reads both). The first byte picks images or labels and the item limit.
#include "data/fashion_mnist.h"
#include "fuzz_util.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int64_t limit = (data[0] & 0x7e) ? (data[0] >> 1) : -1;
  std::string path = fuzz::write_input(data + 1, size - 1, ".idx");
  fuzz::guarded([&] {
    if (data[0] & 1) {
      auto im = data::read_idx_images(path, limit);
      if (im.ok()) fuzz::check(im->pixels.size() == size_t(im->count) * im->rows * im->cols);
    } else {
      auto lab = data::read_idx_labels(path, limit);
      if (lab.ok()) fuzz::check(limit < 0 || int64_t(lab->size()) <= limit);
    }
  });
  return 0;
}
