// Text cleaning of OpenCLIP's SimpleTokenizer (clean="lower"):
//   ftfy.fix_text -> html.unescape(html.unescape(.)) -> strip -> " ".join(split()) -> lower().
// ftfy is reproduced step by step (ftfy 6.3: HTML entities, C1 controls, Latin ligatures,
// character width, curly quotes, line breaks, terminal escapes, control characters, NFC, to a
// fixed point, line by line) except its mojibake detector; see docs/TOKENIZER.md.
#pragma once
#include <string>
#include <string_view>

#include "core/result.h"

namespace oc::text {

// Reusable buffers so that cleaning does not allocate in steady state.
struct CleanScratch {
  std::u32string a, b, seg, tmp, out;
};

// `in` must be valid UTF-8 (the tokenizer validates first). Fails only where Python raises:
// a decimal character reference with more than 4300 digits (int() refuses it).
Status clean_lower(std::string_view in, std::string& out, CleanScratch& scratch);

// The fast path alone: cleans pure ASCII text without '&' or control characters other than
// \t \n \f \r (for it ftfy and html.unescape change nothing) and returns true; returns false,
// `out` unspecified, for anything else. Needs no UTF-8 validation.
bool clean_lower_ascii(std::string_view in, std::string& out);

// clean="whitespace" (OpenCLIP's HFTokenizer default): the same without lower().
Status clean_whitespace(std::string_view in, std::string& out, CleanScratch& scratch);
bool clean_whitespace_ascii(std::string_view in, std::string& out);

// The steps, exposed for tests.
void ftfy_fix_text(std::u32string& text, CleanScratch& scratch);
Status html_unescape(std::u32string_view in, std::u32string& out);  // Python's html.unescape

}  // namespace oc::text
