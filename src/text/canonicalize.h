// OpenCLIP 2.24's clean="canonicalize" (the SigLIP configs' tokenizer_kwargs):
//   canonicalize_text(basic_clean(x)), where basic_clean = ftfy.fix_text, html.unescape twice,
//   strip, and canonicalize_text = replace "_" by " ", remove string.punctuation (the 32 ASCII
//   punctuation characters) with str.translate, str.lower(), re.sub(r"\s+", " "), strip.
// (big_vision's prompt-engineering canonicalization, which OpenCLIP copied.)
#pragma once
#include <string>
#include <string_view>

#include "core/result.h"
#include "text/clean.h"

namespace oc::text {

// `in` must be valid UTF-8. Fails only where basic_clean does (a 4300-digit character reference).
Status clean_canonicalize(std::string_view in, std::string& out, CleanScratch& scratch);

}  // namespace oc::text
