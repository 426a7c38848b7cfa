#include "io/tfevents.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/check.h"
#include "core/fs.h"
#include "io/le.h"

namespace oc::io {
namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrc32c = make_crc32c_table();

// --- protobuf encoding ---------------------------------------------------------------
void varint(std::vector<uint8_t>& o, uint64_t v) {
  while (v >= 0x80) {
    o.push_back(uint8_t(v | 0x80));
    v >>= 7;
  }
  o.push_back(uint8_t(v));
}
void key(std::vector<uint8_t>& o, int field, int wire) { varint(o, uint64_t(field << 3 | wire)); }
void bytes_field(std::vector<uint8_t>& o, int field, std::span<const uint8_t> b) {
  key(o, field, 2);
  varint(o, b.size());
  append_bytes(o, b.data(), b.size());
}
void bytes_field(std::vector<uint8_t>& o, int field, std::string_view s) {
  bytes_field(o, field, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}
// Event header: wall_time, then step unless 0 (proto3 default).
std::vector<uint8_t> event_head(double wall_time, int64_t step) {
  std::vector<uint8_t> e;
  key(e, 1, 1);
  append_le<double>(e, wall_time);
  if (step != 0) {
    key(e, 2, 0);
    varint(e, uint64_t(step));
  }
  return e;
}

// --- protobuf decoding ---------------------------------------------------------------
struct PbError {
  std::string msg;
  uint64_t at;
};

// A bounded view of one message; `base` is its file offset for error messages.
struct Pb {
  std::span<const uint8_t> d;
  uint64_t base = 0;
  size_t pos = 0;

  bool done() const { return pos >= d.size(); }
  [[noreturn]] void fail(const std::string& what) const { throw PbError{what, base + pos}; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= d.size()) fail("truncated varint");
      uint8_t b = d[pos++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }
  std::span<const uint8_t> take(size_t n) {
    if (d.size() - pos < n) fail(fmt::format("field of {} bytes runs past its message", n));
    auto s = d.subspan(pos, n);
    pos += n;
    return s;
  }
  Pb sub() {
    const uint64_t n = varint();
    const uint64_t at = base + pos;
    auto s = take(size_t(n));
    return Pb{s, at, 0};
  }
  void skip(int wire) {
    switch (wire) {
      case 0: varint(); break;
      case 1: take(8); break;
      case 2: take(size_t(varint())); break;
      case 5: take(4); break;
      default: fail(fmt::format("unsupported wire type {}", wire));
    }
  }
};

// A rank-0 DT_FLOAT / DT_DOUBLE TensorProto; false for any other tensor.
bool tensor_scalar(Pb t, float* out) {
  int dtype = 0;
  bool rank0 = true, have = false;
  double v = 0;
  while (!t.done()) {
    const uint64_t k = t.varint();
    const int field = int(k >> 3), wire = int(k & 7);
    if (field == 1 && wire == 0) {
      dtype = int(t.varint());
    } else if (field == 2 && wire == 2) {
      Pb shape = t.sub();
      while (!shape.done()) {
        const uint64_t sk = shape.varint();
        if ((sk >> 3) == 2) rank0 = false;  // a dim
        shape.skip(int(sk & 7));
      }
    } else if (field == 4 && wire == 2) {  // tensor_content: raw little-endian values
      auto b = t.take(size_t(t.varint()));
      if (b.size() == 4) v = load_le<float>(b.data()), have = true;
      else if (b.size() == 8) v = load_le<double>(b.data()), have = true;
    } else if (field == 5 && (wire == 2 || wire == 5)) {  // float_val, packed or not
      auto b = wire == 2 ? t.take(size_t(t.varint())) : t.take(4);
      if (b.size() == 4) v = load_le<float>(b.data()), have = true;
    } else if (field == 6 && (wire == 2 || wire == 1)) {  // double_val
      auto b = wire == 2 ? t.take(size_t(t.varint())) : t.take(8);
      if (b.size() == 8) v = load_le<double>(b.data()), have = true;
    } else {
      t.skip(wire);
    }
  }
  if (!rank0 || !have || (dtype != 1 && dtype != 2)) return false;
  *out = float(v);
  return true;
}

void decode_summary(Pb s, double wall, int64_t step, std::vector<ScalarPoint>& out) {
  while (!s.done()) {
    const uint64_t k = s.varint();
    if ((k >> 3) != 1 || (k & 7) != 2) {
      s.skip(int(k & 7));
      continue;
    }
    Pb v = s.sub();
    ScalarPoint p{wall, step, "", 0};
    bool have = false;
    while (!v.done()) {
      const uint64_t vk = v.varint();
      const int field = int(vk >> 3), wire = int(vk & 7);
      if (field == 1 && wire == 2) {
        auto b = v.take(size_t(v.varint()));
        p.tag.assign(reinterpret_cast<const char*>(b.data()), b.size());
      } else if (field == 2 && wire == 5) {
        p.value = load_le<float>(v.take(4).data());
        have = true;
      } else if (field == 8 && wire == 2) {
        have = tensor_scalar(v.sub(), &p.value);
      } else {
        v.skip(wire);
      }
    }
    if (have) out.push_back(std::move(p));
  }
}

std::atomic<int> g_writer_uid{0};

}  // namespace

uint32_t crc32c(std::span<const uint8_t> bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : bytes) c = kCrc32c[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::span<const uint8_t> bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::vector<uint8_t> event_file_version(double wall_time) {
  std::vector<uint8_t> e = event_head(wall_time, 0);
  bytes_field(e, 3, std::string_view("brain.Event:2"));
  return e;
}

std::vector<uint8_t> event_scalar(double wall_time, int64_t step, std::string_view tag, float value) {
  std::vector<uint8_t> v;  // Summary.Value
  bytes_field(v, 1, tag);
  key(v, 2, 5);
  append_le<float>(v, value);
  std::vector<uint8_t> s;  // Summary
  bytes_field(s, 1, v);
  std::vector<uint8_t> e = event_head(wall_time, step);
  bytes_field(e, 5, s);
  return e;
}

std::vector<uint8_t> event_session_start(double wall_time, int64_t step) {
  const std::vector<uint8_t> log = {0x08, 0x01};  // SessionLog{status: START}
  std::vector<uint8_t> e = event_head(wall_time, step);
  bytes_field(e, 7, log);
  return e;
}

std::vector<uint8_t> tfrecord(std::span<const uint8_t> payload) {
  std::vector<uint8_t> r;
  r.reserve(payload.size() + 16);
  append_le<uint64_t>(r, payload.size());
  append_le<uint32_t>(r, masked_crc32c(std::span<const uint8_t>(r.data(), 8)));
  append_bytes(r, payload.data(), payload.size());
  append_le<uint32_t>(r, masked_crc32c(payload));
  return r;
}

// --- writer ----------------------------------------------------------------------------

double EventWriter::now() {
  struct timeval tv;
  ::gettimeofday(&tv, nullptr);
  return double(tv.tv_sec) + double(tv.tv_usec) * 1e-6;
}

EventWriter::EventWriter(const std::string& logdir, double flush_secs) : flush_secs_(flush_secs) {
  fs::make_dirs(logdir);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double t = now();
  path_ = fs::join(logdir, fmt::format("events.out.tfevents.{:010d}.{}.{}.{}", int64_t(t), host, ::getpid(),
                                       g_writer_uid.fetch_add(1)));
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) OC_USER_ERROR("cannot create event file {}: {}", path_, std::strerror(errno));
  last_flush_ = t;
  append(event_file_version(t));
  flush();
}

EventWriter::~EventWriter() {
  try {
    flush();
  } catch (const std::exception&) {  // a destructor cannot report it; the next open will
  }
  if (fd_ >= 0) ::close(fd_);
}

void EventWriter::append(std::span<const uint8_t> payload) {
  auto r = tfrecord(payload);
  buf_.insert(buf_.end(), r.begin(), r.end());
  if (flush_secs_ <= 0 || now() - last_flush_ >= flush_secs_) flush();
}

void EventWriter::add_scalar(std::string_view tag, float value, int64_t step, double wall_time) {
  append(event_scalar(wall_time, step, tag, value));
}

void EventWriter::session_start(int64_t step, double wall_time) { append(event_session_start(wall_time, step)); }

void EventWriter::flush() {
  size_t done = 0;
  while (done < buf_.size()) {
    ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      buf_.erase(buf_.begin(), buf_.begin() + ptrdiff_t(done));
      OC_USER_ERROR("cannot write event file {}: {}", path_, std::strerror(errno));
    }
    done += size_t(n);
  }
  buf_.clear();
  last_flush_ = now();
}

// --- reader ----------------------------------------------------------------------------

Result<EventScan> scan_events(std::span<const uint8_t> bytes, bool apply_restarts, const std::string& where) {
  EventScan scan;
  size_t pos = 0;
  try {
    while (pos < bytes.size()) {
      if (bytes.size() - pos < 12) break;
      const uint64_t len = load_le<uint64_t>(bytes.data() + pos);
      if (masked_crc32c(bytes.subspan(pos, 8)) != load_le<uint32_t>(bytes.data() + pos + 8))
        return Err{fmt::format("{}: record at byte {}: length CRC mismatch (corrupt file)", where, pos)};
      if (len > bytes.size() - pos - 12 || bytes.size() - pos - 12 - len < 4) break;
      auto data = bytes.subspan(pos + 12, size_t(len));
      if (masked_crc32c(data) != load_le<uint32_t>(bytes.data() + pos + 12 + len))
        return Err{fmt::format("{}: record at byte {}: data CRC mismatch (corrupt file)", where, pos)};
      Pb e{data, pos + 12, 0};
      double wall = 0;
      int64_t step = 0;
      bool start = false;
      std::vector<ScalarPoint> points;
      while (!e.done()) {
        const uint64_t k = e.varint();
        const int field = int(k >> 3), wire = int(k & 7);
        if (field == 1 && wire == 1) {
          wall = load_le<double>(e.take(8).data());
        } else if (field == 2 && wire == 0) {
          step = int64_t(e.varint());
        } else if (field == 3 && wire == 2) {
          auto b = e.take(size_t(e.varint()));
          if (scan.file_version.empty()) scan.file_version.assign(reinterpret_cast<const char*>(b.data()), b.size());
        } else if (field == 5 && wire == 2) {
          Pb s = e.sub();
          decode_summary(s, 0, 0, points);  // wall/step may come after the summary field
        } else if (field == 7 && wire == 2) {
          Pb log = e.sub();
          while (!log.done()) {
            const uint64_t lk = log.varint();
            if (lk == 0x08) start = log.varint() == 1;
            else log.skip(int(lk & 7));
          }
        } else {
          e.skip(wire);
        }
      }
      if (start && apply_restarts) {
        std::erase_if(scan.scalars, [&](const ScalarPoint& p) { return p.step >= step; });
      }
      for (auto& p : points) {
        p.wall_time = wall;
        p.step = step;
        scan.scalars.push_back(std::move(p));
      }
      pos += 12 + len + 4;
      scan.complete_bytes = pos;
    }
  } catch (const PbError& e) {
    return Err{fmt::format("{}: malformed event protobuf at byte {}: {}", where, e.at, e.msg)};
  }
  scan.partial_tail = scan.complete_bytes < bytes.size();
  return scan;
}

Result<EventScan> read_events(const std::string& path, bool apply_restarts) {
  auto b = fs::read_file(path);
  if (!b) return Err{b.error()};
  return scan_events(*b, apply_restarts, path);
}

}  // namespace oc::io
