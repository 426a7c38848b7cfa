// libFuzzer target: a spiece.model (SentencePiece ModelProto) through the validation that now
// runs before libsentencepiece reads it (issue 42 #2): protobuf framing, piece sizes, the
// normalizer's and denormalizer's precompiled charsmap walked as the library's trie walk reads
// it. A model that passes is handed to the library and encodes a few texts.
#include "fuzz_util.h"
#include "text/spm_model.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::guarded([&] {
    text::SpmModel m(bytes, "fuzz.model");
    std::vector<int32_t> ids;
    for (const char* text : {"a dog on the beach", "  x\t\u00e9\uFB01 \u3000", ""}) {
      m.encode(text, ids);
      for (int32_t id : ids) fuzz::check(id >= 0 && id < m.vocab_size());
    }
  });
  return 0;
}
