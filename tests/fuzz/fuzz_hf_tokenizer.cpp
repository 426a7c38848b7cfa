// libFuzzer target: a Hugging Face tokenizer.json through its whole pipeline (issue 42): the
// JSON, the normalizers (Precompiled charsmap, Replace, Strip, Prepend), the pre-tokenizers,
// the model (Unigram or BPE) and the post-processor at load, then texts encoded through them. The input
// is the file, optionally followed by "\n\x01\n" and one more text to encode. Every loaded
// tokenizer must encode each valid UTF-8 text to ids below its id_limit, or return an error
// (growth over the cap); never crash, hang or allocate without bound.
#include <string_view>

#include "fuzz_util.h"
#include "text/hf_tokenizer_json.h"
#include "text/unicode.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view extra;
  if (size_t sep = in.find("\n\x01\n"); sep != std::string_view::npos) {
    extra = in.substr(sep + 3);
    in = in.substr(0, sep);
  }
  fuzz::guarded([&] {
    text::HfTokenizerJson tok(in, "fuzz.json");
    const int32_t limit = tok.id_limit();
    fuzz::check(limit >= tok.vocab_size() && tok.vocab_size() > 0);
    std::vector<int32_t> ids;
    for (std::string_view text : {std::string_view("a dog on the beach"), std::string_view("  x\t\u00e9\uFB01 \u3000"),
                                  std::string_view(""), extra}) {
      if (text::utf8_invalid_offset(text) != std::string_view::npos) continue;  // encode's precondition
      if (!tok.encode(text, ids).ok()) continue;
      for (int32_t id : ids) fuzz::check(id >= 0 && id < limit);
    }
  });
  return 0;
}
