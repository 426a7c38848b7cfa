// Declarations of the generated Unicode/HTML data in unicode_tables.cpp (written by
// tests/reference/gen_unicode_tables.py from Debian's Python 3.11, `regex` and html.entities).
// Each table reproduces one piece of Python behaviour that OpenCLIP's tokenizer relies on.
#pragma once
#include <cstddef>
#include <cstdint>

namespace oc::text::tables {

// Per-code-point property bits (kPropIndex/kPropBlocks, a two-stage table of 128-cp blocks).
enum : uint16_t {
  kLetter = 1 << 0,         // regex [\p{L}] with IGNORECASE
  kNumber = 1 << 1,         // regex [\p{N}] with IGNORECASE
  kPunct = 1 << 2,          // regex [^\s\p{L}\p{N}] with IGNORECASE
  kSpace = 1 << 3,          // str.isspace (what str.split() splits on)
  kCaseIgnorable = 1 << 4,  // skipped when str.lower decides on a final sigma
  kCased = 1 << 5,          // meaningful only where kCaseIgnorable is not set
  kNfcUnsafe = 1 << 6,      // NFC_Quick_Check != Yes or ccc != 0: NFC may change the text
  kHasLower = 1 << 7,       // str.lower changes it (see kLower; U+03A3 is contextual)
  kDecimal = 1 << 8,        // re's \d (Nd), used by ftfy's terminal-escape pattern
  kFtfy = 1 << 9,           // a character one of ftfy's character fixes changes or removes
};
constexpr int kPropShift = 7;
extern const uint16_t kPropIndex[];
extern const uint16_t kPropBlocks[];
extern const size_t kPropBlockCount;

// A code point mapped to pool[off, off + len).
struct CpMap {
  uint32_t cp;
  uint16_t off;
  uint8_t len;
};
extern const CpMap kLower[];  // str.lower full mappings
extern const uint32_t kLowerPool[];
extern const size_t kLowerCount;
extern const CpMap kDecomp[];  // full canonical decompositions (Hangul syllables excluded)
extern const uint32_t kDecompPool[];
extern const size_t kDecompCount;
extern const CpMap kFtfyMap[];  // ftfy: C1 -> sloppy cp1252, ligatures, width, curly quotes
extern const uint32_t kFtfyMapPool[];
extern const size_t kFtfyMapCount;

struct CccRange {
  uint32_t first, last;
  uint8_t ccc;
};
extern const CccRange kCcc[];  // canonical combining class != 0
extern const size_t kCccCount;

struct Composition {
  uint64_t pair;  // first << 21 | second
  uint32_t composite;
};
extern const Composition kComp[];  // primary composites (Hangul excluded), sorted by pair
extern const size_t kCompCount;

struct Entity {
  const char* name;  // without '&', with ';' where the entity has one
  const char* value;  // UTF-8
};
extern const Entity kHtml5[];  // html.entities.html5, sorted by name (strcmp)
extern const size_t kHtml5Count;
extern const Entity kFtfyUpperEntities[];  // ftfy's extra "&EACUTE;"-style names
extern const size_t kFtfyUpperEntitiesCount;

struct Charref {
  uint32_t num, cp;
};
extern const Charref kInvalidCharrefs[];  // html._invalid_charrefs
extern const size_t kInvalidCharrefsCount;
extern const uint32_t kInvalidCodepoints[];  // html._invalid_codepoints, sorted
extern const size_t kInvalidCodepointsCount;

inline uint16_t props(uint32_t cp) {
  return kPropBlocks[(size_t(kPropIndex[cp >> kPropShift]) << kPropShift) | (cp & ((1u << kPropShift) - 1))];
}

// BERT's classes (tests/reference/gen_bert_tables.py -> unicode_bert_tables.cpp), one byte per
// code point in a two-stage table like kPropIndex/kPropBlocks; used by text/wordpiece.cpp.
enum : uint8_t {
  kBertRemoved = 1 << 0,  // NUL, U+FFFD, Cc/Cf/Co except \t \n \r: dropped by clean_text
  kBertSpace = 1 << 1,    // \t \n \r or White_Space: a word separator
  kBertMn = 1 << 2,       // general category Mn: dropped after NFD (strip_accents)
  kBertPunct = 1 << 3,    // ASCII punctuation or category P*: a word of its own
};
extern const uint16_t kBertIndex[];
extern const uint8_t kBertBlocks[];
extern const size_t kBertBlockCount;

inline uint8_t bert_props(uint32_t cp) {
  return kBertBlocks[(size_t(kBertIndex[cp >> kPropShift]) << kPropShift) | (cp & ((1u << kPropShift) - 1))];
}

}  // namespace oc::text::tables
