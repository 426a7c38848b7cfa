// The restricted pickle VM. Objects live in an arena of nodes (so memo references and
// in-place SETITEMS/APPENDS keep Python's sharing semantics) and are copied into a PyValue
// tree at STOP, with a depth limit, a copy budget (no exponential blow-up through shared
// references) and cycle detection.
#include <unordered_map>

#include <fmt/format.h>

#include "io/le.h"
#include "io/pickle.h"

namespace oc::io {
namespace {

const char* opcode_name(uint8_t c) {
  switch (c) {
    case '(': return "MARK"; case '.': return "STOP"; case '0': return "POP"; case '1': return "POP_MARK";
    case '2': return "DUP"; case 'F': return "FLOAT"; case 'I': return "INT"; case 'J': return "BININT";
    case 'K': return "BININT1"; case 'L': return "LONG"; case 'M': return "BININT2"; case 'N': return "NONE";
    case 'P': return "PERSID"; case 'Q': return "BINPERSID"; case 'R': return "REDUCE"; case 'S': return "STRING";
    case 'T': return "BINSTRING"; case 'U': return "SHORT_BINSTRING"; case 'V': return "UNICODE";
    case 'X': return "BINUNICODE"; case 'a': return "APPEND"; case 'b': return "BUILD"; case 'c': return "GLOBAL";
    case 'd': return "DICT"; case '}': return "EMPTY_DICT"; case 'e': return "APPENDS"; case 'g': return "GET";
    case 'h': return "BINGET"; case 'i': return "INST"; case 'j': return "LONG_BINGET"; case 'l': return "LIST";
    case ']': return "EMPTY_LIST"; case 'o': return "OBJ"; case 'p': return "PUT"; case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT"; case 's': return "SETITEM"; case 't': return "TUPLE"; case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS"; case 'G': return "BINFLOAT"; case 0x80: return "PROTO"; case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1"; case 0x83: return "EXT2"; case 0x84: return "EXT4"; case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2"; case 0x87: return "TUPLE3"; case 0x88: return "NEWTRUE"; case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1"; case 0x8b: return "LONG4"; case 'B': return "BINBYTES"; case 'C': return "SHORT_BINBYTES";
    case 0x8c: return "SHORT_BINUNICODE"; case 0x8d: return "BINUNICODE8"; case 0x8e: return "BINBYTES8";
    case 0x8f: return "EMPTY_SET"; case 0x90: return "ADDITEMS"; case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX"; case 0x93: return "STACK_GLOBAL"; case 0x94: return "MEMOIZE";
    case 0x95: return "FRAME"; case 0x96: return "BYTEARRAY8"; case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
  }
  return "unknown";
}

enum class Global : uint8_t {
  OrderedDict,
  RebuildTensorV2,
  RebuildParameter,
  Storage,
  TorchSize,
  CodecsEncode,
  Set,
  TorchClass,  // TorchScript mode: a `__torch__.*` module class (NEWOBJ + BUILD only)
  JitList,     // TorchScript mode: torch.jit._pickle.build_{int,double,bool,tensor}list(list) -> list
  JitTypeTag,  // TorchScript mode: torch.jit._pickle.restore_type_tag(obj, str) -> obj
};
enum class NodeKind : uint8_t { Value, Global, Storage };

struct Node {
  NodeKind nk = NodeKind::Value;
  PyKind kind = PyKind::None;
  bool ordered = false, b = false;
  int64_t i = 0;  // Int value; Storage: numel
  double f = 0;
  std::string s;  // Str/Bytes; Global: "module.name"; Storage: key
  std::vector<uint32_t> items;
  std::vector<std::pair<uint32_t, uint32_t>> dict;
  std::unique_ptr<std::unordered_map<std::string, uint32_t>> dict_index;  // canonical key -> slot
  Global g = Global::OrderedDict;
  DType dtype = DType::F32;  // Storage global / Storage node
  std::string location;      // Storage node
  std::shared_ptr<TensorRecord> tensor;
};

struct VmError {
  std::string msg;
};

// The memory the VM may hold for a pickle of N bytes: kMemPerByte x N + kMemSlack (its nodes,
// memo, containers, dict keys, and the PyValue tree made at STOP, counted as they are made).
// A 1-byte opcode makes a node of ~200 bytes and STOP copies it into a PyValue of ~130: 64 x N
// stops such a pickle at a fifth of its size, and shared references copied at STOP at once (a
// 10 MB pickle had taken 2.96 GB, 20 MB ended in a bare std::bad_alloc; now 0.7 GB at most).
// Real checkpoints' pickles are far under 1 MB: torch.save of a 288-tensor state_dict with its
// AdamW state (1152 tensors) is 102,520 bytes of pickle, ~90 bytes a tensor, so ViT-bigG's
// ~4000 would be ~0.4 MB; the slack holds such a pickle whole.
constexpr size_t kMemPerByte = 64;
constexpr size_t kMemSlack = size_t(64) << 20;
constexpr size_t kMemoEntry = 64;  // an unordered_map node and its bucket

struct StorageName {
  const char* name;
  DType dtype;
};
constexpr StorageName kStorages[] = {
    {"FloatStorage", DType::F32}, {"HalfStorage", DType::F16}, {"BFloat16Storage", DType::BF16},
    {"DoubleStorage", DType::F64}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16}, {"CharStorage", DType::I8},   {"ByteStorage", DType::U8},
    {"BoolStorage", DType::Bool}};

class Vm {
 public:
  Vm(std::span<const uint8_t> data, const std::string& where, const UnpickleOptions& opt)
      : d_(data), where_(where), opt_(opt), mem_cap_(kMemPerByte * data.size() + kMemSlack) {}
  PyValue run();

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw VmError{fmt::format("{}: pickle opcode {} (0x{:02x}) at byte {}: {}", where_, opcode_name(op_), op_, at_, what)};
  }
  const uint8_t* take(size_t n) {
    if (d_.size() - pos_ < n) fail(fmt::format("needs {} argument bytes but the data ends at byte {}", n, d_.size()));
    const uint8_t* p = d_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::string line() {
    for (size_t i = pos_; i < d_.size() && i - pos_ < 512; ++i) {
      if (d_[i] == '\n') {
        std::string s(reinterpret_cast<const char*>(d_.data() + pos_), i - pos_);
        pos_ = i + 1;
        return s;
      }
    }
    fail("unterminated text argument");
  }
  // Counts `bytes` of memory against the file's cap (see kMemPerByte).
  void charge(size_t bytes) {
    mem_ += bytes;
    if (mem_ > mem_cap_)
      throw VmError{
          fmt::format("{}: pickle at byte {}: unpickling needs over {} bytes of memory, over the cap of {} x "
                      "the pickle's {} bytes + {} MiB (shared references or containers expand too far)",
                      where_, at_, mem_cap_, kMemPerByte, d_.size(), kMemSlack >> 20)};
  }
  uint32_t push_node(Node n) {
    charge(sizeof(Node) + sizeof(uint32_t) + n.s.size());
    nodes_.push_back(std::move(n));
    stack_.push_back(uint32_t(nodes_.size() - 1));
    return stack_.back();
  }
  uint32_t push_value(PyKind k) {
    Node n;
    n.kind = k;
    return push_node(std::move(n));
  }
  uint32_t pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  uint32_t top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    return stack_.back();
  }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> r(stack_.begin() + m, stack_.end());
    stack_.resize(m);
    return r;
  }
  Node& node(uint32_t i) { return nodes_[i]; }
  bool is(uint32_t i, PyKind k) { return nodes_[i].nk == NodeKind::Value && nodes_[i].kind == k; }
  std::string describe(uint32_t i) {
    const Node& n = nodes_[i];
    if (n.nk == NodeKind::Global) return "global " + n.s;
    if (n.nk == NodeKind::Storage) return "storage";
    return std::string(py_kind_name(n.kind));
  }

  void push_string(PyKind k, size_t n) {
    const uint8_t* p = take(n);
    Node v;
    v.kind = k;
    v.s.assign(reinterpret_cast<const char*>(p), n);
    push_node(std::move(v));
  }
  void push_int(int64_t v) { node(push_value(PyKind::Int)).i = v; }
  void push_global(const std::string& module, const std::string& name);
  bool torchscript_global(const std::string& module, const std::string& name, Node& n) const;
  void build();
  void tuple_of(std::vector<uint32_t> items) {
    charge(sizeof(uint32_t) * items.size());
    node(push_value(PyKind::Tuple)).items = std::move(items);
  }
  void setitems(uint32_t dict, const std::vector<uint32_t>& kv);
  void additems(uint32_t target, const std::vector<uint32_t>& values);
  void reduce(bool newobj);
  void codecs_encode(const std::vector<uint32_t>& a);
  void rebuild_parameter(const std::vector<uint32_t>& a);
  void rebuild_tensor_v2(const std::vector<uint32_t>& a);
  void check_view(const TensorRecord& rec, int64_t count);
  void persid();
  // run()'s opcodes by family; each returns false for an opcode not of its family.
  bool scalar_op();
  bool container_op();
  bool object_op();
  void push_long1();
  void push_binfloat();
  PyValue stop();
  std::string canonical_key(uint32_t i, int depth);
  PyValue materialize(uint32_t i, int depth);

  std::span<const uint8_t> d_;
  std::string where_;
  UnpickleOptions opt_;
  size_t pos_ = 0, at_ = 0;
  uint8_t op_ = 0;
  std::vector<Node> nodes_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  // Materialization state: nodes on the current path (cycle check) and the copy budget.
  std::vector<uint8_t> on_path_;
  size_t budget_ = 0;
  size_t key_budget_ = 0;
  size_t mem_ = 0, mem_cap_;
};

void Vm::push_global(const std::string& module, const std::string& name) {
  Node n;
  n.nk = NodeKind::Global;
  n.s = module + "." + name;
  if (module == "collections" && name == "OrderedDict") n.g = Global::OrderedDict;
  else if (module == "torch._utils" && name == "_rebuild_tensor_v2") n.g = Global::RebuildTensorV2;
  else if (module == "torch._utils" && name == "_rebuild_parameter") n.g = Global::RebuildParameter;
  else if (module == "torch" && name == "Size") n.g = Global::TorchSize;
  else if (module == "_codecs" && name == "encode") n.g = Global::CodecsEncode;
  else if ((module == "builtins" || module == "__builtin__") && name == "set") n.g = Global::Set;
  else if (torchscript_global(module, name, n)) {
  } else {
    bool found = false;
    if (module == "torch") {
      for (const auto& st : kStorages) {
        if (name == st.name) n.g = Global::Storage, n.dtype = st.dtype, found = true;
      }
    }
    if (!found)
      fail(
          fmt::format("global '{}' is not allowed (allowed: collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
                      "torch._utils._rebuild_parameter, torch.<dtype>Storage, torch.Size, _codecs.encode, set{})",
                      n.s,
                      opt_.torchscript                    ? "; in TorchScript data: __torch__.* module classes, "
                                                            "torch.jit._pickle.build_*list and restore_type_tag"
                      : module.rfind("__torch__", 0) == 0 ? "; this is TorchScript data"
                                                          : ""));
  }
  push_node(std::move(n));
}

// TorchScript data.pkl: module classes and the list rebuilders of torch/jit/_pickle.py.
bool Vm::torchscript_global(const std::string& module, const std::string& name, Node& n) const {
  if (!opt_.torchscript) return false;
  if ((module == "__torch__" || module.rfind("__torch__.", 0) == 0) && !name.empty()) {
    n.g = Global::TorchClass;
    return true;
  }
  if (module != "torch.jit._pickle") return false;
  if (name == "build_intlist" || name == "build_doublelist" || name == "build_boollist" || name == "build_tensorlist")
    n.g = Global::JitList;
  else if (name == "restore_type_tag")
    n.g = Global::JitTypeTag;
  else
    return false;
  return true;
}

// BUILD: the state of a TorchScript module object is its attribute dict; on a dict (what
// torch.save's OrderedDicts carry: nn.Module's _metadata) there is nothing to keep.
void Vm::build() {
  uint32_t state = pop();
  const uint32_t target = top();
  if (is(target, PyKind::Dict)) return;
  if (!is(target, PyKind::Object)) fail("BUILD on a " + describe(target) + " is not supported");
  if (!is(state, PyKind::Dict))
    fail(fmt::format("object of class {} has a {} state (a custom __setstate__), not an attribute dict", node(target).s,
                     describe(state)));
  if (!node(target).dict.empty()) fail(fmt::format("object of class {} is built twice", node(target).s));
  for (auto [k, v] : node(state).dict)
    if (!is(k, PyKind::Str)) fail(fmt::format("object of class {} has a non-str attribute name", node(target).s));
  const auto attrs = node(state).dict;  // copy: node() references may move
  charge(64 * attrs.size());             // the attribute dict's pairs, as setitems charges them
  node(target).dict = attrs;
}

std::string Vm::canonical_key(uint32_t i, int depth) {
  if (depth == 0) key_budget_ = 1 << 16;  // shared sub-tuples must not expand without bound
  if (depth > 64) fail("dict key nests too deeply");
  if (key_budget_-- == 0) fail("dict key is too large");
  const Node& n = nodes_[i];
  if (n.nk != NodeKind::Value) fail("dict key is a " + describe(i));
  switch (n.kind) {
    case PyKind::None: return "n";
    case PyKind::Bool: return n.b ? "b1" : "b0";
    case PyKind::Int: return "i" + std::to_string(n.i);
    case PyKind::Float: return fmt::format("f{}", n.f);
    case PyKind::Str: return "s" + std::to_string(n.s.size()) + ":" + n.s;
    case PyKind::Bytes: return "y" + std::to_string(n.s.size()) + ":" + n.s;
    case PyKind::Tuple: {
      std::string k = "t(";
      for (uint32_t c : n.items) k += canonical_key(c, depth + 1) + ",";
      return k + ")";
    }
    default: fail(fmt::format("unhashable dict key of type {}", py_kind_name(n.kind)));
  }
}

void Vm::setitems(uint32_t d, const std::vector<uint32_t>& kv) {
  if (!is(d, PyKind::Dict)) fail("target is a " + describe(d) + ", not a dict");
  if (kv.size() % 2) fail("odd number of items for a dict");
  Node& dn = node(d);
  if (!dn.dict_index) dn.dict_index = std::make_unique<std::unordered_map<std::string, uint32_t>>();
  for (size_t j = 0; j < kv.size(); j += 2) {
    std::string k = canonical_key(kv[j], 0);
    charge(k.size() + 64);  // the index entry (key, slot, hash node) and the dict's pair
    auto [it, inserted] = dn.dict_index->emplace(std::move(k), uint32_t(dn.dict.size()));
    if (inserted) dn.dict.emplace_back(kv[j], kv[j + 1]);
    else dn.dict[it->second].second = kv[j + 1];  // Python: the last value wins, order stays
  }
}

void Vm::additems(uint32_t t, const std::vector<uint32_t>& values) {
  if (!is(t, PyKind::List) && !is(t, PyKind::Set)) fail("target is a " + describe(t) + ", not a list or set");
  charge(sizeof(uint32_t) * values.size());
  auto& items = node(t).items;
  items.insert(items.end(), values.begin(), values.end());
}

void Vm::persid() {
  uint32_t pid = pop();
  if (!is(pid, PyKind::Tuple)) fail("persistent id is a " + describe(pid) + ", not a tuple");
  const auto it = node(pid).items;
  if (it.size() != 5 || !is(it[0], PyKind::Str) || node(it[0]).s != "storage")
    fail("persistent id is not ('storage', type, key, location, numel)");
  if (node(it[1]).nk != NodeKind::Global || node(it[1]).g != Global::Storage)
    fail("persistent id storage type is a " + describe(it[1]));
  if (!is(it[2], PyKind::Str) || !is(it[3], PyKind::Str) || !is(it[4], PyKind::Int) || node(it[4]).i < 0)
    fail("persistent id fields must be (str key, str location, int numel >= 0)");
  Node s;
  s.nk = NodeKind::Storage;
  s.dtype = node(it[1]).dtype;
  s.s = node(it[2]).s;
  s.location = node(it[3]).s;
  s.i = node(it[4]).i;
  push_node(std::move(s));
}

void Vm::reduce(bool newobj) {
  uint32_t args = pop(), fn = pop();
  if (node(fn).nk != NodeKind::Global) fail("callable is a " + describe(fn) + ", not an allowed global");
  if (!is(args, PyKind::Tuple)) fail("arguments are a " + describe(args) + ", not a tuple");
  const Global g = node(fn).g;
  const std::string gname = node(fn).s;
  const std::vector<uint32_t> a = node(args).items;  // copy: push_node may move nodes_
  const bool is_class =
      g == Global::OrderedDict || g == Global::TorchSize || g == Global::Set || g == Global::TorchClass;
  if (newobj && !is_class) fail(gname + " is not a class");
  switch (g) {
    case Global::OrderedDict: {
      if (!a.empty()) fail("collections.OrderedDict with arguments is not supported");
      node(push_value(PyKind::Dict)).ordered = true;
      return;
    }
    case Global::TorchSize: {
      if (a.size() != 1 || !is(a[0], PyKind::Tuple)) fail("torch.Size expects one tuple");
      tuple_of(node(a[0]).items);
      return;
    }
    case Global::Set: {
      uint32_t s = push_value(PyKind::Set);
      if (a.size() == 1 && (is(a[0], PyKind::List) || is(a[0], PyKind::Tuple))) node(s).items = node(a[0]).items;
      else if (!a.empty()) fail("set expects no argument or one list");
      return;
    }
    case Global::CodecsEncode:
      codecs_encode(a);
      return;
    case Global::TorchClass: {
      if (!newobj) fail(gname + " is a TorchScript class: only NEWOBJ makes one");
      if (!a.empty()) fail(gname + ": a TorchScript object is made without arguments");
      uint32_t o = push_value(PyKind::Object);
      node(o).s = gname;
      return;
    }
    case Global::JitList:
      if (a.size() != 1 || !is(a[0], PyKind::List)) fail(gname + " expects one list");
      stack_.push_back(a[0]);
      return;
    case Global::JitTypeTag:
      if (a.size() != 2 || !is(a[1], PyKind::Str)) fail(gname + " expects (object, str)");
      stack_.push_back(a[0]);
      return;
    case Global::Storage: fail("storage types cannot be called");
    case Global::RebuildParameter:
      rebuild_parameter(a);
      return;
    case Global::RebuildTensorV2:
      rebuild_tensor_v2(a);
      return;
  }
}

void Vm::codecs_encode(const std::vector<uint32_t>& a) {
  if (a.size() != 2 || !is(a[0], PyKind::Str) || !is(a[1], PyKind::Str) ||
      (node(a[1]).s != "latin1" && node(a[1]).s != "latin-1"))
    fail("_codecs.encode expects (str, 'latin1')");
  // The str holds code points 0..255 as UTF-8; the bytes are those code points.
  const std::string& u = node(a[0]).s;
  std::string out;
  for (size_t j = 0; j < u.size(); ++j) {
    unsigned char c = u[j];
    if (c < 0x80)
      out += char(c);
    else if ((c == 0xc2 || c == 0xc3) && j + 1 < u.size())
      out += char(((c & 0x03) << 6) | (u[++j] & 0x3f));
    else
      fail("_codecs.encode: text has a code point above 255");
  }
  Node b;
  b.kind = PyKind::Bytes;
  b.s = std::move(out);
  push_node(std::move(b));
}

void Vm::rebuild_parameter(const std::vector<uint32_t>& a) {
  if (a.size() != 3 || !is(a[0], PyKind::Tensor) || !is(a[1], PyKind::Bool))
    fail("_rebuild_parameter expects (tensor, bool, hooks)");
  auto rec = std::make_shared<TensorRecord>(*node(a[0]).tensor);
  rec->requires_grad = node(a[1]).b;
  rec->parameter = true;
  node(push_value(PyKind::Tensor)).tensor = std::move(rec);
}

void Vm::rebuild_tensor_v2(const std::vector<uint32_t>& a) {
  if (a.size() != 6 && a.size() != 7)
    fail(fmt::format("_rebuild_tensor_v2 expects 6 or 7 arguments, got {}", a.size()));
  if (node(a[0]).nk != NodeKind::Storage) fail("_rebuild_tensor_v2: first argument is a " + describe(a[0]));
  if (!is(a[1], PyKind::Int) || !is(a[2], PyKind::Tuple) || !is(a[3], PyKind::Tuple) || !is(a[4], PyKind::Bool) ||
      !is(a[5], PyKind::Dict))
    fail("_rebuild_tensor_v2 expects (storage, int, tuple, tuple, bool, dict)");
  auto rec = std::make_shared<TensorRecord>();
  const Node& st = node(a[0]);
  rec->storage_key = st.s;
  rec->dtype = st.dtype;
  rec->location = st.location;
  rec->storage_numel = st.i;
  rec->offset = node(a[1]).i;
  rec->requires_grad = node(a[4]).b;
  const auto &sz = node(a[2]).items, &sd = node(a[3]).items;
  if (sz.size() != sd.size()) fail(fmt::format("size has {} dims but stride has {}", sz.size(), sd.size()));
  if (sz.size() > 64) fail("more than 64 dimensions");
  int64_t count = 1;
  for (size_t j = 0; j < sz.size(); ++j) {
    if (!is(sz[j], PyKind::Int) || !is(sd[j], PyKind::Int) || node(sz[j]).i < 0 || node(sd[j]).i < 0)
      fail("size and stride must be non-negative ints");
    rec->size.push_back(node(sz[j]).i);
    rec->stride.push_back(node(sd[j]).i);
    if (__builtin_mul_overflow(count, rec->size.back(), &count)) fail("element count overflows");
  }
  check_view(*rec, count);
  node(push_value(PyKind::Tensor)).tensor = std::move(rec);
}

// The view (offset, size, stride) of `count` elements stays inside its storage, with no
// overflow on the way.
void Vm::check_view(const TensorRecord& rec, int64_t count) {
  int64_t extent = 0;  // largest element index reached, relative to offset
  if (rec.offset < 0) fail("negative storage offset");
  if (count <= 0) return;
  for (size_t j = 0; j < rec.size.size(); ++j) {
    int64_t step;
    if (__builtin_mul_overflow(rec.size[j] - 1, rec.stride[j], &step) || __builtin_add_overflow(extent, step, &extent))
      fail("view extent overflows");
  }
  int64_t last;
  if (__builtin_add_overflow(rec.offset, extent, &last) || last >= rec.storage_numel)
    fail(fmt::format("view (offset {}, size {}, stride {}) reaches past storage '{}' of {} elements", rec.offset,
                     shape_str(rec.size), shape_str(rec.stride), rec.storage_key, rec.storage_numel));
}

PyValue Vm::materialize(uint32_t i, int depth) {
  if (depth > 256) throw VmError{where_ + ": pickle result nests more than 256 levels deep"};
  if (budget_ == 0) throw VmError{where_ + ": pickle result is too large (shared references expand too far)"};
  --budget_;
  const Node& n = nodes_[i];
  charge(sizeof(PyValue) + n.s.size());
  if (n.nk != NodeKind::Value)
    throw VmError{fmt::format("{}: pickle result contains a bare {}", where_, n.nk == NodeKind::Global ? n.s : "storage")};
  if (on_path_[i]) throw VmError{where_ + ": pickle result contains a reference cycle"};
  PyValue v;
  v.kind = n.kind;
  v.ordered = n.ordered;
  v.b = n.b;
  v.i = n.i;
  v.f = n.f;
  v.s = n.s;
  v.tensor = n.tensor;
  on_path_[i] = 1;
  v.items.reserve(n.items.size());
  for (uint32_t c : n.items) v.items.push_back(materialize(c, depth + 1));
  v.dict.reserve(n.dict.size());
  for (auto [k, x] : n.dict) v.dict.emplace_back(materialize(k, depth + 1), materialize(x, depth + 1));
  on_path_[i] = 0;
  return v;
}

PyValue Vm::run() {
  for (;;) {
    at_ = pos_;
    if (pos_ >= d_.size()) throw VmError{fmt::format("{}: pickle ends at byte {} without STOP", where_, pos_)};
    op_ = d_[pos_++];
    if (op_ == '.') return stop();
    if (!scalar_op() && !container_op() && !object_op()) fail("this opcode is not allowed in a checkpoint");
  }
}

PyValue Vm::stop() {
  if (stack_.empty()) fail("empty stack");
  on_path_.assign(nodes_.size(), 0);
  budget_ = 16 * nodes_.size() + (1 << 20);
  return materialize(stack_.back(), 0);
}

// LONG1: little-endian two's complement.
void Vm::push_long1() {
  uint8_t n = *take(1);
  if (n > 8) fail(fmt::format("integer of {} bytes does not fit int64", n));
  const uint8_t* p = take(n);
  uint64_t u = 0;
  for (int j = n - 1; j >= 0; --j) u = (u << 8) | p[j];
  if (n > 0 && n < 8 && (p[n - 1] & 0x80)) u |= ~uint64_t(0) << (8 * n);
  push_int(int64_t(u));
}

// BINFLOAT: big-endian IEEE double.
void Vm::push_binfloat() {
  const uint8_t* p = take(8);
  uint64_t u = 0;
  for (int j = 0; j < 8; ++j) u = (u << 8) | p[j];
  double f;
  std::memcpy(&f, &u, 8);
  node(push_value(PyKind::Float)).f = f;
}

// run()'s opcode tables, one case a line as in opcode_name(): clang-format would spread them
// over three lines each.
// clang-format off

// PROTO and FRAME, and the opcodes that push a None, bool, int, float, str or bytes.
bool Vm::scalar_op() {
  switch (op_) {
    case 0x80: {  // PROTO
      uint8_t p = *take(1);
      if (p < 2 || p > 5) fail(fmt::format("protocol {} is not supported", p));
      return true;
    }
    case 0x95: take(8); return true;  // FRAME: framing is only a read-ahead hint
    case 'N': push_value(PyKind::None); return true;
    case 0x88: case 0x89: node(push_value(PyKind::Bool)).b = op_ == 0x88; return true;
    case 'K': push_int(*take(1)); return true;
    case 'M': push_int(load_le<uint16_t>(take(2))); return true;
    case 'J': push_int(load_le<int32_t>(take(4))); return true;
    case 0x8a: push_long1(); return true;
    case 'G': push_binfloat(); return true;
    case 'X': push_string(PyKind::Str, load_le<uint32_t>(take(4))); return true;
    case 0x8c: push_string(PyKind::Str, *take(1)); return true;
    case 0x8d: push_string(PyKind::Str, size_t(load_le<uint64_t>(take(8)))); return true;
    case 'U': push_string(PyKind::Str, *take(1)); return true;  // SHORT_BINSTRING (torch.load decodes as str)
    case 'B': push_string(PyKind::Bytes, load_le<uint32_t>(take(4))); return true;
    case 'C': push_string(PyKind::Bytes, *take(1)); return true;
    case 0x8e: push_string(PyKind::Bytes, size_t(load_le<uint64_t>(take(8)))); return true;
    default: return false;
  }
}

// MARK, and the opcodes that make or fill a tuple, list, dict or set.
bool Vm::container_op() {
  switch (op_) {
    case '(': marks_.push_back(stack_.size()); return true;
    case ')': push_value(PyKind::Tuple); return true;
    case 0x85: case 0x86: case 0x87: {
      const size_t n = op_ - 0x84;
      std::vector<uint32_t> items(n);
      for (size_t j = n; j-- > 0;) items[j] = pop();
      tuple_of(std::move(items));
      return true;
    }
    case 't': tuple_of(pop_mark()); return true;
    case ']': push_value(PyKind::List); return true;
    case '}': push_value(PyKind::Dict); return true;
    case 0x8f: push_value(PyKind::Set); return true;
    case 'a': {
      uint32_t v = pop();
      additems(top(), {v});
      return true;
    }
    case 'e': case 0x90: {  // APPENDS, ADDITEMS
      auto vs = pop_mark();
      additems(top(), vs);
      return true;
    }
    case 's': {
      uint32_t v = pop(), k = pop();
      setitems(top(), {k, v});
      return true;
    }
    case 'u': {
      auto kv = pop_mark();
      setitems(top(), kv);
      return true;
    }
    default: return false;
  }
}

// Globals and calls (the allow-list), persistent ids (storages), BUILD, and the memo.
bool Vm::object_op() {
  switch (op_) {
    case 'c': {
      std::string module = line();
      std::string name = line();
      push_global(module, name);
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      uint32_t name = pop(), module = pop();
      if (!is(name, PyKind::Str) || !is(module, PyKind::Str)) fail("module and name must be str");
      push_global(node(module).s, node(name).s);
      return true;
    }
    case 'R': reduce(false); return true;
    case 0x81: reduce(true); return true;
    case 'Q': persid(); return true;
    case 'b': build(); return true;
    case 'q': charge(kMemoEntry); memo_[*take(1)] = top(); return true;
    case 'r': charge(kMemoEntry); memo_[load_le<uint32_t>(take(4))] = top(); return true;
    case 0x94: charge(kMemoEntry); memo_[memo_.size()] = top(); return true;
    case 'h': case 'j': {
      uint64_t k = op_ == 'h' ? *take(1) : load_le<uint32_t>(take(4));
      auto it = memo_.find(k);
      if (it == memo_.end()) fail(fmt::format("memo key {} was never stored", k));
      stack_.push_back(it->second);
      return true;
    }
    default: return false;
  }
}
// clang-format on

}  // namespace

Result<PyValue> unpickle(std::span<const uint8_t> data, const std::string& where, const UnpickleOptions& opt) {
  try {
    Vm vm(data, where, opt);
    return vm.run();
  } catch (const VmError& e) {
    return Err{e.msg};
  }
}

}  // namespace oc::io
