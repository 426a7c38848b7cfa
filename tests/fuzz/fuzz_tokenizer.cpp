// libFuzzer target for the tokenizer: arbitrary bytes as a caption (invalid UTF-8 must be a
// returned error, never a crash) and as token ids to decode. Checks the invariants that hold
// for every input. Needs the vocabulary (same lookup as the CLI: $OPENCLIP_VOCAB, data dirs).
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DOPENCLIP_FUZZ=ON \
//     -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address && cmake --build build-fuzz --target fuzz_tokenizer
//   build-fuzz/fuzz_tokenizer -max_total_time=180 corpus_dir/
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace {
void check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const oc::Tokenizer tok = oc::Tokenizer::load_default();
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto enc = tok.encode(text);
  std::vector<int32_t> row(16, -1);  // a short context exercises truncation often
  oc::Status st = tok.tokenize(text, row);
  check(enc.ok() == st.ok());
  if (!st.ok()) {
    for (int32_t id : row) check(id == 0);
    return 0;
  }
  for (int32_t id : *enc) check(id >= 0 && id < tok.vocab_size());
  // [sot] + ids + [eot], truncated with the last forced to eot, then zeros.
  check(row[0] == oc::kSotToken);
  const size_t n = enc->size();
  if (n + 2 <= row.size()) {
    for (size_t i = 0; i < n; i++) check(row[i + 1] == (*enc)[i]);
    check(row[n + 1] == oc::kEotToken);
    for (size_t i = n + 2; i < row.size(); i++) check(row[i] == 0);
  } else {
    for (size_t i = 1; i + 1 < row.size(); i++) check(row[i] == (*enc)[i - 1]);
    check(row.back() == oc::kEotToken);
  }
  (void)tok.decode(row);

  // The bytes as little-endian 16-bit ids.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size; i += 2) ids.push_back(int32_t((data[i] | (data[i + 1] << 8)) % tok.vocab_size()));
  std::string s = tok.decode(ids);
  (void)s;
  return 0;
}
