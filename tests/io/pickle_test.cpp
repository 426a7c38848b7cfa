// The restricted pickle VM and the protocol-2 writer: formats.md test vector, round trips,
// Python's sharing semantics, and hostile input (forbidden globals/opcodes, truncation,
// cycles, expansion bombs, out-of-bounds views) rejected with the opcode and offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "io/pickle.h"
#include "io_test_util.h"

namespace oc::io {
namespace {

using namespace std::string_literals;

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

std::string keys_in_order(const std::shared_ptr<TensorRecord>&) { return "0"; }

TEST(Pickle, FormatsTestVector) {
  // formats.md 1.5 step 5: {'w': float32 [2, 3] contiguous, storage '0'}, 165 bytes.
  std::string want =
      "\x80\x02" "ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00w" "ctorch._utils\n_rebuild_tensor_v2\n"
      "((X\x07\x00\x00\x00storage" "ctorch\nFloatStorage\n" "X\x01\x00\x00\x00" "0" "X\x03\x00\x00\x00" "cpu"
      "K\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89" "ccollections\nOrderedDict\n)RtRu."s;
  PyValue sd = PyValue::new_dict(true);
  sd.set("w", PyValue::from_tensor(HostTensor(DType::F32, {2, 3})));
  auto got = pickle_dumps(sd, keys_in_order);
  EXPECT_EQ(got.size(), 165u);
  EXPECT_EQ(std::string(got.begin(), got.end()), want);
}

PyValue sample_tree() {
  PyValue d = PyValue::new_dict(false);
  d.set("none", PyValue::none());
  d.set("t", PyValue::boolean(true));
  d.set("f", PyValue::boolean(false));
  std::vector<PyValue> ints;
  for (int64_t v : {int64_t(0), int64_t(255), int64_t(256), int64_t(65535), int64_t(65536), int64_t(-1),
                    int64_t(INT32_MIN), int64_t(INT32_MAX), int64_t(1) << 31, -(int64_t(1) << 31) - 1,
                    int64_t(1) << 40, INT64_MAX, INT64_MIN})
    ints.push_back(PyValue::integer(v));
  d.set("ints", PyValue::list(ints));
  d.set("floats", PyValue::tuple({PyValue::real(5e-4), PyValue::real(-0.0), PyValue::real(1e300)}));
  d.set("text", PyValue::str("h\xc3\xa9llo \xe2\x9c\x93"));
  d.set("bytes", PyValue::bytes(std::string("\x00\x7f\x80\xff", 4)));
  std::vector<PyValue> many;
  for (int i = 0; i < 2500; ++i) many.push_back(PyValue::integer(i));  // > 1 APPENDS batch
  d.set("many", PyValue::list(many));
  for (size_t n = 0; n <= 5; ++n) d.set("tuple" + std::to_string(n), PyValue::tuple(std::vector<PyValue>(n, PyValue::integer(int64_t(n)))));
  PyValue state = PyValue::new_dict(false);
  PyValue inner = PyValue::new_dict(false);
  inner.set("step", PyValue::integer(3));
  state.set(PyValue::integer(0), inner);
  state.set(PyValue::tuple({PyValue::integer(1), PyValue::str("k")}), PyValue::none());
  d.set("state", state);
  PyValue od = PyValue::new_dict(true);
  od.set("x", PyValue::list({}));
  d.set("od", od);
  PyValue set;
  set.kind = PyKind::Set;
  set.items = {PyValue::integer(1), PyValue::str("a")};
  d.set("set", set);
  return d;
}

TEST(Pickle, RoundTripWithoutTensors) {
  PyValue v = sample_tree();
  auto bytes = pickle_dumps(v, keys_in_order);
  auto back = unpickle(bytes, "mem");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(*back == v) << back->repr().substr(0, 500);
}

TEST(Pickle, TensorRecordsRoundTrip) {
  PyValue d = PyValue::new_dict(true);
  d.set("a", PyValue::from_tensor(HostTensor(DType::BF16, {4, 5, 6}), true));
  d.set("s", PyValue::from_tensor(HostTensor(DType::I64, {})));
  d.set("e", PyValue::from_tensor(HostTensor(DType::Bool, {0, 7})));
  int k = 0;
  auto bytes = pickle_dumps(d, [&](const std::shared_ptr<TensorRecord>&) { return "key" + std::to_string(k++); });
  auto back = unpickle(bytes, "mem");
  ASSERT_TRUE(back.ok()) << back.error();
  const TensorRecord& a = *back->get("a")->tensor;
  EXPECT_EQ(a.storage_key, "key0");
  EXPECT_EQ(a.dtype, DType::BF16);
  EXPECT_EQ(a.size, (Shape{4, 5, 6}));
  EXPECT_EQ(a.stride, (std::vector<int64_t>{30, 6, 1}));
  EXPECT_EQ(a.storage_numel, 120);
  EXPECT_TRUE(a.requires_grad);
  const TensorRecord& s = *back->get("s")->tensor;
  EXPECT_TRUE(s.size.empty());
  EXPECT_EQ(s.storage_numel, 1);
  EXPECT_EQ(s.dtype, DType::I64);
  EXPECT_EQ(back->get("e")->tensor->size, (Shape{0, 7}));
}

std::string err(const std::string& pkl) {
  auto r = unpickle(bytes_of(pkl), "t.pkl");
  return r.ok() ? "OK: " + r->repr() : r.error();
}

TEST(Pickle, ForbiddenGlobalNamed) {
  std::string e = err("\x80\x02" "cposix\nsystem\nX\x02\x00\x00\x00id\x85R."s);
  EXPECT_NE(e.find("'posix.system' is not allowed"), std::string::npos) << e;
  EXPECT_NE(e.find("GLOBAL"), std::string::npos) << e;
  EXPECT_NE(e.find("at byte 2"), std::string::npos) << e;
  e = err("\x80\x04\x8c\x08" "builtins\x8c\x04" "eval\x93."s);
  EXPECT_NE(e.find("'builtins.eval' is not allowed"), std::string::npos) << e;
  EXPECT_NE(e.find("STACK_GLOBAL"), std::string::npos) << e;
  // An allowed global that is not callable, and an allowed function misused as a class.
  e = err("\x80\x02" "ctorch\nFloatStorage\n)R."s);
  EXPECT_NE(e.find("cannot be called"), std::string::npos) << e;
}

// TorchScript data.pkl (torch.jit.save): `__torch__.*` module objects are NEWOBJ'd and BUILT
// from an attribute dict; only in TorchScript mode, and still nothing else is allowed.
std::string ts_err(const std::string& pkl) {
  auto r = unpickle(bytes_of(pkl), "t.pkl", {.torchscript = true});
  return r.ok() ? "OK: " + r->repr() : r.error();
}

TEST(Pickle, TorchScriptObjectsAreAttributeHolders) {
  const std::string obj =
      "\x80\x02"
      "c__torch__.m\nM\nq\x00)\x81}(X\x01\x00\x00\x00"
      "aK\x01"
      "X\x01\x00\x00\x00"
      "b"
      "ctorch.jit._pickle\nbuild_intlist\n(]K\x02"
      "atRub."s;
  EXPECT_EQ(ts_err(obj), "OK: __torch__.m.M({'a': 1, 'b': [2]})");
  std::string e = err(obj);  // outside TorchScript mode: refused, and said what it is
  EXPECT_NE(e.find("'__torch__.m.M' is not allowed"), std::string::npos) << e;
  EXPECT_NE(e.find("this is TorchScript data"), std::string::npos) << e;
  e = ts_err(
      "\x80\x02"
      "cposix\nsystem\nX\x02\x00\x00\x00id\x85R."s);
  EXPECT_NE(e.find("'posix.system' is not allowed"), std::string::npos) << e;
  e = ts_err(
      "\x80\x02"
      "ctorch.jit._pickle\nbuild_tensor_from_id\n)R."s);
  EXPECT_NE(e.find("is not allowed"), std::string::npos) << e;
  e = ts_err(
      "\x80\x02"
      "c__torch__.m\nM\n)R."s);  // a class called as a function
  EXPECT_NE(e.find("only NEWOBJ makes one"), std::string::npos) << e;
  e = ts_err(
      "\x80\x02"
      "c__torch__.m\nM\n)\x81K\x01\x85"
      "b."s);  // a __setstate__ tuple state
  EXPECT_NE(e.find("not an attribute dict"), std::string::npos) << e;
  e = ts_err(
      "\x80\x02"
      "c__torch__.m\nM\n)\x81}(X\x01\x00\x00\x00"
      "aK\x01ub}(X\x01\x00\x00\x00"
      "aK\x02ub."s);
  EXPECT_NE(e.find("built twice"), std::string::npos) << e;
  e = ts_err(
      "\x80\x02"
      "c__torch__.m\nM\n)\x81}(K\x01K\x01ub."s);
  EXPECT_NE(e.find("non-str attribute name"), std::string::npos) << e;
  // An object refers to itself: caught at STOP as a cycle, as for dicts.
  e = ts_err(
      "\x80\x02"
      "c__torch__.m\nM\n)\x81q\x00}(X\x01\x00\x00\x00"
      "ah\x00ub."s);
  EXPECT_NE(e.find("reference cycle"), std::string::npos) << e;
}

TEST(Pickle, UnknownOrForbiddenOpcodeNamed) {
  std::string e = err("\x80\x02(iposix\nsystem\n."s);
  EXPECT_NE(e.find("INST (0x69) at byte 3"), std::string::npos) << e;
  e = err("\x80\x02K\x01\xff."s);
  EXPECT_NE(e.find("unknown (0xff) at byte 4"), std::string::npos) << e;
  e = err("\x80\x02K\x01" "2."s);  // DUP: legal pickle, never in checkpoints
  EXPECT_NE(e.find("DUP"), std::string::npos) << e;
  e = err("\x80\x09N."s);
  EXPECT_NE(e.find("protocol 9"), std::string::npos) << e;
}

TEST(Pickle, TruncatedAndUnderflow) {
  std::string e = err("\x80\x02X\x10\x00\x00\x00" "abc"s);
  EXPECT_NE(e.find("BINUNICODE"), std::string::npos) << e;
  EXPECT_NE(e.find("data ends"), std::string::npos) << e;
  e = err("\x80\x02K\x01"s);
  EXPECT_NE(e.find("without STOP"), std::string::npos) << e;
  e = err("\x80\x02R."s);
  EXPECT_NE(e.find("REDUCE (0x52) at byte 2: stack underflow"), std::string::npos) << e;
  e = err("\x80\x02" "(K\x01u."s);  // SETITEMS with nothing under the mark
  EXPECT_NE(e.find("underflow"), std::string::npos) << e;
  e = err("\x80\x02h\x05."s);
  EXPECT_NE(e.find("memo key 5"), std::string::npos) << e;
}

TEST(Pickle, MemoKeepsPythonSharing) {
  // L = []; memo[0] = L; push L again; L.append(1); (L, L) -> ([1], [1])
  std::string r = err("\x80\x02]q\x00h\x00K\x01" "a\x86."s);
  EXPECT_EQ(r, "OK: ([1], [1])");
  // Duplicate dict keys: the last value wins, the first position stays (Python semantics).
  r = err("\x80\x02}(X\x01\x00\x00\x00" "aK\x01X\x01\x00\x00\x00" "bK\x02X\x01\x00\x00\x00" "aK\x03u."s);
  EXPECT_EQ(r, "OK: {'a': 3, 'b': 2}");
}

TEST(Pickle, CyclesAndExpansionRejected) {
  std::string e = err("\x80\x02]q\x00h\x00" "a."s);  // L.append(L)
  EXPECT_NE(e.find("reference cycle"), std::string::npos) << e;
  // t0 = (1,); t_{k+1} = (t_k, t_k): 2^40 leaves from 120 bytes.
  std::string bomb = "\x80\x02K\x01\x85"s;
  for (int k = 0; k < 40; ++k) bomb += "q\x00h\x00\x86"s;
  bomb += ".";
  e = err(bomb);
  EXPECT_NE(e.find("expand too far"), std::string::npos) << e;  // the copy budget or the memory cap
  std::string key_bomb = "\x80\x02}K\x01\x85"s;  // the same tuple as a dict key
  for (int k = 0; k < 40; ++k) key_bomb += "q\x00h\x00\x86"s;
  e = err(key_bomb + "Ns.");
  EXPECT_NE(e.find("dict key is too large"), std::string::npos) << e;
  std::string deep = "\x80\x02";
  for (int k = 0; k < 1000; ++k) deep += "]";
  for (int k = 0; k < 999; ++k) deep += "a";
  e = err(deep + ".");
  EXPECT_NE(e.find("nests more than"), std::string::npos) << e;
}

std::string tensor_pickle(int64_t offset, std::string size, std::string stride, int numel) {
  return std::string("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage" "ctorch\nFloatStorage\n"
                     "X\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK"s) +
         char(numel) + "tQK" + char(offset) + size + stride + "\x89}tR."s;
}

TEST(Pickle, TensorViewsAreBoundsChecked) {
  // Transposed 3x2 view of a 6-element storage: fine.
  std::string ok = err(tensor_pickle(0, "K\x03K\x02\x86", "K\x01K\x03\x86", 6));
  EXPECT_EQ(ok, "OK: tensor(F32, [3, 2])");
  std::string e = err(tensor_pickle(1, "K\x03K\x02\x86", "K\x01K\x03\x86", 6));
  EXPECT_NE(e.find("reaches past storage '0' of 6 elements"), std::string::npos) << e;
  e = err(tensor_pickle(0, "K\x03\x85", "K\x01K\x03\x86", 6));
  EXPECT_NE(e.find("size has 1 dims but stride has 2"), std::string::npos) << e;
  e = err(tensor_pickle(0, "J\xff\xff\xff\xff\x85", "K\x01\x85", 6));
  EXPECT_NE(e.find("non-negative"), std::string::npos) << e;
}

TEST(Pickle, MutationsNeverCrash) {
  PyValue d = sample_tree();
  d.dict.erase(std::remove_if(d.dict.begin(), d.dict.end(), [](auto& kv) { return kv.first.s == "many"; }),
               d.dict.end());
  d.set("w", PyValue::from_tensor(HostTensor(DType::F32, {2, 3})));
  const auto good = pickle_dumps(d, keys_in_order);
  std::mt19937 rng(7);
  int failures = 0;
  for (int i = 0; i < 20000; ++i) {
    auto b = good;
    if (i % 2) b.resize(1 + rng() % (b.size() - 1));
    for (int k = 0; k < 1 + int(rng() % 3); ++k) b[rng() % b.size()] = uint8_t(rng());
    failures += !unpickle(b, "m").ok();
  }
  EXPECT_GT(failures, 10000);
}

}  // namespace
}  // namespace oc::io
