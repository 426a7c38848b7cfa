// RFC 4648 base64 (standard alphabet, '=' padding) for data: URIs: the zero-shot
// predictions file embeds example images this way. A dozen lines; no Debian library we
// already link offers it.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace oc {

std::string base64_encode(std::span<const uint8_t> in);

}  // namespace oc
