#include "io/safetensors.h"

#include <algorithm>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/le.h"

namespace oc::io {
namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the reference's MAX_HEADER_SIZE

struct DtypeInfo {
  const char* name;
  int bits;
};
// Every dtype the reference knows, so valid files pass validation even when openclip
// cannot hold a dtype in memory (reading its values is then an error naming it).
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 8},    {"U8", 8},      {"I8", 8},       {"I16", 16},     {"U16", 16},          {"F16", 16},
    {"BF16", 16},   {"I32", 32},    {"U32", 32},     {"F32", 32},     {"F64", 64},          {"I64", 64},
    {"U64", 64},    {"C64", 64},    {"F8_E5M2", 8},  {"F8_E4M3", 8},  {"F8_E8M0", 8},       {"F8_E4M3FNUZ", 8},
    {"F8_E5M2FNUZ", 8}, {"F4", 4},  {"F6_E2M3", 6},  {"F6_E3M2", 6}};

// The reference's sort key: dtypes by alignment, descending (its enum order reversed).
int write_rank(DType t) {
  switch (t) {
    case DType::I64: return 0;
    case DType::F64: return 1;
    case DType::F32: return 2;
    case DType::I32: return 3;
    case DType::BF16: return 4;
    case DType::F16: return 5;
    case DType::I16: return 6;
    case DType::I8: return 7;
    case DType::U8: return 8;
    case DType::Bool: return 9;
  }
  return 10;
}

// Offset of the first invalid UTF-8 byte, or -1 (strict: no overlongs, surrogates, > U+10FFFF).
int64_t invalid_utf8_at(std::span<const uint8_t> s) {
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = s[i];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xe0) == 0xc0) n = 1, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) n = 2, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) n = 3, cp = c & 0x07, min = 0x10000;
    else return int64_t(i);
    if (s.size() - i <= n) return int64_t(i);
    for (size_t k = 1; k <= n; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return int64_t(i);
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return int64_t(i);
    i += n + 1;
  }
  return -1;
}

struct HeaderError {
  std::string msg;
};

bool as_u64(const nlohmann::json& j, uint64_t* out) {
  if (j.is_number_unsigned()) return *out = j.get<uint64_t>(), true;
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return *out = uint64_t(j.get<int64_t>()), true;
  return false;
}

// The header's JSON: strict UTF-8, no duplicate keys, no nesting deeper than the schema.
Result<nlohmann::json> parse_header_json(std::span<const uint8_t> bytes, const std::string& where) {
  if (int64_t bad = invalid_utf8_at(bytes); bad >= 0)
    return Err{fmt::format("{}: safetensors header is not valid UTF-8 at byte {}", where, 8 + bad)};
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  nlohmann::json root;
  try {
    // Duplicate keys are checked during parsing (nlohmann would keep the last one silently),
    // and nesting deeper than the schema needs is refused before it can cost anything.
    std::vector<std::set<std::string>> keys;
    auto cb = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
      using E = nlohmann::json::parse_event_t;
      if ((ev == E::object_start || ev == E::array_start) && depth > 2)
        throw HeaderError{"safetensors header nests deeper than its schema allows"};
      if (ev == E::object_start) keys.emplace_back();
      if (ev == E::object_end) keys.pop_back();
      if (ev == E::key && !keys.back().insert(parsed.get<std::string>()).second) {
        const std::string quoted = nlohmann::json(parsed.get<std::string>()).dump();
        size_t at = text.find(quoted);
        at = at == std::string_view::npos ? at : text.find(quoted, at + 1);
        throw HeaderError{fmt::format("duplicate key {} in the safetensors header (byte {})", quoted,
                                      at == std::string_view::npos ? uint64_t(8) : 8 + at)};
      }
      return true;
    };
    root = nlohmann::json::parse(text.begin(), text.end(), cb);
  } catch (const HeaderError& e) {
    return Err{fmt::format("{}: {}", where, e.msg)};
  } catch (const nlohmann::json::parse_error& e) {
    return Err{fmt::format("{}: safetensors header is not valid JSON (byte {}): {}", where, 8 + e.byte,
                           json_error_text(e.what()))};
  } catch (const nlohmann::json::exception& e) {  // e.g. a number that overflows a double: 1e999
    return Err{fmt::format("{}: safetensors header is not valid JSON: {}", where, json_error_text(e.what()))};
  }
  if (!root.is_object()) return Err{fmt::format("{}: safetensors header is not a JSON object", where)};
  return root;
}

Status read_metadata(const nlohmann::json& v, const std::string& where, SafetensorsHeader& h) {
  if (!v.is_object()) return Err{fmt::format("{}: __metadata__ is not an object", where)};
  for (auto m = v.begin(); m != v.end(); ++m) {
    if (!m.value().is_string())
      return Err{fmt::format("{}: __metadata__ value of '{}' is not a string", where, m.key())};
    h.metadata[m.key()] = m.value().get<std::string>();
  }
  return Status::success();
}

// One tensor's entry: a known dtype, a shape of non-negative ints, and data_offsets that
// hold exactly the bytes the dtype and shape need.
Result<SafetensorsEntry> parse_entry(const std::string& key, const nlohmann::json& v, const std::string& where) {
  auto bad = [&](const std::string& what) { return Err{fmt::format("{}: tensor '{}': {}", where, key, what)}; };
  if (!v.is_object()) return bad("entry is not an object");
  SafetensorsEntry e;
  e.name = key;
  auto d = v.find("dtype"), s = v.find("shape"), o = v.find("data_offsets");
  if (d == v.end() || s == v.end() || o == v.end()) return bad("needs dtype, shape and data_offsets");
  if (!d->is_string()) return bad("dtype is not a string");
  e.dtype_name = d->get<std::string>();
  int bits = 0;
  for (const auto& di : kDtypes)
    if (e.dtype_name == di.name) bits = di.bits;
  if (bits == 0) return bad(fmt::format("unknown dtype '{}'", e.dtype_name));
  e.supported = dtype_from_name(e.dtype_name, &e.dtype);
  if (!s->is_array()) return bad("shape is not an array");
  uint64_t count = 1;
  bool overflow = false;
  for (const auto& dim : *s) {
    uint64_t n;
    if (!as_u64(dim, &n) || n > uint64_t(INT64_MAX))
      return bad("shape holds something other than a non-negative integer");
    e.shape.push_back(int64_t(n));
    overflow |= __builtin_mul_overflow(count, n, &count);
  }
  if (!o->is_array() || o->size() != 2 || !as_u64((*o)[0], &e.begin) || !as_u64((*o)[1], &e.end))
    return bad("data_offsets is not [begin, end] with non-negative integers");
  uint64_t nbits;
  if (overflow || __builtin_mul_overflow(count, uint64_t(bits), &nbits))
    return bad(fmt::format("size of shape {} overflows", shape_str(e.shape)));
  if (nbits % 8) return bad(fmt::format("{} x {} bits is not a whole number of bytes", count, bits));
  if (e.end < e.begin || e.end - e.begin != nbits / 8)
    return bad(fmt::format("data_offsets [{}, {}] hold {} bytes but dtype {} and shape {} need {}", e.begin, e.end,
                           int64_t(e.end - e.begin), e.dtype_name, shape_str(e.shape), nbits / 8));
  return e;
}

// Sorts the tensors by offset and checks they tile the data exactly to the end of the file.
Status check_layout(SafetensorsHeader& h, uint64_t file_size, const std::string& where) {
  std::sort(h.tensors.begin(), h.tensors.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t pos = 0;
  for (const auto& e : h.tensors) {
    if (e.begin != pos)
      return Err{fmt::format("{}: tensor '{}': data_offsets [{}, {}] do not start where the previous tensor ends "
                             "({}): a {} (file byte {})",
                             where, e.name, e.begin, e.end, pos, e.begin < pos ? "overlap" : "gap",
                             h.data_start + e.begin)};
    pos = e.end;
  }
  if (h.data_start + pos != file_size)
    return Err{fmt::format("{}: the tensors end at file byte {} but the file has {} bytes ({})", where,
                           h.data_start + pos, file_size,
                           h.data_start + pos > file_size ? "truncated" : "trailing bytes")};
  return Status::success();
}

}  // namespace

Result<SafetensorsHeader> parse_safetensors_header(std::span<const uint8_t> bytes, uint64_t file_size,
                                                   const std::string& where) {
  SafetensorsHeader h;
  h.data_start = 8 + bytes.size();
  auto root = parse_header_json(bytes, where);
  if (!root) return Err{root.error()};
  for (auto it = root->begin(); it != root->end(); ++it) {
    if (it.key() == "__metadata__") {
      if (Status s = read_metadata(it.value(), where, h); !s) return Err{s.error()};
      continue;
    }
    auto e = parse_entry(it.key(), it.value(), where);
    if (!e) return Err{e.error()};
    h.tensors.push_back(std::move(*e));
  }
  if (Status s = check_layout(h, file_size, where); !s) return Err{s.error()};
  return h;
}

Result<SafetensorsHeader> read_safetensors_header(const std::string& path) {
  auto f = ReadFile::open(path);
  if (!f) return Err{f.error()};
  if (f->size() < 8) return Err{fmt::format("{}: {} bytes is too small for a safetensors file", path, f->size())};
  uint8_t len[8];
  if (Status s = f->read(0, len); !s) return Err{s.error()};
  const uint64_t n = load_le<uint64_t>(len);
  if (n > kMaxHeader) return Err{fmt::format("{}: safetensors header length {} (byte 0) exceeds the limit of {}", path, n, kMaxHeader)};
  if (auto b = claimed_bytes(path, "the header length (byte 0)", n, 1, f->size() - 8); !b)
    return Err{b.error() + " (the header runs past the end of the file)"};
  auto json = f->read(8, n);
  if (!json) return Err{json.error()};
  return parse_safetensors_header(*json, f->size(), path);
}

Result<Safetensors> read_safetensors(const std::string& path) {
  auto h = read_safetensors_header(path);
  if (!h) return Err{h.error()};
  auto f = ReadFile::open(path);
  if (!f) return Err{f.error()};
  Safetensors out;
  out.metadata = std::move(h->metadata);
  out.tensors.reserve(h->tensors.size());
  for (auto& e : h->tensors) {
    if (!e.supported)
      return Err{fmt::format("{}: tensor '{}' has dtype {}, which openclip cannot hold", path, e.name, e.dtype_name)};
  }
  for (auto& e : h->tensors) out.tensors.emplace_back(e.name, HostTensor());
  // Each byte is read once, straight into its tensor; tensors are independent preads.
  std::vector<Status> status(h->tensors.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < h->tensors.size(); ++i) {
    const SafetensorsEntry& e = h->tensors[i];
    HostTensor& t = out.tensors[i].second;
    t = HostTensor(e.dtype, e.shape);
    status[i] = f->read(h->data_start + e.begin, t.bytes);
  }
  for (Status& s : status)
    if (!s) return Err{s.error()};
  return out;
}

std::vector<uint8_t> safetensors_header_bytes(std::span<const std::pair<std::string, TensorView>> tensors,
                                              const std::map<std::string, std::string>& metadata,
                                              std::vector<size_t>* order_out) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ra = write_rank(tensors[a].second.dtype), rb = write_rank(tensors[b].second.dtype);
    return ra != rb ? ra < rb : tensors[a].first < tensors[b].first;
  });
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      json += (first ? "" : ",") + nlohmann::json(k).dump() + ":" + nlohmann::json(v).dump();
      first = false;
    }
    json += "}";
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const auto& [name, view] = tensors[i];
    OC_CHECK(name != "__metadata__", "a tensor cannot be named __metadata__");
    if (i != order.front() || !metadata.empty()) json += ",";
    std::string shape;
    for (size_t d = 0; d < view.shape.size(); ++d) shape += (d ? "," : "") + std::to_string(view.shape[d]);
    const uint64_t n = view.nbytes();
    json += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", nlohmann::json(name).dump(),
                        dtype_name(view.dtype), shape, offset, offset + n);
    offset += n;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::vector<uint8_t> out;
  out.reserve(8 + json.size());
  append_le<uint64_t>(out, json.size());
  append_bytes(out, json.data(), json.size());
  if (order_out) *order_out = std::move(order);
  return out;
}

void write_safetensors(const std::string& path, std::span<const std::pair<std::string, TensorView>> tensors,
                       const std::map<std::string, std::string>& metadata, const TensorReader& read) {
  std::set<std::string_view> names;
  for (const auto& [name, view] : tensors) {
    if (!names.insert(name).second) OC_USER_ERROR("{}: tensor name '{}' appears twice", path, name);
    if (name == "__metadata__") OC_USER_ERROR("{}: a tensor cannot be named __metadata__", path);
    for (int64_t d : view.shape)
      if (d < 0) OC_USER_ERROR("{}: tensor '{}' has a negative dimension", path, name);
    if (view.nbytes() > 0 && !view.data) OC_USER_ERROR("{}: tensor '{}' has no data", path, name);
  }
  std::vector<size_t> order;
  const std::vector<uint8_t> header = safetensors_header_bytes(tensors, metadata, &order);
  std::vector<uint8_t> staging;  // with `read`: one tensor at a time
  fs::write_atomic(path, [&](const fs::Sink& sink) {
    sink(header);
    for (size_t i : order) {
      const TensorView& v = tensors[i].second;
      if (!read) {
        sink(std::span<const uint8_t>(static_cast<const uint8_t*>(v.data), v.nbytes()));
        continue;
      }
      staging.resize(v.nbytes());
      if (!staging.empty()) read(v, staging.data());
      sink(std::span<const uint8_t>(staging.data(), staging.size()));
    }
  });
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, HostTensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, TensorView>> views;
  views.reserve(tensors.size());
  for (const auto& [name, t] : tensors) views.push_back({name, TensorView{t.dtype, t.shape, t.bytes.data()}});
  write_safetensors(path, views, metadata);
}

}  // namespace oc::io
