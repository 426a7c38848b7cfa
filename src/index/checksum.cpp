#include "index/checksum.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "core/check.h"
#include "io/file.h"

namespace oc::index {
namespace {

std::string hex(const unsigned char* d, unsigned n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) s += k[d[i] >> 4], s += k[d[i] & 15];
  return s;
}

using Ctx = std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)>;

Ctx new_ctx() {
  Ctx c(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  OC_CHECK(c && EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr) == 1, "SHA-256 init failed");
  return c;
}

std::string finish(EVP_MD_CTX* c) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  OC_CHECK(EVP_DigestFinal_ex(c, d, &n) == 1, "SHA-256 final failed");
  return hex(d, n);
}

}  // namespace

std::string bytes_sha256(std::string_view bytes) {
  Ctx c = new_ctx();
  EVP_DigestUpdate(c.get(), bytes.data(), bytes.size());
  return finish(c.get());
}

std::string file_sha256(const std::string& path, std::string_view what) {
  auto f = io::ReadFile::open(path);
  if (!f) OC_USER_ERROR("{}: cannot hash {}: {}", path, what, f.error());
  Ctx c = new_ctx();
  std::vector<uint8_t> buf(size_t(1) << 20);
  for (uint64_t at = 0; at < f->size(); at += buf.size()) {
    const std::span<uint8_t> chunk(buf.data(), size_t(std::min<uint64_t>(buf.size(), f->size() - at)));
    if (Status s = f->read(at, chunk); !s) OC_USER_ERROR("{}: cannot hash {}: {}", path, what, s.error());
    EVP_DigestUpdate(c.get(), chunk.data(), chunk.size());
  }
  return finish(c.get());
}

std::string weights_checksum(const std::string& path) {
  if (path.empty()) return "random-init";
  return file_sha256(path, "the weights");
}

}  // namespace oc::index
