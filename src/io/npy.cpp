#include "io/npy.h"

#include <vector>

#include "core/check.h"
#include "core/fs.h"

namespace oc::io {

void write_npy(const std::string& path, const TensorView& t) {
  const char* descr = nullptr;
  switch (t.dtype) {
    case DType::F32: descr = "<f4"; break;
    case DType::F64: descr = "<f8"; break;
    case DType::I64: descr = "<i8"; break;
    case DType::I32: descr = "<i4"; break;
    default: OC_FAIL("write_npy: dtype {} not supported", dtype_name(t.dtype));
  }
  // numpy's spelling: "(3, 32)", "(5,)", "()"
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  shape += t.shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // magic(6) + version(2) + header_len(2) + header, padded with spaces to 64 bytes, ending in \n
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::vector<uint8_t> head = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xff),
                               uint8_t(header.size() >> 8)};
  head.insert(head.end(), header.begin(), header.end());
  fs::write_atomic(path, [&](const fs::Sink& sink) {
    sink(head);
    sink({static_cast<const uint8_t*>(t.data), t.nbytes()});
  });
}

}  // namespace oc::io
