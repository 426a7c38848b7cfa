// libFuzzer target: the streaming tar reader (ustar, GNU, pax; numbers, long names) and
// webdataset's grouping of members into samples on top of it (keys, extensions, OpenCLIP's
// field selection, .cls labels). Seeds: tests/fuzz/corpus/fuzz_tar (make_seeds.py).
#include <vector>

#include "data/stats.h"
#include "data/tar.h"
#include "data/webdataset.h"
#include "fuzz_util.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader alone, over an in-memory stream read in uneven pieces.
  data::TarReader r(std::make_unique<fuzz::MemStream>(data, size), "fuzz.tar");
  data::TarMember m;
  for (int i = 0; i < 10000; i++) {
    auto more = r.next(&m);
    if (!more.ok() || !*more) break;
    fuzz::check(m.data_offset >= m.offset && m.data_offset <= size);
    if (i % 2) {
      auto bytes = r.read_data();
      if (bytes.ok()) fuzz::check(bytes->size() == m.size);
    }
  }
  // webdataset samples from the same bytes as a shard file.
  std::string path = fuzz::write_input(data, size, ".tar");
  data::DataStats stats;
  stats.set_quiet(true);
  bool given = false;
  data::TarSampleStream s([&]() -> std::optional<std::string> {
    if (given) return std::nullopt;
    given = true;
    return path;
  }, &stats);
  for (int i = 0; i < 10000; i++) {
    auto sample = s.next();
    if (!sample) break;
    data::Skip why;
    auto sel = data::select_fields(*sample, &why);
    if (sel && sel->cls) (void)data::parse_label(std::string_view(reinterpret_cast<const char*>(sel->cls->data()), sel->cls->size()));
  }
  return 0;
}
