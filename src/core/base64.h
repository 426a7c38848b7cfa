// RFC 4648 base64 (standard alphabet, '=' padding): encoding for data: URIs (the zero-shot
// predictions file embeds example images this way) and decoding for the server's JSON image
// uploads ({"image": "<base64>"} or a data: URI). A few dozen lines: no Debian library we
// already link offers encoding, and OpenSSL's EVP_DecodeBlock would need padding fix-ups and
// accepts garbage silently, where this rejects it.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oc {

std::string base64_encode(std::span<const uint8_t> in);
// nullopt on a character outside the alphabet, bad padding or a bad length. Whitespace is
// skipped; a "data:...;base64," prefix is removed.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view in);

}  // namespace oc
