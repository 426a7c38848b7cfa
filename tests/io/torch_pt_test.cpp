// .pt checkpoints: C++ round trips, torch.save'd files (views, shared storages, bf16/f16,
// 0-d, protocol 4, an OpenCLIP training dict) read in C++, C++ files read by torch.load
// (plain and weights_only) and Python's zipfile, and hostile/broken files rejected.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "io/torch_pt.h"
#include "io/zip.h"
#include "io_test_util.h"

namespace oc::io {
namespace {

using namespace std::string_literals;

HostTensor iota(DType t, Shape s, float scale = 1.0f, float shift = 0.0f) {
  HostTensor h(t, std::move(s));
  for (int64_t i = 0; i < h.numel(); ++i) {
    const float v = float(i) * scale + shift;
    switch (t) {
      case DType::F32: h.f32()[i] = v; break;
      case DType::I64: { int64_t x = int64_t(v); std::memcpy(h.bytes.data() + 8 * i, &x, 8); break; }
      case DType::BF16: { uint32_t u; std::memcpy(&u, &v, 4); uint16_t b = uint16_t(u >> 16); std::memcpy(h.bytes.data() + 2 * i, &b, 2); break; }
      case DType::Bool: h.bytes[size_t(i)] = uint8_t(i % 2); break;
      default: break;
    }
  }
  return h;
}

// An OpenCLIP-style training checkpoint built in C++.
PyValue training_checkpoint(bool with_floats) {
  PyValue sd = PyValue::new_dict(true);
  sd.set("module.positional_embedding", PyValue::from_tensor(iota(DType::F32, {4, 3}, 0.5f, -1.0f)));
  sd.set("module.logit_scale", PyValue::from_tensor(iota(DType::F32, {}, 1.0f, 4.5f)));
  sd.set("module.text.tokens", PyValue::from_tensor(iota(DType::I64, {2, 2}, 1000.0f)));
  sd.set("module.visual.proj", PyValue::from_tensor(iota(DType::BF16, {3, 2}, 0.25f)));
  sd.set("module.mask", PyValue::from_tensor(iota(DType::Bool, {5})));
  sd.set("module.empty", PyValue::from_tensor(HostTensor(DType::F32, {0, 8})));
  if (!with_floats) return sd;
  PyValue ck = PyValue::new_dict(false);
  ck.set("epoch", PyValue::integer(2));
  ck.set("name", PyValue::str("cpp-run"));
  ck.set("state_dict", sd);
  PyValue state = PyValue::new_dict(false);
  PyValue s0 = PyValue::new_dict(false);
  s0.set("step", PyValue::from_tensor(iota(DType::F32, {}, 0.0f, 10.0f)));
  s0.set("exp_avg", PyValue::from_tensor(iota(DType::F32, {4, 3}, 0.01f)));
  s0.set("exp_avg_sq", PyValue::from_tensor(iota(DType::F32, {4, 3}, 0.001f)));
  state.set(PyValue::integer(0), s0);
  PyValue group = PyValue::new_dict(false);
  group.set("lr", PyValue::real(5e-4));
  group.set("betas", PyValue::tuple({PyValue::real(0.9), PyValue::real(0.98)}));
  group.set("eps", PyValue::real(1e-6));
  group.set("weight_decay", PyValue::real(0.2));
  group.set("amsgrad", PyValue::boolean(false));
  group.set("maximize", PyValue::boolean(false));
  group.set("foreach", PyValue::none());
  group.set("params", PyValue::list({PyValue::integer(0), PyValue::integer(1)}));
  PyValue opt = PyValue::new_dict(false);
  opt.set("state", state);
  opt.set("param_groups", PyValue::list({group}));
  ck.set("optimizer", opt);
  ck.set("samples_seen", PyValue::integer(int64_t(1) << 40));
  return ck;
}

TEST(TorchPt, SaveLoadRoundTrip) {
  const std::string dir = test::scratch_dir("rt");
  PyValue ck = training_checkpoint(true);
  // The same tensor object twice (tied weights) must be stored once.
  PyValue shared = ck.get("state_dict")->dict[0].second;
  ck.get("state_dict")->set("module.tied", shared);
  save_pt(dir + "/epoch_2.pt", ck);
  auto z = ZipReader::open(dir + "/epoch_2.pt");
  ASSERT_TRUE(z.ok()) << z.error();
  std::vector<std::string> names;
  for (const auto& e : z->entries()) {
    names.push_back(e.name);
    EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
  }
  EXPECT_EQ(names.front(), "epoch_2/data.pkl");
  EXPECT_EQ(names[1], "epoch_2/byteorder");
  EXPECT_EQ(names.back(), "epoch_2/version");
  EXPECT_EQ(names.size(), 3u + 9u);  // 6 state_dict storages (tied once) + 3 optimizer tensors
  EXPECT_EQ(z->find("epoch_2/.format_version"), nullptr);
  auto back = load_pt(dir + "/epoch_2.pt");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(test::diff(test::describe(*back), test::describe(ck)), "");
  EXPECT_FALSE(fs::exists(dir + "/epoch_2.pt.tmp-" + std::to_string(::getpid())));
}

TEST(TorchPt, ExtractStateDict) {
  PyValue ck = training_checkpoint(true);
  auto sd = extract_state_dict(ck);
  ASSERT_TRUE(sd.ok()) << sd.error();
  ASSERT_EQ(sd->size(), 6u);
  EXPECT_EQ((*sd)[0].first, "positional_embedding");
  EXPECT_EQ((*sd)[1].first, "logit_scale");
  EXPECT_EQ((*sd)[1].second->data.f32()[0], 4.5f);
  auto bare = extract_state_dict(*ck.get("state_dict"));  // a bare (DDP) state_dict
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ((*bare)[2].first, "text.tokens");
  PyValue plain = PyValue::new_dict(true);
  plain.set("w", PyValue::from_tensor(HostTensor(DType::F32, {1})));
  plain.set("module_like", PyValue::from_tensor(HostTensor(DType::F32, {1})));
  EXPECT_EQ((*extract_state_dict(plain))[1].first, "module_like");  // first key decides
  plain.set("count", PyValue::integer(3));
  auto bad = extract_state_dict(plain);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("'count' is a int, not a tensor"), std::string::npos) << bad.error();
  EXPECT_FALSE(extract_state_dict(PyValue::list({})).ok());
}

// Writes a torch-layout zip with a hand-made data.pkl and storages.
void write_archive(const std::string& path, const std::vector<uint8_t>& pkl,
                   std::vector<std::pair<std::string, std::vector<uint8_t>>> storages) {
  std::vector<uint8_t> out;
  ZipWriter z([&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); });
  z.add("x/data.pkl", pkl);
  for (auto& [k, d] : storages) z.add("x/data/" + k, d);
  z.add("x/version", std::string_view("3\n"));
  z.finish();
  test::write_bytes(path, out);
}

TEST(TorchPt, BrokenArchivesRejected) {
  const std::string dir = test::scratch_dir("bad");
  PyValue sd = PyValue::new_dict(true);
  sd.set("w", PyValue::from_tensor(iota(DType::F32, {2, 3})));
  const auto pkl = pickle_dumps(sd, [](const auto&) { return std::string("0"); });

  write_archive(dir + "/short.pt", pkl, {{"0", std::vector<uint8_t>(20)}});
  auto r = load_pt(dir + "/short.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("entry 'x/data/0' has 20 bytes but storage '0' needs 24"), std::string::npos) << r.error();

  write_archive(dir + "/missing.pt", pkl, {});
  r = load_pt(dir + "/missing.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no entry 'x/data/0'"), std::string::npos) << r.error();

  save_pt(dir + "/good.pt", sd);
  auto bytes = test::read_bytes(dir + "/good.pt");
  bytes.resize(bytes.size() / 2);
  test::write_bytes(dir + "/trunc.pt", bytes);
  r = load_pt(dir + "/trunc.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("end-of-central-directory"), std::string::npos) << r.error();

  test::write_bytes(dir + "/legacy.pt", {0x80, 0x02, 0x8a, 0x0a});
  r = load_pt(dir + "/legacy.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("legacy"), std::string::npos) << r.error();
  EXPECT_FALSE(load_pt(dir + "/does_not_exist.pt").ok());
}

TEST(TorchPt, MutationsNeverCrash) {
  const std::string dir = test::scratch_dir("mut");
  save_pt(dir + "/good.pt", training_checkpoint(true));
  const auto good = test::read_bytes(dir + "/good.pt");
  std::mt19937 rng(3);
  int failures = 0;
  for (int i = 0; i < 1500; ++i) {
    auto b = good;
    for (int k = 0; k < 1 + int(rng() % 3); ++k) b[rng() % b.size()] = uint8_t(rng());
    failures += test::with_file(dir, b, [](const std::string& p) { return int(!load_pt(p).ok()); });
  }
  EXPECT_GT(failures, 300);  // CRCs and structure checks catch most single-byte damage
}

// A TorchScript archive as torch.jit.save lays it out (data.pkl of module objects,
// constants.pkl, code/, data/<k>), hand-made so each field can be made wrong.
std::string pstr(const std::string& v) {
  std::string r = "X";
  const uint32_t n = uint32_t(v.size());
  r.append(reinterpret_cast<const char*>(&n), 4);
  return r + v;
}
std::string ptensor(const std::string& key, int numel, const std::string& global = "torch\nFloatStorage\n") {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + pstr("storage") + "c" + global + pstr(key) + pstr("cpu") + "J" +
         std::string(reinterpret_cast<const char*>(&numel), 4) + "tQK\x00(K\x02K\x03t(K\x03K\x01t\x89"s +
         "ccollections\nOrderedDict\n)Rt" + "R";
}
std::vector<uint8_t> ts_pickle(const std::string& tensor, const std::string& sub_class = "__torch__.m\nSub\n") {
  const std::string p =
      "\x80\x02"
      "c__torch__.m\nTop\n)\x81}(" +
      pstr("sub") + "c" + sub_class + ")\x81}(" + pstr("w") + tensor + pstr("training") + "\x88ub" + pstr("scale") +
      "G?\xf0\x00\x00\x00\x00\x00\x00"s + pstr("none") + "Nub.";
  return {p.begin(), p.end()};
}
void write_ts_archive(const std::string& path, const std::vector<uint8_t>& pkl, std::vector<uint8_t> storage) {
  std::vector<uint8_t> out;
  ZipWriter z([&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); });
  z.add("ts/data.pkl", pkl);
  z.add("ts/code/__torch__/m.py", std::string_view("this code is never read\n"));
  z.add("ts/data/0", storage);
  z.add("ts/constants.pkl", std::string_view("\x80\x02)."));
  z.add("ts/version", std::string_view("3\n"));
  z.finish();
  test::write_bytes(path, out);
}

TEST(TorchPt, TorchScriptArchiveReadsAsModuleTree) {
  const std::string dir = test::scratch_dir("ts");
  HostTensor w = iota(DType::F32, {2, 3}, 0.5f);
  write_ts_archive(dir + "/m.pt", ts_pickle(ptensor("0", 6)), w.bytes);
  EXPECT_TRUE(is_torchscript_archive(dir + "/m.pt"));
  auto v = load_pt(dir + "/m.pt");
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ(v->kind, PyKind::Object);
  EXPECT_EQ(v->s, "__torch__.m.Top");
  auto sd = extract_state_dict(*v);
  ASSERT_TRUE(sd.ok()) << sd.error();
  ASSERT_EQ(sd->size(), 1u);  // only tensors are state: not training, scale, none
  EXPECT_EQ((*sd)[0].first, "sub.w");
  EXPECT_EQ((*sd)[0].second->data.bytes, w.bytes);
  save_pt(dir + "/plain.pt", make_state_dict({}));
  EXPECT_FALSE(is_torchscript_archive(dir + "/plain.pt"));
  EXPECT_FALSE(is_torchscript_archive(dir + "/missing.pt"));
}

TEST(TorchPt, HostileTorchScriptArchivesRejected) {
  const std::string dir = test::scratch_dir("ts_bad");
  const std::vector<uint8_t> w(24);
  auto fails_with = [&](const std::string& name, const std::string& what) {
    auto r = load_pt(dir + "/" + name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.error().find(what), std::string::npos) << name << ": " << r.error();
  };
  write_ts_archive(dir + "/evil_global.pt", ts_pickle(ptensor("0", 6), "posix\nsystem\n"), w);
  fails_with("evil_global.pt", "'posix.system' is not allowed");
  write_ts_archive(dir + "/evil_storage.pt", ts_pickle(ptensor("0", 6, "builtins\neval\n")), w);
  fails_with("evil_storage.pt", "'builtins.eval' is not allowed");
  // A storage claiming 2^31-1 floats over a 24-byte record, and a view past its storage.
  write_ts_archive(dir + "/oversized.pt", ts_pickle(ptensor("0", 0x7fffffff)), w);
  fails_with("oversized.pt", "entry 'ts/data/0' has 24 bytes but storage '0' needs 8589934588");
  write_ts_archive(dir + "/short_view.pt", ts_pickle(ptensor("0", 5)), w);
  fails_with("short_view.pt", "reaches past storage '0' of 5 elements");
  write_ts_archive(dir + "/good.pt", ts_pickle(ptensor("0", 6)), w);
  auto bytes = test::read_bytes(dir + "/good.pt");
  bytes.resize(bytes.size() - 30);
  test::write_bytes(dir + "/trunc.pt", bytes);
  fails_with("trunc.pt", "end-of-central-directory");
  // Random damage anywhere: an error or a good read, never a crash.
  const auto good = test::read_bytes(dir + "/good.pt");
  std::mt19937 rng(5);
  int failures = 0;
  for (int i = 0; i < 800; ++i) {
    auto b = good;
    for (int k = 0; k < 1 + int(rng() % 3); ++k) b[rng() % b.size()] = uint8_t(rng());
    failures += test::with_file(dir, b, [](const std::string& p) {
      auto r = load_pt(p);
      return int(!r.ok() || !extract_state_dict(*r).ok());
    });
  }
  EXPECT_GT(failures, 150);  // CRCs and structure checks catch most damage
}

// (b) torch.save -> C++.
TEST(TorchPt, TorchSavedFilesLoad) {
  const std::string dir = test::scratch_dir("py");
  auto py = test::run_ref("torch_save " + dir);
  if (py.skip) GTEST_SKIP() << "no /usr/bin/python3 with torch: " << py.out;
  ASSERT_EQ(py.rc, 0) << py.out;
  for (std::string name : {"sd.pt", "sd_p4.pt", "train.pt"}) {
    auto v = load_pt(dir + "/" + name);
    ASSERT_TRUE(v.ok()) << v.error();
    auto want = nlohmann::json::parse(test::read_bytes(dir + "/" + name + ".json"));
    EXPECT_EQ(test::diff(test::describe(*v), want), "") << name;
  }
  auto sd = load_pt(dir + "/sd.pt");
  const PyValue& d = *sd;
  // A transposed view and a sliced view share the storage of "base".
  EXPECT_EQ(d.get("base_t")->tensor->storage_key, d.get("base")->tensor->storage_key);
  EXPECT_EQ(d.get("base_t")->tensor->stride, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(d.get("slice")->tensor->offset, 5);
  EXPECT_EQ(d.get("logit_scale")->tensor->data.shape, Shape{});
  auto train = load_pt(dir + "/train.pt");
  auto tsd = extract_state_dict(*train);
  ASSERT_TRUE(tsd.ok()) << tsd.error();
  EXPECT_EQ((*tsd)[0].first, "0.weight");
  const PyValue* lr = train->get("optimizer")->get("param_groups")->items[0].get("lr");
  ASSERT_NE(lr, nullptr);
  EXPECT_EQ(lr->f, 5e-4);
}

// (a) C++ -> torch.load, plain and weights_only; Python's zipfile checks CRCs and layout.
TEST(TorchPt, CppFilesLoadInTorch) {
  const std::string dir = test::scratch_dir("cpp");
  struct Case {
    std::string name;
    PyValue v;
    bool zip64;
  };
  std::vector<Case> cases = {{"sd_cpp.pt", training_checkpoint(false), false},
                             {"train_cpp.pt", training_checkpoint(true), false},
                             {"zip64_cpp.pt", training_checkpoint(false), true}};
  std::string names;
  for (auto& c : cases) {
    save_pt(dir + "/" + c.name, c.v, {.force_zip64 = c.zip64});
    std::ofstream(dir + "/" + c.name + ".json") << test::describe(c.v).dump();
    names += " " + c.name;
  }
  auto py = test::run_ref("torch_check " + dir + names);
  if (py.skip) GTEST_SKIP() << "no /usr/bin/python3 with torch: " << py.out;
  ASSERT_EQ(py.rc, 0) << py.out;
  auto rep = test::last_json(py.out);
  EXPECT_EQ(rep["files"]["sd_cpp.pt"]["weights_only"], "ok") << py.out;
  EXPECT_EQ(rep["files"]["zip64_cpp.pt"]["weights_only"], "ok") << py.out;
  // torch 1.13's weights-only unpickler has no BINFLOAT; torch >= 2 accepts it.
  const std::string wo = rep["files"]["train_cpp.pt"]["weights_only"];
  if (rep["torch"].get<std::string>().rfind("1.", 0) == 0)
    EXPECT_NE(wo.find("Unsupported operand 71"), std::string::npos) << wo;
  else
    EXPECT_EQ(wo, "ok");
  std::printf("torch %s weights_only on a checkpoint with floats: %s\n", rep["torch"].get<std::string>().c_str(),
              wo.c_str());
}

// (d) a pickle that would run os.system, and a deflated archive, built by Python's stdlib.
TEST(TorchPt, HostileFilesRejected) {
  const std::string dir = test::scratch_dir("evil");
  auto py = test::run_ref("evil " + dir);
  if (py.skip) GTEST_SKIP() << py.out;
  ASSERT_EQ(py.rc, 0) << py.out;
  auto r = load_pt(dir + "/evil.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("'posix.system' is not allowed"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("evil/data.pkl"), std::string::npos) << r.error();
  EXPECT_FALSE(fs::exists(dir + "/pwned"));
  r = load_pt(dir + "/deflated.pt");
  ASSERT_FALSE(r.ok());
  // Compressed entries are listed (torch.jit.save deflates code/) but refused when read: the
  // first record read here is the version.
  EXPECT_NE(r.error().find("'deflated/version' is compressed (method 8)"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace oc::io
