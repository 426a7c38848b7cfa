// libFuzzer target: the Thrift compact protocol as Parquet uses it (FileMetaData footer,
// page headers, skipping of unknown fields) and the RLE/bit-packed hybrid decoder, on raw
// bytes, so the fuzzer works on them directly rather than through a whole file.
#include <vector>

#include "fuzz_util.h"
#include "io/parquet.h"
#include "io/parquet_thrift.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  fuzz::guarded([&] {
    (void)io::parse_parquet_footer(in);
    auto ph = io::parse_page_header(in);
    if (ph.ok()) fuzz::check(ph->header_size <= size);
    if (size > 2) {
      std::vector<uint32_t> out;
      int bit_width = data[0] % 33;
      size_t count = data[1] * 16;
      if (io::decode_rle_hybrid(in.subspan(2), bit_width, count, &out)) fuzz::check(out.size() >= count);
    }
  });
  return 0;
}
