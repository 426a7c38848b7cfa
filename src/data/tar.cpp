// Tar reading follows CPython's tarfile in streaming mode ("r|*"), the reader behind
// webdataset: the same header checks, the same members treated as regular, the same
// tolerance for a missing end marker. Writing mirrors webdataset's TarWriter.
#include "data/tar.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace oc::data {
namespace {

constexpr size_t kBlock = 512;
uint64_t padding(uint64_t size) { return (kBlock - size % kBlock) % kBlock; }

std::string nts(const uint8_t* p, size_t n) {
  size_t k = 0;
  while (k < n && p[k] != 0) ++k;
  return std::string(reinterpret_cast<const char*>(p), k);
}

// CPython's REGULAR_TYPES and SUPPORTED_TYPES: for a supported non-regular member (a
// directory, a link) the size field is not a payload length; for an unknown type it is.
bool is_regular(char t) { return t == '0' || t == '\0' || t == '7'; }
bool is_supported(char t) { return std::strchr("01234567LKS", t) != nullptr && t != '\0'; }

}  // namespace

bool parse_tar_number(std::span<const uint8_t> f, uint64_t* out) {
  if (f.empty()) return false;
  if (f[0] == 0x80) {  // GNU base-256, positive
    uint64_t n = 0;
    for (size_t i = 1; i < f.size(); ++i) {
      if (n >> 56) return false;  // would overflow 64 bits
      n = (n << 8) | f[i];
    }
    *out = n;
    return true;
  }
  if (f[0] == 0xff) return false;  // negative base-256: never a valid size
  size_t end = 0;
  while (end < f.size() && f[end] != 0) ++end;
  size_t b = 0, e = end;
  while (b < e && (f[b] == ' ')) ++b;
  while (e > b && (f[e - 1] == ' ')) --e;
  uint64_t n = 0;
  for (size_t i = b; i < e; ++i) {
    if (f[i] < '0' || f[i] > '7') return false;
    if (n >> 60) return false;
    n = n * 8 + uint64_t(f[i] - '0');
  }
  *out = n;
  return true;
}

bool parse_pax(std::string_view p, std::map<std::string, std::string>* out) {
  size_t pos = 0;
  while (pos < p.size()) {
    if (p[pos] == '\0') break;  // some writers pad with NULs
    size_t sp = p.find(' ', pos);
    if (sp == std::string_view::npos) return false;
    uint64_t len = 0;
    for (size_t i = pos; i < sp; ++i) {
      if (p[i] < '0' || p[i] > '9') return false;
      len = len * 10 + uint64_t(p[i] - '0');
      if (len > p.size()) return false;
    }
    if (len < sp - pos + 3 || pos + len > p.size() || p[pos + len - 1] != '\n') return false;
    std::string_view rec = p.substr(sp + 1, pos + len - 1 - (sp + 1));
    size_t eq = rec.find('=');
    if (eq == std::string_view::npos) return false;
    (*out)[std::string(rec.substr(0, eq))] = std::string(rec.substr(eq + 1));
    pos += len;
  }
  return true;
}

TarReader::TarReader(std::unique_ptr<ByteStream> s, std::string path) : r_(std::move(s)), path_(std::move(path)) {}

Status TarReader::finish_member() {
  if (!in_member_) return Status::success();
  in_member_ = false;
  if (pending_ > 0) {
    auto r = r_.skip(pending_);
    if (!r) return Err{r.error()};
    if (*r < pending_)
      return Err{fmt::format("{}: unexpected end of data in member '{}' (header at byte {}): the file ends at byte {}",
                             path_, member_name_, member_offset_, r_.offset())};
    pending_ = 0;
  }
  // A cut inside the padding is accepted (CPython reads the next header and finds EOF).
  auto r = r_.skip(pending_pad_);
  if (!r) return Err{r.error()};
  pending_pad_ = 0;
  return Status::success();
}

Result<std::string> TarReader::read_payload_string(uint64_t size, uint64_t hdr, const char* what) {
  if (size > (16u << 20)) return Err{fmt::format("{}: {} header at byte {} claims {} bytes", path_, what, hdr, size)};
  std::string s(size_t(size), '\0');
  auto r = r_.read(reinterpret_cast<uint8_t*>(s.data()), s.size());
  if (!r) return Err{r.error()};
  if (*r < size) return Err{fmt::format("{}: unexpected end of data in {} header at byte {}", path_, what, hdr)};
  auto p = r_.skip(padding(size));
  if (!p) return Err{p.error()};
  return s;
}

struct TarReader::Extended {
  std::map<std::string, std::string> pax;
  std::string long_name;
  bool have_long_name = false;
  uint64_t start = UINT64_MAX;  // the member's first header (pax / long name ones included)
};

// Reads the 512-byte header at `header_offset` and checks its checksum (unsigned or signed
// sum, as CPython). False at the end of the archive: EOF at a member boundary, or a zero block.
Result<bool> TarReader::read_header(uint8_t* b, uint64_t hdr, const Extended& ext) {
  auto n = r_.read(b, kBlock);
  if (!n) return Err{n.error()};
  if (*n == 0) {
    if (hdr == 0) return Err{fmt::format("{}: empty file", path_)};
    if (!ext.pax.empty() || ext.have_long_name)
      return Err{fmt::format("{}: unexpected end of data after an extended header at byte {}", path_, hdr)};
    return false;
  }
  if (*n < kBlock) return Err{fmt::format("{}: truncated header at byte {} ({} of 512 bytes)", path_, hdr, *n)};
  if (std::all_of(b, b + kBlock, [](uint8_t c) { return c == 0; })) {
    if (hdr == 0) return Err{fmt::format("{}: empty file", path_)};
    return false;
  }
  uint64_t stored = 0;
  int64_t usum = 0, ssum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    uint8_t c = (i >= 148 && i < 156) ? uint8_t(' ') : b[i];
    usum += c;
    ssum += int8_t(c);
  }
  if (!parse_tar_number({b + 148, 8}, &stored) || (int64_t(stored) != usum && int64_t(stored) != ssum))
    return Err{fmt::format("{}: {} at byte {}", path_,
                           hdr == 0 ? "not a tar file (bad header checksum)" : "bad checksum", hdr)};
  return true;
}

// A pax header ('x': this member, 'g': all that follow) or a GNU long name ('L'; 'K', a long
// link name, is read and dropped).
Status TarReader::read_extended(char type, uint64_t size, uint64_t hdr, Extended& ext) {
  if (type == 'x' || type == 'g') {
    auto payload = read_payload_string(size, hdr, "pax");
    if (!payload) return Err{payload.error()};
    if (!parse_pax(*payload, type == 'x' ? &ext.pax : &global_pax_))
      return Err{fmt::format("{}: malformed pax header at byte {}", path_, hdr)};
    if (type == 'g') ext.start = UINT64_MAX;
    return Status::success();
  }
  auto payload = read_payload_string(size, hdr, "GNU long name");
  if (!payload) return Err{payload.error()};
  if (type == 'L') {
    ext.long_name = payload->substr(0, payload->find('\0'));
    ext.have_long_name = true;
  }
  return Status::success();
}

// The member's name: the header's (with the ustar prefix), replaced by a GNU long name, then
// by pax "path" (global, then the member's, which wins). Pax "size" replaces *size likewise.
Result<std::string> TarReader::member_name(const uint8_t* b, const Extended& ext, uint64_t hdr, uint64_t* size) const {
  std::string name = nts(b, 100);
  if (std::memcmp(b + 257, "ustar\0", 6) == 0) {  // POSIX: bytes 345.. are a name prefix (GNU: times)
    std::string prefix = nts(b + 345, 155);
    if (!prefix.empty()) name = prefix + "/" + name;
  }
  if (ext.have_long_name) name = ext.long_name;
  for (const auto* kv : {&global_pax_, &ext.pax}) {
    if (auto it = kv->find("path"); it != kv->end()) name = it->second;
    if (auto it = kv->find("size"); it != kv->end()) {
      uint64_t v = 0;
      for (char c : it->second) {
        if (c < '0' || c > '9') return Err{fmt::format("{}: bad pax size '{}' at byte {}", path_, it->second, hdr)};
        v = v * 10 + uint64_t(c - '0');
      }
      *size = v;
    }
  }
  return name;
}

Result<bool> TarReader::next(TarMember* m) {
  if (done_) return false;
  auto fail = [&](std::string msg) -> Result<bool> {
    done_ = true;
    return Err{std::move(msg)};
  };
  if (auto st = finish_member(); !st) return fail(st.error());
  Extended ext;
  for (;;) {
    uint64_t hdr = r_.offset();
    if (ext.start == UINT64_MAX) ext.start = hdr;
    uint8_t b[kBlock];
    auto got = read_header(b, hdr, ext);
    if (!got) return fail(got.error());
    if (!*got) {
      done_ = true;
      return false;
    }
    uint64_t size = 0;
    if (!parse_tar_number({b + 124, 12}, &size))
      return fail(fmt::format("{}: bad size field in header at byte {}", path_, hdr));
    char type = char(b[156]);
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      if (Status s = read_extended(type, size, hdr, ext); !s) return fail(s.error());
      continue;
    }
    auto name = member_name(b, ext, hdr, &size);
    if (!name) return fail(name.error());
    bool regular = is_regular(type) && !(type == '\0' && !name->empty() && name->back() == '/');
    if (!regular) {
      if (!is_supported(type) || type == 'S') {
        auto r = r_.skip(size + padding(size));
        if (!r) return fail(r.error());
        if (*r < size)
          return fail(fmt::format("{}: unexpected end of data in member '{}' (header at byte {})", path_, *name, hdr));
      }
      ext = Extended{};
      continue;
    }
    m->name = *name;
    m->size = size;
    m->offset = ext.start;
    m->data_offset = r_.offset();
    member_name_ = std::move(*name);
    member_offset_ = ext.start;
    pending_ = size;
    pending_pad_ = padding(size);
    in_member_ = true;
    return true;
  }
}

Result<std::vector<uint8_t>> TarReader::read_data() {
  if (!in_member_ || pending_ == 0) {
    if (auto st = finish_member(); !st) return Err{st.error()};
    return std::vector<uint8_t>{};
  }
  // Grow in steps: a corrupt size field must not allocate gigabytes before the read fails.
  std::vector<uint8_t> out;
  uint64_t want = pending_;
  while (out.size() < want) {
    size_t old = out.size();
    size_t step = size_t(std::min<uint64_t>(want - old, 64u << 20));
    out.resize(old + step);
    auto r = r_.read(out.data() + old, step);
    if (!r) {
      done_ = true;
      in_member_ = false;
      return Err{r.error()};
    }
    pending_ -= *r;
    if (*r < step) {
      done_ = true;
      in_member_ = false;
      return Err{fmt::format("{}: unexpected end of data in member '{}' (header at byte {}, {} bytes): the file ends at byte {}",
                             path_, member_name_, member_offset_, want, r_.offset())};
    }
  }
  if (auto st = finish_member(); !st) {
    done_ = true;
    return Err{st.error()};
  }
  return out;
}

Status TarReader::skip_data() {
  if (auto st = finish_member(); !st) {
    done_ = true;
    return st;
  }
  return Status::success();
}

// ---- writer ----

void TarWriter::put(std::span<const uint8_t> b) {
  sink_(b);
  written_ += b.size();
}

void TarWriter::pad() {
  static const uint8_t zeros[kBlock] = {};
  put({zeros, size_t(padding(written_))});
}

void TarWriter::write_header(const std::string& name, uint64_t size, char type) {
  uint8_t h[kBlock] = {};
  std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
  auto octal = [&](size_t off, size_t width, uint64_t v) {
    std::string s = fmt::format("{:0{}o}", v, width - 1);
    std::memcpy(h + off, s.data(), width - 1);  // last byte stays NUL
  };
  octal(100, 8, 0444);
  octal(108, 8, 0);
  octal(116, 8, 0);
  if (size < (uint64_t(1) << 33)) {
    octal(124, 12, size);
  } else {  // GNU base-256 for >= 8 GiB
    h[124] = 0x80;
    for (int i = 0; i < 8; ++i) h[135 - i] = uint8_t(size >> (8 * i));
  }
  octal(136, 12, uint64_t(std::max<int64_t>(0, mtime_)));
  h[156] = uint8_t(type);
  std::memcpy(h + 257, "ustar\0" "00", 8);
  std::memcpy(h + 265, "bigdata", 7);
  std::memcpy(h + 297, "bigdata", 7);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t c : h) sum += c;
  std::string cs = fmt::format("{:06o}", sum);
  std::memcpy(h + 148, cs.data(), 6);
  h[154] = 0;
  h[155] = ' ';
  put({h, kBlock});
}

void TarWriter::add(const std::string& name, std::span<const uint8_t> data) {
  if (name.size() > 100) {  // pax "path" record, as CPython writes for long names
    std::string rec = " path=" + name + "\n";
    size_t len = rec.size();
    while (std::to_string(len).size() + rec.size() != len) len = std::to_string(len).size() + rec.size();
    std::string payload = std::to_string(len) + rec;
    write_header("././@PaxHeader", payload.size(), 'x');
    put({reinterpret_cast<const uint8_t*>(payload.data()), payload.size()});
    pad();
  }
  write_header(name, data.size(), '0');
  put(data);
  pad();
}

void TarWriter::add(const std::string& name, const std::string& text) {
  add(name, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void TarWriter::finish() {
  static const uint8_t zeros[kBlock * 2] = {};
  put({zeros, sizeof zeros});
  static const uint8_t rec[10240] = {};
  put({rec, size_t((10240 - written_ % 10240) % 10240)});
}

}  // namespace oc::data
