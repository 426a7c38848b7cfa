// Protocol-2 pickle writer: the opcode subset of formats.md 1.5, no memo (torch.load does
// not need it), lists and dicts batched per 1000 items as CPython does.
#include <fmt/format.h>

#include "core/check.h"
#include "io/le.h"
#include "io/pickle.h"

namespace oc::io {
namespace {

constexpr size_t kBatch = 1000;

std::string_view storage_name(DType t) {
  switch (t) {
    case DType::F32: return "FloatStorage";
    case DType::F16: return "HalfStorage";
    case DType::BF16: return "BFloat16Storage";
    case DType::F64: return "DoubleStorage";
    case DType::I64: return "LongStorage";
    case DType::I32: return "IntStorage";
    case DType::I16: return "ShortStorage";
    case DType::I8: return "CharStorage";
    case DType::U8: return "ByteStorage";
    case DType::Bool: return "BoolStorage";
  }
  return "?";
}

class Writer {
 public:
  explicit Writer(const StorageKeyFn& key) : key_(key) {}
  std::vector<uint8_t> out;

  void op(uint8_t c) { out.push_back(c); }
  void global(std::string_view module, std::string_view name) {
    op('c');
    append_bytes(out, module.data(), module.size());
    op('\n');
    append_bytes(out, name.data(), name.size());
    op('\n');
  }
  void str(std::string_view s) {
    OC_CHECK(s.size() <= 0xFFFFFFFFu, "string of {} bytes", s.size());
    op('X');
    append_le<uint32_t>(out, uint32_t(s.size()));
    append_bytes(out, s.data(), s.size());
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      op(uint8_t(v));
    } else if (v >= 0 && v < 65536) {
      op('M');
      append_le<uint16_t>(out, uint16_t(v));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      append_le<int32_t>(out, int32_t(v));
    } else {  // LONG1 with the fewest bytes that keep the sign (as CPython's encode_long)
      uint8_t b[8];
      std::memcpy(b, &v, 8);
      int n = 8;
      while (n > 1 && ((b[n - 1] == 0 && !(b[n - 2] & 0x80)) || (b[n - 1] == 0xff && (b[n - 2] & 0x80)))) --n;
      op(0x8a);
      op(uint8_t(n));
      append_bytes(out, b, size_t(n));
    }
  }
  void real(double f) {
    uint64_t u;
    std::memcpy(&u, &f, 8);
    op('G');
    for (int j = 7; j >= 0; --j) op(uint8_t(u >> (8 * j)));
  }
  // Items already emitted after a MARK (or 0-3 of them without one) become a tuple.
  void tuple_end(size_t n, bool marked) {
    if (marked) op('t');
    else op(n == 0 ? ')' : uint8_t(0x84 + n));
  }
  void tuple(const std::vector<PyValue>& items) {
    const bool marked = items.size() > 3;
    if (marked) op('(');
    for (const auto& v : items) value(v);
    tuple_end(items.size(), marked);
  }
  void ordered_dict_new() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
  void value(const PyValue& v);
  void tensor(const std::shared_ptr<TensorRecord>& t);

 private:
  const StorageKeyFn& key_;
};

void Writer::tensor(const std::shared_ptr<TensorRecord>& t) {
  OC_CHECK(t != nullptr, "null tensor in a pickle tree");
  const HostTensor& d = t->data;
  OC_CHECK(d.bytes.size() == size_t(d.numel()) * dtype_size(d.dtype), "tensor bytes {} for shape {}", d.bytes.size(),
           shape_str(d.shape));
  global("torch._utils", "_rebuild_tensor_v2");
  op('(');
  op('(');  // persistent id ('storage', type, key, location, numel)
  str("storage");
  global("torch", storage_name(d.dtype));
  str(key_(t));
  str("cpu");
  integer(d.numel());
  op('t');
  op('Q');
  integer(0);  // storage offset
  std::vector<PyValue> size, stride(d.shape.size());
  int64_t s = 1;
  for (size_t j = d.shape.size(); j-- > 0;) {
    stride[j] = PyValue::integer(s);
    s *= d.shape[j];
  }
  for (int64_t x : d.shape) size.push_back(PyValue::integer(x));
  tuple(size);
  tuple(stride);
  op(t->requires_grad ? 0x88 : 0x89);
  ordered_dict_new();  // backward hooks
  op('t');
  op('R');
}

void Writer::value(const PyValue& v) {
  switch (v.kind) {
    case PyKind::None: op('N'); return;
    case PyKind::Bool: op(v.b ? 0x88 : 0x89); return;
    case PyKind::Int: integer(v.i); return;
    case PyKind::Float: real(v.f); return;
    case PyKind::Str: str(v.s); return;
    case PyKind::Bytes: {  // protocol 2 spelling: _codecs.encode(latin-1 text, 'latin1')
      std::string u;
      for (unsigned char c : v.s) {
        if (c < 0x80) u += char(c);
        else u += char(0xc0 | (c >> 6)), u += char(0x80 | (c & 0x3f));
      }
      global("_codecs", "encode");
      str(u);
      str("latin1");
      op(0x86);
      op('R');
      return;
    }
    case PyKind::Tuple: tuple(v.items); return;
    case PyKind::List: case PyKind::Set: {
      if (v.kind == PyKind::Set) global("builtins", "set");
      op(']');
      for (size_t j = 0; j < v.items.size(); j += kBatch) {
        op('(');
        for (size_t k = j; k < std::min(v.items.size(), j + kBatch); ++k) value(v.items[k]);
        op('e');
      }
      if (v.kind == PyKind::Set) {
        op(0x85);
        op('R');
      }
      return;
    }
    case PyKind::Dict: {
      if (v.ordered) ordered_dict_new();
      else op('}');
      for (size_t j = 0; j < v.dict.size(); j += kBatch) {
        op('(');
        for (size_t k = j; k < std::min(v.dict.size(), j + kBatch); ++k) {
          value(v.dict[k].first);
          value(v.dict[k].second);
        }
        op('u');
      }
      return;
    }
    case PyKind::Tensor: tensor(v.tensor); return;
    case PyKind::Object:
      OC_FAIL("pickle_dumps: TorchScript objects ({}) are read, never written", v.s);
  }
}

}  // namespace

std::vector<uint8_t> pickle_dumps(const PyValue& v, const StorageKeyFn& storage_key) {
  Writer w(storage_key);
  w.op(0x80);
  w.op(2);
  w.value(v);
  w.op('.');
  return std::move(w.out);
}

}  // namespace oc::io
