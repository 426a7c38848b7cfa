#include "text/canonicalize.h"

#include <cstring>

#include "text/unicode.h"

namespace oc::text {
namespace {

// Python's string.punctuation.
bool is_ascii_punct(unsigned char c) {
  return c != 0 && c < 0x80 && std::strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c);
}

}  // namespace

Status clean_canonicalize(std::string_view in, std::string& out, CleanScratch& t) {
  // clean_whitespace = basic_clean + whitespace collapse + strip; collapsing before
  // canonicalize_text changes nothing (it collapses again, and neither punctuation removal nor
  // lower() creates whitespace), and leaves " " as the only whitespace character.
  std::string cleaned;
  if (Status st = clean_whitespace(in, cleaned, t); !st.ok()) return st;
  std::string kept;  // "_" -> " ", punctuation removed (ASCII bytes: safe inside UTF-8)
  kept.reserve(cleaned.size());
  bool ascii = true;
  for (unsigned char c : cleaned) {
    if (c == '_')
      kept.push_back(' ');
    else if (!is_ascii_punct(c))
      kept.push_back(char(c));
    ascii &= c < 0x80;
  }
  if (ascii) {
    for (char& c : kept)
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  } else {  // str.lower() after the removal, as Python: Final_Sigma looks at the neighbours
    utf8_to_u32(kept, t.a);
    lower(t.a, t.b);
    kept.clear();
    u32_to_utf8(t.b, kept);
  }
  out.clear();  // runs of " " -> one, stripped
  for (char c : kept) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return Status::success();
}

}  // namespace oc::text
