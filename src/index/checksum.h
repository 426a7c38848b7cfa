// The weights' identity recorded in an index: SHA-256 of the weights file (OpenSSL), so an
// index built with other weights is refused rather than searched with the wrong model.
#pragma once
#include <string>

namespace oc::index {

// Lower-case hex SHA-256 of the file; "random-init" for "" (random weights, seed 0).
// Throws oc::Error naming the path when it cannot be read.
std::string weights_checksum(const std::string& path);
std::string sha256_hex(const void* data, size_t n);

}  // namespace oc::index
