// libFuzzer target: Parquet files as URL lists are read (footer, schema, row groups, every
// string column: page headers, dictionary and data pages, levels, snappy/gzip/zstd).
#include "fuzz_util.h"
#include "io/parquet.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::write_input(data, size, ".parquet");
  fuzz::guarded([&] {
    auto f = io::ParquetFile::open(path);
    if (!f.ok()) return;
    for (const std::string& col : f->column_names()) {
      auto values = f->read_strings(col);
      if (values.ok()) fuzz::check(int64_t(values->size()) == f->num_rows());
    }
  });
  return 0;
}
