#include "core/base64.h"

namespace oc {

std::string base64_encode(std::span<const uint8_t> in) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = uint32_t(in[i]) << 16 | uint32_t(in[i + 1]) << 8 | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (i < in.size()) {  // 1 or 2 bytes left: 2 or 3 symbols, then padding to 4
    const uint32_t v = uint32_t(in[i]) << 16 | (i + 1 < in.size() ? uint32_t(in[i + 1]) << 8 : 0);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

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

}  // namespace oc
