// Streaming digests for verifying downloads: SHA-256 (the etag of a hub file stored with Git
// LFS, and OpenCLIP's checksum of URL downloads) and git's blob SHA-1 (the etag of a hub file
// stored in git itself: sha1("blob <size>\0" + content)).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace oc::hub {

class Digest {
 public:
  enum class Kind { Sha256, GitBlobSha1 };
  // GitBlobSha1 needs the file's size up front (the header precedes the content).
  explicit Digest(Kind kind, int64_t git_blob_size = 0);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void update(std::span<const uint8_t> bytes);
  std::string hex();  // lower-case; ends the digest

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The digest of a whole file (read in 1 MiB blocks); throws oc::Error when it cannot be read.
std::string file_digest(const std::string& path, Digest::Kind kind, int64_t git_blob_size = 0);

bool is_hex(const std::string& s, size_t len);  // exactly len lower- or upper-case hex digits

}  // namespace oc::hub
