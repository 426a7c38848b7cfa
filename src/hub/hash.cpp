#include "hub/hash.h"

#include <openssl/evp.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "core/check.h"

namespace oc::hub {

struct Digest::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Digest::Digest(Kind kind, int64_t git_blob_size) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  OC_CHECK(impl_->ctx && EVP_DigestInit_ex(impl_->ctx, kind == Kind::Sha256 ? EVP_sha256() : EVP_sha1(), nullptr) == 1,
           "EVP_DigestInit_ex failed");
  if (kind == Kind::GitBlobSha1) {
    const std::string header = "blob " + std::to_string(git_blob_size) + std::string(1, '\0');
    update({reinterpret_cast<const uint8_t*>(header.data()), header.size()});
  }
}

Digest::~Digest() { EVP_MD_CTX_free(impl_->ctx); }

void Digest::update(std::span<const uint8_t> bytes) {
  OC_CHECK(EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size()) == 1, "EVP_DigestUpdate failed");
}

std::string Digest::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  OC_CHECK(EVP_DigestFinal_ex(impl_->ctx, md, &n) == 1, "EVP_DigestFinal_ex failed");
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += kHex[md[i] >> 4];
    s += kHex[md[i] & 15];
  }
  return s;
}

std::string file_digest(const std::string& path, Digest::Kind kind, int64_t git_blob_size) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) OC_USER_ERROR("{}: cannot be read for its checksum", path);
  Digest d(kind, git_blob_size);
  std::vector<uint8_t> buf(1 << 20);
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0;) d.update({buf.data(), n});
  if (std::ferror(f.get())) OC_USER_ERROR("{}: read error while computing its checksum", path);
  return d.hex();
}

bool is_hex(const std::string& s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace oc::hub
