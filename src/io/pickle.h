// A restricted pickle reader and a protocol-2 writer for the objects torch checkpoints
// hold: None, bool, int, float, str, bytes, tuple, list, dict/OrderedDict, set, tensors.
// The reader is a small pickle VM that knows only the opcodes torch emits (formats.md
// 1.3 + 1.6) and an allowlist of globals (OrderedDict, torch tensor/parameter rebuilders,
// torch.<X>Storage, torch.Size, _codecs.encode, set): anything else is an error naming the
// opcode or global and its byte offset. Nothing is ever executed. In TorchScript mode
// (data.pkl of a torch.jit.save archive) it also takes the archive's module objects
// (`__torch__.<...>` classes, built with NEWOBJ + BUILD from an attribute dict) as plain
// attribute holders (PyKind::Object) and torch.jit._pickle's list rebuilders; the archive's
// code/ is never read.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"

namespace oc::io {

// One tensor of a checkpoint. The pickle layer fills the view fields (where the values
// live); load_pt fills `data` with the materialized contiguous values. When writing, only
// `data` and `requires_grad` are used (every tensor gets its own contiguous storage).
struct TensorRecord {
  std::string storage_key;        // "0", "1", ... (opaque)
  DType dtype = DType::F32;
  std::string location = "cpu";   // "cpu", "cuda:0", ...
  int64_t storage_numel = 0;      // elements in the storage
  int64_t offset = 0;             // in elements
  Shape size;
  std::vector<int64_t> stride;    // in elements
  bool requires_grad = false;
  bool parameter = false;         // came through torch._utils._rebuild_parameter
  HostTensor data;
};

enum class PyKind : uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Set, Tensor, Object };
std::string_view py_kind_name(PyKind k);

struct PyDictItem;

// A Python object tree. Dicts keep insertion order; `ordered` marks collections.OrderedDict
// (what state_dicts are) as opposed to a plain dict (OpenCLIP's checkpoint dict).
struct PyValue {
  PyKind kind = PyKind::None;
  bool ordered = false;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                                  // Str (UTF-8) or Bytes; Object: its class
  std::vector<PyValue> items;                     // Tuple, List, Set
  std::vector<PyDictItem> dict;                   // Dict; Object: its attributes (str keys)
  std::shared_ptr<TensorRecord> tensor;           // Tensor (shared when pickled once, used twice)

  static PyValue none();
  static PyValue boolean(bool v);
  static PyValue integer(int64_t v);
  static PyValue real(double v);
  static PyValue str(std::string v);
  static PyValue bytes(std::string v);
  static PyValue tuple(std::vector<PyValue> v);
  static PyValue list(std::vector<PyValue> v);
  static PyValue new_dict(bool ordered_dict = false);
  static PyValue from_tensor(HostTensor t, bool requires_grad = false);

  bool is(PyKind k) const { return kind == k; }
  // Dict with string keys: the value for `key`, or nullptr.
  const PyValue* get(std::string_view key) const;
  PyValue* get(std::string_view key);
  // Dict: inserts or replaces (Python semantics: the first insertion fixes the order).
  void set(PyValue key, PyValue value);
  void set(std::string_view key, PyValue value);
  bool operator==(const PyValue& o) const;  // structural; tensors compare by dtype, shape, bytes
  // Python-like text ("{'a': 1, 'w': tensor(F32, [2, 3])}") for messages and tests.
  std::string repr() const;
};

// One dict entry. A named struct rather than std::pair<PyValue, PyValue>: the pair's type
// traits need PyValue complete where PyValue declares its members, which clang rejects.
struct PyDictItem {
  PyValue first;   // key
  PyValue second;  // value
  PyDictItem(PyValue k, PyValue v) : first(std::move(k)), second(std::move(v)) {}
  bool operator==(const PyDictItem& o) const { return first == o.first && second == o.second; }
};

// Defined here, where PyDictItem is complete (they construct and destroy PyValues).
inline PyValue PyValue::none() { return {}; }
inline void PyValue::set(std::string_view key, PyValue value) { set(str(std::string(key)), std::move(value)); }

struct UnpickleOptions {
  bool torchscript = false;  // accept `__torch__.*` module objects and torch.jit._pickle lists
};
// Runs the restricted VM over `data`. `where` names the source in errors ("x.pt/data.pkl").
Result<PyValue> unpickle(std::span<const uint8_t> data, const std::string& where, const UnpickleOptions& opt = {});

// Where a tensor's values go when pickling: the storage key its data is written under.
using StorageKeyFn = std::function<std::string(const std::shared_ptr<TensorRecord>&)>;
// Protocol 2 (the opcodes of formats.md 1.5, no memo), loadable by torch.load including
// weights_only=True (torch >= 2 when the tree holds floats). Every tensor is written as
// a contiguous view of the storage `storage_key` names (offset 0, storage numel = numel).
std::vector<uint8_t> pickle_dumps(const PyValue& v, const StorageKeyFn& storage_key);

}  // namespace oc::io
