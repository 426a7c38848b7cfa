// PyValue: constructors, dict access, equality and repr.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/check.h"
#include "io/pickle.h"

namespace oc::io {

std::string_view py_kind_name(PyKind k) {
  switch (k) {
    case PyKind::None: return "None";
    case PyKind::Bool: return "bool";
    case PyKind::Int: return "int";
    case PyKind::Float: return "float";
    case PyKind::Str: return "str";
    case PyKind::Bytes: return "bytes";
    case PyKind::Tuple: return "tuple";
    case PyKind::List: return "list";
    case PyKind::Dict: return "dict";
    case PyKind::Set: return "set";
    case PyKind::Tensor: return "tensor";
    case PyKind::Object:
      return "object";
  }
  return "?";
}

PyValue PyValue::boolean(bool v) {
  PyValue r;
  r.kind = PyKind::Bool;
  r.b = v;
  return r;
}
PyValue PyValue::integer(int64_t v) {
  PyValue r;
  r.kind = PyKind::Int;
  r.i = v;
  return r;
}
PyValue PyValue::real(double v) {
  PyValue r;
  r.kind = PyKind::Float;
  r.f = v;
  return r;
}
PyValue PyValue::str(std::string v) {
  PyValue r;
  r.kind = PyKind::Str;
  r.s = std::move(v);
  return r;
}
PyValue PyValue::bytes(std::string v) {
  PyValue r;
  r.kind = PyKind::Bytes;
  r.s = std::move(v);
  return r;
}
PyValue PyValue::tuple(std::vector<PyValue> v) {
  PyValue r;
  r.kind = PyKind::Tuple;
  r.items = std::move(v);
  return r;
}
PyValue PyValue::list(std::vector<PyValue> v) {
  PyValue r;
  r.kind = PyKind::List;
  r.items = std::move(v);
  return r;
}
PyValue PyValue::new_dict(bool ordered_dict) {
  PyValue r;
  r.kind = PyKind::Dict;
  r.ordered = ordered_dict;
  return r;
}
PyValue PyValue::from_tensor(HostTensor t, bool requires_grad) {
  PyValue r;
  r.kind = PyKind::Tensor;
  r.tensor = std::make_shared<TensorRecord>();
  r.tensor->dtype = t.dtype;
  r.tensor->size = t.shape;
  r.tensor->storage_numel = t.numel();
  r.tensor->requires_grad = requires_grad;
  r.tensor->data = std::move(t);
  return r;
}

const PyValue* PyValue::get(std::string_view key) const {
  if (kind != PyKind::Dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k.kind == PyKind::Str && k.s == key) return &v;
  return nullptr;
}

PyValue* PyValue::get(std::string_view key) {
  return const_cast<PyValue*>(static_cast<const PyValue*>(this)->get(key));
}

void PyValue::set(PyValue key, PyValue value) {
  OC_CHECK(kind == PyKind::Dict, "set() on a {}", py_kind_name(kind));
  for (auto& [k, v] : dict) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  dict.emplace_back(std::move(key), std::move(value));
}

bool PyValue::operator==(const PyValue& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case PyKind::None: return true;
    case PyKind::Bool: return b == o.b;
    case PyKind::Int: return i == o.i;
    case PyKind::Float: return f == o.f || (std::isnan(f) && std::isnan(o.f));
    case PyKind::Str: case PyKind::Bytes: return s == o.s;
    case PyKind::Tuple: case PyKind::List: case PyKind::Set: return items == o.items;
    case PyKind::Dict: return ordered == o.ordered && dict == o.dict;
    case PyKind::Object:
      return s == o.s && dict == o.dict;
    case PyKind::Tensor: {
      if (tensor == o.tensor) return true;
      if (!tensor || !o.tensor) return false;
      const HostTensor &a = tensor->data, &c = o.tensor->data;
      return a.dtype == c.dtype && a.shape == c.shape && a.bytes == c.bytes;
    }
  }
  return false;
}

namespace {
void quote(std::string& out, const std::string& s) {
  out += '\'';
  for (unsigned char c : s) {
    if (c == '\'' || c == '\\') out += '\\', out += char(c);
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += char(c);
  }
  out += '\'';
}

void repr_into(std::string& out, const PyValue& v) {
  switch (v.kind) {
    case PyKind::None: out += "None"; break;
    case PyKind::Bool: out += v.b ? "True" : "False"; break;
    case PyKind::Int: out += std::to_string(v.i); break;
    case PyKind::Float: out += fmt::format("{}", v.f); break;
    case PyKind::Str: quote(out, v.s); break;
    case PyKind::Bytes: out += 'b', quote(out, v.s); break;
    case PyKind::Tuple: case PyKind::List: case PyKind::Set: {
      const char* open = v.kind == PyKind::Tuple ? "(" : v.kind == PyKind::List ? "[" : "{";
      const char* close = v.kind == PyKind::Tuple ? ")" : v.kind == PyKind::List ? "]" : "}";
      out += open;
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        repr_into(out, v.items[i]);
      }
      if (v.kind == PyKind::Tuple && v.items.size() == 1) out += ",";
      out += close;
      break;
    }
    case PyKind::Object:  // the class with its attributes: "__torch__.m.CLIP({'w': ...})"
    case PyKind::Dict:
      out += v.kind == PyKind::Object ? v.s + "({" : v.ordered ? "OrderedDict({" : "{";
      for (size_t i = 0; i < v.dict.size(); ++i) {
        if (i) out += ", ";
        repr_into(out, v.dict[i].first);
        out += ": ";
        repr_into(out, v.dict[i].second);
      }
      out += v.kind == PyKind::Object || v.ordered ? "})" : "}";
      break;
    case PyKind::Tensor:
      if (!v.tensor) out += "tensor(null)";
      else out += fmt::format("tensor({}, {})", dtype_name(v.tensor->dtype), shape_str(v.tensor->size));
      break;
  }
}
}  // namespace

std::string PyValue::repr() const {
  std::string out;
  repr_into(out, *this);
  return out;
}

}  // namespace oc::io
