#include "io/torch_pt.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/limits.h"
#include "io/zip.h"

namespace oc::io {
namespace {

// Every distinct tensor of the tree, with where it sits ("['state_dict']['visual.proj']").
struct FoundTensor {
  std::shared_ptr<TensorRecord> rec;
  std::string where;
};

void collect_tensors(const PyValue& v, const std::string& where, std::vector<FoundTensor>& out,
                     std::unordered_set<const TensorRecord*>& seen) {
  if (v.kind == PyKind::Tensor && v.tensor && seen.insert(v.tensor.get()).second) out.push_back({v.tensor, where});
  for (size_t i = 0; i < v.items.size(); ++i) collect_tensors(v.items[i], fmt::format("{}[{}]", where, i), out, seen);
  for (const auto& [k, x] : v.dict) {
    collect_tensors(k, where + "[key]", out, seen);
    collect_tensors(x, where + (k.kind == PyKind::Str ? "['" + k.s + "']" : "[" + k.repr() + "]"), out, seen);
  }
}

// Bytes claimed vs bytes present, before anything is allocated: each storage's bytes are
// in the file and can back one dense copy; what views materialise beyond that (a stride-0
// `expand`, the same storage viewed twice) counts against kPtExpansionCap. An 841-byte file
// with torch.zeros(1).expand(2**20, 2**20) claims 4 TiB and is refused here.
Status check_materialized_size(const std::string& path, const std::vector<FoundTensor>& found) {
  std::unordered_map<std::string, uint64_t> credit;  // storage key -> stored bytes not yet used
  for (const auto& f : found) {
    auto b = claimed_bytes(path, fmt::format("storage '{}'", f.rec->storage_key), uint64_t(f.rec->storage_numel),
                           dtype_size(f.rec->dtype), UINT64_MAX);
    if (!b) return Err{b.error()};
    credit.emplace(f.rec->storage_key, *b);
  }
  uint64_t extra = 0;
  for (const auto& f : found) {
    const TensorRecord& r = *f.rec;
    const std::string name = f.where.empty() ? "(the root object)" : f.where;
    auto need = claimed_bytes(path, "tensor " + name, uint64_t(numel(r.size)), dtype_size(r.dtype), UINT64_MAX);
    if (!need) return Err{need.error()};
    uint64_t& c = credit[r.storage_key];
    const uint64_t used = std::min(*need, c);
    c -= used;
    if (__builtin_add_overflow(extra, *need - used, &extra)) extra = UINT64_MAX;
    const std::string what = fmt::format("tensor {} (size {}, stride {} over storage '{}' of {} elements)", name,
                                         shape_str(r.size), shape_str(r.stride), r.storage_key, r.storage_numel);
    if (Status s = within_cap(path, what + " with the views before it", extra, kPtExpansionCap); !s) return s;
  }
  return {};
}

bool is_contiguous(const TensorRecord& r) {
  int64_t expect = 1;
  for (size_t j = r.size.size(); j-- > 0;) {
    if (r.size[j] != 1 && r.stride[j] != expect) return false;
    expect *= r.size[j];
  }
  return true;
}

// Copies the strided view (offset/size/stride in elements of `es` bytes) into dense `dst`.
void gather(const uint8_t* src, size_t es, const TensorRecord& r, size_t dim, int64_t at, uint8_t*& dst) {
  if (dim == r.size.size()) {
    std::memcpy(dst, src + size_t(at) * es, es);
    dst += es;
    return;
  }
  if (dim + 1 == r.size.size() && r.stride[dim] == 1) {  // a contiguous innermost row
    const size_t n = size_t(r.size[dim]) * es;
    std::memcpy(dst, src + size_t(at) * es, n);
    dst += n;
    return;
  }
  for (int64_t i = 0; i < r.size[dim]; ++i) gather(src, es, r, dim + 1, at + i * r.stride[dim], dst);
}

// Reads storage `key` once and fills every tensor that views it.
Status load_storage(const ZipReader& zip, const std::string& prefix, const std::string& key,
                    const std::vector<TensorRecord*>& users) {
  const std::string name = prefix + "/data/" + key;
  const ZipEntry* e = zip.find(name);
  if (!e) return Err{fmt::format("{}: storage '{}' has no entry '{}'", zip.path(), key, name)};
  TensorRecord& first = *users[0];
  const size_t es = dtype_size(first.dtype);
  if (uint64_t(first.storage_numel) > (uint64_t(1) << 60) / es || e->size != uint64_t(first.storage_numel) * es)
    return Err{fmt::format("{}: entry '{}' has {} bytes but storage '{}' needs {} ({} x {})", zip.path(), name,
                           e->size, key, uint64_t(first.storage_numel) * es, first.storage_numel,
                           dtype_name(first.dtype))};
  if (users.size() == 1 && is_contiguous(first)) {  // straight into the tensor, no copy
    first.data = HostTensor(first.dtype, first.size);
    if (first.data.numel() == 0) return {};
    std::span<uint8_t> out(first.data.bytes);
    return out.size() == e->size ? zip.read_all(*e, out) : zip.read(*e, uint64_t(first.offset) * es, out);
  }
  std::vector<uint8_t> storage(e->size);
  if (Status s = zip.read_all(*e, storage); !s) return s;
  for (TensorRecord* r : users) {
    r->data = HostTensor(r->dtype, r->size);
    if (r->data.numel() == 0) continue;
    uint8_t* dst = r->data.bytes.data();
    gather(storage.data(), es, *r, 0, r->offset, dst);
  }
  return {};
}

Status materialize(const ZipReader& zip, const std::string& prefix, const std::vector<FoundTensor>& found) {
  if (Status s = check_materialized_size(zip.path(), found); !s) return s;
  std::map<std::string, std::vector<TensorRecord*>> by_key;
  for (const auto& f : found) {
    const auto& r = f.rec;
    auto& users = by_key[r->storage_key];
    if (!users.empty() && (users[0]->dtype != r->dtype || users[0]->storage_numel != r->storage_numel))
      return Err{fmt::format("{}: storage '{}' is used as {} x {} and as {} x {}", zip.path(), r->storage_key,
                             users[0]->storage_numel, dtype_name(users[0]->dtype), r->storage_numel,
                             dtype_name(r->dtype))};
    users.push_back(r.get());
  }
  // Storages are independent (pread, CRC, copy): spread them over threads.
  std::vector<std::pair<const std::string*, const std::vector<TensorRecord*>*>> jobs;
  for (auto& [key, users] : by_key) jobs.emplace_back(&key, &users);
  std::vector<Status> status(jobs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < jobs.size(); ++i) {
    try {  // nothing may escape an OpenMP region (std::terminate): out of memory becomes an error
      status[i] = load_storage(zip, prefix, *jobs[i].first, *jobs[i].second);
    } catch (const std::bad_alloc&) {
      status[i] = Err{fmt::format("{}: out of memory materialising storage '{}'", zip.path(), *jobs[i].first)};
    }
  }
  for (Status& s : status)
    if (!s) return s;
  return {};
}

// torch.jit.save writes constants.pkl and the modules' code/ next to data.pkl.
bool is_torchscript(const ZipReader& zip, const std::string& prefix) {
  if (zip.find(prefix + "/constants.pkl")) return true;
  const std::string code = prefix + "/code/";
  return std::any_of(zip.entries().begin(), zip.entries().end(),
                     [&](const ZipEntry& e) { return e.name.compare(0, code.size(), code) == 0; });
}

// The state_dict of a TorchScript module tree: every tensor attribute by its dotted path
// (parameters, buffers, and plain tensor attributes such as OpenAI's attn_mask, which the
// weights loader drops as OpenCLIP does); None, numbers, strings are not state.
Status module_tensors(const PyValue& obj, const std::string& prefix, StateDict& out,
                      std::unordered_set<std::string>& names) {
  for (const auto& [k, v] : obj.dict) {
    const std::string name = prefix + k.s;
    if (v.kind == PyKind::Object) {
      if (Status s = module_tensors(v, name + ".", out, names); !s) return s;
    } else if (v.kind == PyKind::Tensor && v.tensor) {
      if (!names.insert(name).second) return Err{fmt::format("TorchScript module has '{}' twice", name)};
      out.emplace_back(name, v.tensor);
    }
  }
  return {};
}

}  // namespace

bool is_torchscript_archive(const std::string& path) {
  auto zr = ZipReader::open(path, /*list_compressed=*/true);
  if (!zr || zr->entries().empty()) return false;
  const std::string& first = zr->entries()[0].name;
  const size_t slash = first.find('/');
  return slash != std::string::npos && slash > 0 && is_torchscript(*zr, first.substr(0, slash));
}

Result<PyValue> load_pt(const std::string& path) {
  auto zr = ZipReader::open(path, /*list_compressed=*/true);  // a compressed record is refused when read
  if (!zr) {
    // Say what the file is when it is an older torch format.
    auto f = ReadFile::open(path);
    auto head = f ? f->read(0, 2) : Result<std::vector<uint8_t>>(Err{""});
    if (head && (*head)[0] == 0x80)
      return Err{fmt::format("{} is a legacy (pre-1.6, non-zip) torch.save file; re-save it with a current torch",
                             path)};
    return Err{zr.error()};
  }
  const ZipReader& zip = *zr;
  if (zip.entries().empty()) return Err{fmt::format("{}: empty zip archive, not a torch checkpoint", path)};
  const std::string& first = zip.entries()[0].name;
  const size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0)
    return Err{fmt::format("{}: entry '{}' is not in a subdirectory (not a torch.save archive)", path, first)};
  const std::string prefix = first.substr(0, slash);
  for (const ZipEntry& e : zip.entries()) {
    if (e.name.compare(0, prefix.size() + 1, prefix + "/") != 0)
      return Err{fmt::format("{}: entry '{}' is not under the archive folder '{}/'", path, e.name, prefix)};
  }
  const ZipEntry* version = zip.find(prefix + "/version");
  if (!version) version = zip.find(prefix + "/.data/version");
  if (!version) return Err{fmt::format("{}: no '{}/version' record (not a torch.save archive)", path, prefix)};
  auto vtext = zip.read_all(*version);
  if (!vtext) return Err{vtext.error()};
  std::string v(vtext->begin(), vtext->end());
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
  if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos)
    return Err{fmt::format("{}: version record '{}' is not an integer", path, v)};
  if (const ZipEntry* bo = zip.find(prefix + "/byteorder")) {
    auto b = zip.read_all(*bo);
    if (!b) return Err{b.error()};
    std::string order(b->begin(), b->end());
    if (order != "little") return Err{fmt::format("{}: byteorder '{}' is not supported (only little)", path, order)};
  }
  const bool torchscript = is_torchscript(zip, prefix);
  const ZipEntry* pkl = zip.find(prefix + "/data.pkl");
  if (!pkl) {
    return Err{fmt::format("{}: no '{}/data.pkl' record (not a torch.save archive{})", path, prefix,
                           torchscript ? "; a TorchScript archive without one is from a torch older than 1.4" : "")};
  }
  if (pkl->size > (1u << 30)) return Err{fmt::format("{}: data.pkl is {} bytes, too large", path, pkl->size)};
  auto bytes = zip.read_all(*pkl);
  if (!bytes) return Err{bytes.error()};
  // A TorchScript archive's data.pkl holds the module objects; their code/ is never read.
  auto root = unpickle(*bytes, path + ":" + pkl->name, {.torchscript = torchscript});
  if (!root) return root;
  std::vector<FoundTensor> found;
  std::unordered_set<const TensorRecord*> seen;
  collect_tensors(*root, "", found, seen);
  if (Status s = materialize(zip, prefix, found); !s) return Err{s.error()};
  return root;
}

void save_pt(const std::string& path, const PyValue& value, const SavePtOptions& opt) {
  std::unordered_map<const TensorRecord*, std::string> keys;
  std::vector<std::shared_ptr<TensorRecord>> storages;
  auto key_of = [&](const std::shared_ptr<TensorRecord>& t) {
    auto [it, inserted] = keys.emplace(t.get(), std::to_string(keys.size()));
    if (inserted) storages.push_back(t);
    return it->second;
  };
  const std::vector<uint8_t> pkl = pickle_dumps(value, key_of);
  std::string base = fs::basename(path);
  std::string prefix = base.substr(0, base.find_last_of('.'));
  if (prefix.empty()) prefix = "archive";
  fs::write_atomic(path, [&](const fs::Sink& sink) {
    ZipWriter zip(sink, {.alignment = 64, .force_zip64 = opt.force_zip64});
    zip.add(prefix + "/data.pkl", pkl);
    zip.add(prefix + "/byteorder", std::string_view("little"));
    for (const auto& t : storages) zip.add(prefix + "/data/" + keys.at(t.get()), t->data.bytes);
    zip.add(prefix + "/version", std::string_view("3\n"));
    zip.finish();
  });
}

Result<StateDict> extract_state_dict(const PyValue& checkpoint) {
  if (checkpoint.kind == PyKind::Object) {  // a TorchScript module (load_pt of a torch.jit.save archive)
    StateDict out;
    std::unordered_set<std::string> names;
    if (Status s = module_tensors(checkpoint, "", out, names); !s) return Err{s.error()};
    if (out.empty()) return Err{fmt::format("the TorchScript module {} holds no tensors", checkpoint.s)};
    return out;
  }
  const PyValue* sd = &checkpoint;
  if (checkpoint.kind == PyKind::Dict) {
    if (const PyValue* inner = checkpoint.get("state_dict")) sd = inner;
  }
  if (sd->kind != PyKind::Dict) return Err{fmt::format("the checkpoint holds a {}, not a state_dict", py_kind_name(sd->kind))};
  bool strip = !sd->dict.empty() && sd->dict[0].first.kind == PyKind::Str &&
               sd->dict[0].first.s.compare(0, 6, "module") == 0;
  StateDict out;
  std::unordered_set<std::string> names;
  for (const auto& [k, v] : sd->dict) {
    if (k.kind != PyKind::Str) return Err{fmt::format("state_dict key {} is not a str", k.repr())};
    std::string name = k.s;
    if (strip && name.compare(0, 7, "module.") == 0) name = name.substr(7);
    if (v.kind != PyKind::Tensor || !v.tensor)
      return Err{fmt::format("state_dict entry '{}' is a {}, not a tensor", k.s, py_kind_name(v.kind))};
    if (!names.insert(name).second)
      return Err{fmt::format("state_dict has '{}' twice after removing the 'module.' prefix", name)};
    out.emplace_back(std::move(name), v.tensor);
  }
  return out;
}

PyValue make_state_dict(std::vector<std::pair<std::string, HostTensor>> tensors) {
  PyValue d = PyValue::new_dict(true);
  d.dict.reserve(tensors.size());
  for (auto& [name, t] : tensors) d.dict.emplace_back(PyValue::str(name), PyValue::from_tensor(std::move(t)));
  return d;
}

}  // namespace oc::io
