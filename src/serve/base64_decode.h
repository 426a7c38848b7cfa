// RFC 4648 base64 decoding for JSON image uploads ({"image": "<base64>"} or a data: URI).
// core/base64 only encodes; OpenSSL's EVP_DecodeBlock would need padding fix-ups and
// accepts garbage silently, so this is the dozen lines that reject it.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace oc::serve {

// nullopt on a character outside the alphabet, bad padding or a bad length. Whitespace is
// skipped; a "data:...;base64," prefix is removed.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view in);

}  // namespace oc::serve
