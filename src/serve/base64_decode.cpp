#include "serve/base64_decode.h"

namespace oc::serve {

std::optional<std::vector<uint8_t>> base64_decode(std::string_view in) {
  if (in.rfind("data:", 0) == 0) {
    const size_t comma = in.find(',');
    if (comma == std::string_view::npos || in.substr(0, comma).find(";base64") == std::string_view::npos) return std::nullopt;
    in.remove_prefix(comma + 1);
  }
  std::vector<uint8_t> out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  size_t chars = 0;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    ++chars;
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') { ++pad; continue; }
    else return std::nullopt;
    if (pad) return std::nullopt;  // data after padding
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t(acc >> bits));
    }
  }
  if (pad > 2 || (pad && chars % 4 != 0) || chars % 4 == 1) return std::nullopt;
  return out;
}

}  // namespace oc::serve
