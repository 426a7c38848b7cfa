#include "core/json_read.h"

#include "core/limits.h"

namespace oc {

size_t json_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); i++) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        i++;  // the escaped character (\" included) is not the end of the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      depth--;  // unbalanced text is the parser's error to report
    }
  }
  return std::string_view::npos;
}

nlohmann::json parse_json(std::string_view text, const std::string& what) {
  if (size_t at = json_too_deep(text); at != std::string_view::npos)
    OC_USER_ERROR("{}: not valid JSON here: at byte offset {}: arrays and objects nested more than {} deep", what, at,
                  kJsonMaxDepth);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message ends with the text last read (a raw byte at worst): cut it. e.byte
    // counts from 1 (the end of a cut file is its size + 1).
    std::string why = json_error_text(e.what());
    why = why.substr(0, why.find("; last read"));
    OC_USER_ERROR("{}: not valid JSON: at byte offset {}: {}", what, e.byte ? e.byte - 1 : 0, why);
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number that overflows a double (1e400)
    // nlohmann gives no position here; the message quotes the number ("... parsing '1e400'").
    std::string why = json_error_text(e.what());
    size_t q = why.find('\''), q2 = q == std::string::npos ? q : why.find('\'', q + 1);
    size_t at = q2 == std::string::npos ? q2 : text.find(why.substr(q + 1, q2 - q - 1));
    if (at == std::string_view::npos) OC_USER_ERROR("{}: not valid JSON: {}", what, why);
    OC_USER_ERROR("{}: not valid JSON: at byte offset {}: {}", what, at, why);
  }
}

}  // namespace oc
