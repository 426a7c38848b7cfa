#include "index/checksum.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"

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

std::string sha256_hex(const void* data, size_t n) {
  Ctx c = new_ctx();
  EVP_DigestUpdate(c.get(), data, n);
  return finish(c.get());
}

std::string weights_checksum(const std::string& path) {
  if (path.empty()) return "random-init";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) OC_USER_ERROR("{}: cannot open the weights: {}", path, std::strerror(errno));
  Ctx c = new_ctx();
  std::vector<unsigned char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) EVP_DigestUpdate(c.get(), buf.data(), n);
  if (std::ferror(f.get())) OC_USER_ERROR("{}: read error while hashing the weights", path);
  return finish(c.get());
}

}  // namespace oc::index
