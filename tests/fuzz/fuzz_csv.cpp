// libFuzzer target: the CSV/TSV reader (quoting, CRLF, BOM, blank lines) record by record,
// and the column selection a dataset does on top of it. The first byte picks the separator.
#include <vector>

#include "data/csv.h"
#include "fuzz_util.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char sep = "\t,;|"[data[0] % 4];
  data++, size--;
  fuzz::guarded([&] {
    data::CsvReader r(std::make_unique<fuzz::MemStream>(data, size), "fuzz.csv", sep);
    std::vector<std::string> fields;
    for (int i = 0; i < 100000; i++) {
      auto more = r.next(&fields);
      if (!more.ok() || !*more) break;
    }
  });
  std::string path = fuzz::write_input(data, size, ".csv");
  fuzz::guarded([&] {
    auto c = data::read_csv_columns(path, sep, {"filepath", "title"}, {"label"});
    if (c.ok())
      for (const auto& col : c->cols) fuzz::check(int64_t(col.size()) == c->rows || col.empty());
  });
  return 0;
}
