// Helpers shared by the io tests: scratch folders, file bytes, the Python reference script
// (tests/reference/io_ref.py) and the "description" JSON both sides use to compare values.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/tensor.h"
#include "io/pickle.h"
#include "test_util.h"

namespace oc::io::test {

inline std::string scratch_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string d = ::testing::TempDir() + "oc_io_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" +
                  info->name() + "_" + name;
  std::system(("rm -rf '" + d + "'").c_str());
  fs::make_dirs(d);
  return d;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
}

// Mutation loops write thousands of small files: a fresh name each time (then unlinked),
// because rewriting a file in place makes ext4 flush it on close (auto_da_alloc).
template <class Fn>
auto with_file(const std::string& dir, const std::vector<uint8_t>& b, Fn&& fn) {
  static int n = 0;
  const std::string p = dir + "/m" + std::to_string(n++);
  write_bytes(p, b);
  auto r = fn(p);
  ::unlink(p.c_str());
  return r;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  auto r = fs::read_file(path);
  return r ? std::move(*r) : std::vector<uint8_t>{};
}

inline std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  std::string clean;
  for (char c : hex)
    if (!std::isspace(static_cast<unsigned char>(c))) clean += c;
  for (size_t i = 0; i + 1 < clean.size(); i += 2) out.push_back(uint8_t(std::stoi(clean.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::string to_hex(std::span<const uint8_t> b) {
  std::string s;
  for (uint8_t x : b) s += fmt::format("{:02x}", x);
  return s;
}

struct PyResult {
  int rc = -1;
  std::string out;
  bool skip = false;  // no /usr/bin/python3, or a needed module is missing
};

// Runs io_ref.py with `args`; rc and combined output.
inline PyResult run_ref(const std::string& args) {
  PyResult r;
  if (!fs::exists("/usr/bin/python3")) return r.skip = true, r;
  const std::string cmd =
      "/usr/bin/python3 " + std::string(OPENCLIP_TEST_DIR) + "/reference/io_ref.py " + args;
  const oc::test::Run run = oc::test::run(cmd);
  r.rc = run.status;
  r.out = run.out;
  r.skip = r.rc != 0 && (r.out.find("No module named 'torch'") != std::string::npos ||
                         r.out.find("No module named 'numpy'") != std::string::npos);
  return r;
}

// The last line of the script's output as JSON.
inline nlohmann::json last_json(const std::string& out) {
  auto end = out.find_last_not_of('\n');
  auto start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

inline nlohmann::json describe_tensor(const HostTensor& t, bool requires_grad) {
  nlohmann::json vals = nlohmann::json::array();
  const size_t n = size_t(t.numel());
  auto at = [&](auto tag, size_t i) {
    decltype(tag) v;
    std::memcpy(&v, t.bytes.data() + i * sizeof v, sizeof v);
    return v;
  };
  const std::vector<float> f = t.to_f32();  // exact for F32/F16/BF16
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::F64: vals.push_back(at(double{}, i)); break;
      case DType::F32: case DType::F16: case DType::BF16: vals.push_back(double(f[i])); break;
      case DType::I64: vals.push_back(at(int64_t{}, i)); break;
      case DType::I32: vals.push_back(at(int32_t{}, i)); break;
      case DType::I16: vals.push_back(at(int16_t{}, i)); break;
      case DType::I8: vals.push_back(at(int8_t{}, i)); break;
      case DType::U8: case DType::Bool: vals.push_back(int(t.bytes[i])); break;
    }
  }
  return {{"type", "tensor"}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape},
          {"values", vals}, {"requires_grad", requires_grad}};
}

inline nlohmann::json describe(const PyValue& v) {
  using J = nlohmann::json;
  switch (v.kind) {
    case PyKind::None: return {{"type", "none"}};
    case PyKind::Bool: return {{"type", "bool"}, {"value", v.b}};
    case PyKind::Int: return {{"type", "int"}, {"value", v.i}};
    case PyKind::Float: return {{"type", "float"}, {"value", v.f}};
    case PyKind::Str: return {{"type", "str"}, {"value", v.s}};
    case PyKind::Bytes: return {{"type", "bytes"}, {"value", to_hex({reinterpret_cast<const uint8_t*>(v.s.data()), v.s.size()})}};
    case PyKind::Tuple: case PyKind::List: case PyKind::Set: {
      J items = J::array();
      for (const auto& x : v.items) items.push_back(describe(x));
      return {{"type", v.kind == PyKind::Tuple ? "tuple" : v.kind == PyKind::List ? "list" : "set"}, {"items", items}};
    }
    case PyKind::Dict:
    case PyKind::Object: {
      J items = J::array();
      for (const auto& [k, x] : v.dict) items.push_back(J::array({describe(k), describe(x)}));
      if (v.kind == PyKind::Object) return {{"type", "object"}, {"class", v.s}, {"items", items}};
      return {{"type", v.ordered ? "odict" : "dict"}, {"items", items}};
    }
    case PyKind::Tensor: return describe_tensor(v.tensor->data, v.tensor->requires_grad);
  }
  return {};
}

// First difference between two descriptions, "" when equal (numbers compare by value).
inline std::string diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& path = "root") {
  if (a.type() != b.type() && !(a.is_number() && b.is_number()))
    return path + ": " + a.dump().substr(0, 200) + " vs " + b.dump().substr(0, 200);
  if (a.is_object()) {
    if (a.size() != b.size()) return path + ": keys differ";
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return path + ": missing " + it.key();
      if (auto d = diff(it.value(), b.at(it.key()), path + "." + it.key()); !d.empty()) return d;
    }
    return "";
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return path + fmt::format(": {} items vs {}", a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      if (auto d = diff(a[i], b[i], path + fmt::format("[{}]", i)); !d.empty()) return d;
    return "";
  }
  return a == b ? "" : path + ": " + a.dump() + " vs " + b.dump();
}

}  // namespace oc::io::test
