// One way to read JSON that a user or a file supplies (model configs, the hub's
// open_clip_config.json, demo recipes, tokenizer.json, checkpoint metadata): the text is
// scanned for its nesting depth before nlohmann parses it, so a document nested 300,000 deep is
// an error naming the file and byte offset instead of a stack overflow in whatever walks,
// copies or dumps the tree later (nlohmann's own dump, copy and our readers recurse per level).
// Integers are read into their own type: 2^32 + 2 is refused for an int32, not truncated to 2.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/check.h"

namespace oc {

// The deepest nesting of arrays and objects accepted. Every file this project reads nests
// under 10 levels (tokenizer.json: 6, model configs: 3); 128 leaves room for any hand-written
// file while keeping each recursive walk's stack use (a few hundred bytes a level) far from
// the 8 MiB main stack and the 2 MiB of OpenMP and server threads.
inline constexpr int kJsonMaxDepth = 128;

// The byte offset where `text` first nests deeper than `max_depth`, or npos. Strings (with
// their escapes) are skipped; the rest of the syntax is left to the parser.
size_t json_too_deep(std::string_view text, int max_depth = kJsonMaxDepth);

// Parses `text`; `what` names it in errors ("tokenizer.json", "model config x.json"). Throws
// oc::Error "<what>: not valid JSON: at byte offset N: <reason>" for a syntax error, a number
// that overflows a double (1e400) or nesting deeper than kJsonMaxDepth.
nlohmann::json parse_json(std::string_view text, const std::string& what);

// j as an integer of type T, or oc::Error "<where>: <key> must be an integer from MIN to MAX,
// got <j>" (a float, a string, or a value outside T: no truncation).
template <class T>
T json_int(const nlohmann::json& j, const std::string& where, std::string_view key) {
  constexpr auto lo = std::numeric_limits<T>::min();
  constexpr auto hi = std::numeric_limits<T>::max();
  bool ok = false;
  if (j.is_number_unsigned()) {
    ok = j.get<uint64_t>() <= uint64_t(hi);
  } else if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if constexpr (std::is_signed_v<T>)
      ok = v >= int64_t(lo) && v <= int64_t(hi);
    else
      ok = v >= 0 && uint64_t(v) <= uint64_t(hi);
  }
  if (!ok)
    OC_USER_ERROR("{}: {} must be an integer from {} to {}, got {}", where, key, lo, hi, j.dump().substr(0, 100));
  return j.get<T>();
}

}  // namespace oc
