// SHA-256 (OpenSSL) of the files an index records: the weights file, so that an index built
// with other weights is refused rather than searched with the wrong model, and each file of
// the index itself (meta.json's "files"), so that a changed or damaged file is refused.
#pragma once
#include <string>
#include <string_view>

namespace oc::index {

// Lower-case hex SHA-256 of a regular file, read in 1 MiB pieces up to the size it had when
// opened (io::ReadFile: /dev/zero or a FIFO is refused at once, never read forever).
// Throws oc::Error naming the path and `what` ("the weights") when it cannot be read.
std::string file_sha256(const std::string& path, std::string_view what);
// The SHA-256 of bytes in memory (lowercase hex).
std::string bytes_sha256(std::string_view bytes);
// file_sha256 of the weights; "random-init" for "" (random weights, seed 0).
std::string weights_checksum(const std::string& path);

}  // namespace oc::index
