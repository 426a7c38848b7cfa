// The cuda entry of the registry as this build and machine have it: without CUDA in the build,
// --device cuda says "built without CUDA"; with CUDA but no GPU it says "no visible GPU"; with
// a GPU, memory, scalars and the out-of-memory message are checked here, and every op by
// backend_ops_test.cpp (ctest label `cuda`: scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "ops/registry.h"
#ifdef OPENCLIP_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#endif

namespace oc::ops::test {
namespace {

const BackendInfo* cuda_entry() {
  static const std::vector<BackendInfo> list = backend_list();
  for (const BackendInfo& b : list)
    if (b.name == "cuda") return &b;
  return nullptr;
}

std::string device_error(const char* device) {
  try {
    resolve_device(device);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(CudaBackend, DeviceCudaSaysWhatIsMissing) {
  const BackendInfo* b = cuda_entry();
#ifdef OPENCLIP_HAVE_CUDA
  ASSERT_NE(b, nullptr) << "a CUDA build registers cuda";
  if (b->available) GTEST_SKIP() << "a GPU is visible: nothing is missing";
  EXPECT_NE(b->description.find("no visible GPU"), std::string::npos) << b->description;
  for (const char* d : {"cuda", "cuda:0"}) {
    const std::string m = device_error(d);
    EXPECT_NE(m.find("no visible GPU"), std::string::npos) << d << ": " << m;
    EXPECT_NE(m.find("available: ref, cpu"), std::string::npos) << m;
  }
#else
  EXPECT_EQ(b, nullptr) << "a build without CUDA registers no cuda backend";
  for (const char* d : {"cuda", "cuda:1"}) {
    const std::string m = device_error(d);
    EXPECT_NE(m.find("built without CUDA"), std::string::npos) << d << ": " << m;
    EXPECT_NE(m.find("available: ref, cpu"), std::string::npos) << m;
  }
#endif
}

TEST(CudaBackend, MalformedDeviceIndexIsAnError) {
  for (const char* d : {"cuda:x", "cuda:-1", "cuda:1.5"}) {
    const std::string m = device_error(d);
    EXPECT_NE(m.find("expected cuda or cuda:N"), std::string::npos) << d << ": " << m;
  }
}

#ifdef OPENCLIP_HAVE_CUDA
// MFU's denominator in `openclip bench` (docs/CUDA.md): the dense bf16 peak by card name.
TEST(CudaBackend, Bf16PeakOfTheDataCentreCards) {
  auto peak = [](const char* name) {
    CudaDeviceInfo d;
    d.name = name;
    return cuda_bf16_peak_flops(d);
  };
  EXPECT_EQ(peak("NVIDIA H200"), 989e12);
  EXPECT_EQ(peak("NVIDIA H100 80GB HBM3"), 989e12);
  EXPECT_EQ(peak("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(peak("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(peak("NVIDIA GeForce GTX 1080"), 0.0) << "unknown cards report no MFU";
}
#endif

class CudaOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const BackendInfo* b = cuda_entry();
    if (!b || !b->available) GTEST_SKIP() << "cuda not available: " << (b ? b->description : "built without CUDA");
  }
};

TEST_F(CudaOnGpu, CopiesScalarsFillZero) {
  Backend& b = backend("cuda");
  EXPECT_FALSE(b.host_memory());
  Buffer x = b.alloc_floats(100, "test"), y = b.alloc_floats(100, "test", false);
  std::vector<float> host(100), back(100);
  for (int i = 0; i < 100; ++i) host[size_t(i)] = float(i) * 0.5f;
  b.copy_from_host(x.data(), host.data(), 400);
  b.copy(y.data(), x.data(), 400);
  b.write_scalar(y.f32() + 7, -3.0f);
  EXPECT_EQ(b.read_scalar(y.f32() + 7), -3.0f);
  b.fill(y.f32() + 10, 5, 2.5f);
  b.zero(y.f32() + 20, 8);
  b.copy_to_host(back.data(), y.data(), 400);
  for (int i = 0; i < 100; ++i) {
    float want = float(i) * 0.5f;
    if (i == 7) want = -3.0f;
    if (i >= 10 && i < 15) want = 2.5f;
    if (i >= 20 && i < 22) want = 0.0f;
    EXPECT_EQ(back[size_t(i)], want) << "element " << i;
  }
}

// The trainer's batch path (docs/CUDA.md, "Batches") as it runs it: pixels in pinned memory,
// step k+1's upload started on the copy stream while step k's normalisation is queued, the
// handle of step k released after, so slots and host buffers are reused from the third step
// on. Every step must see its own pixels, normalised exactly (ops/pixels.h).
TEST_F(CudaOnGpu, PrefetchedPixelsArriveIntactThroughReusedSlots) {
  Backend& b = backend("cuda");
  HostAllocator& pinned = b.host_allocator();
  EXPECT_EQ(pinned.name(), "cuda pinned");
  const int64_t B = 3, S = 40, n = B * S * S * 3;
  std::vector<HostVector<uint8_t>> px(2, HostVector<uint8_t>(size_t(n), 0, HostAlloc<uint8_t>(pinned)));
  const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, sd[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  auto fill = [&](int64_t k) {
    for (int64_t i = 0; i < n; ++i) px[size_t(k % 2)][size_t(i)] = uint8_t((i * 7 + k * 31) % 256);
  };
  Buffer out = b.alloc_floats(size_t(n), "normalised images", false);
  fill(0);
  Prefetch cur = b.prefetch(px[0].data(), size_t(n), "step 0");
  std::vector<float> got(static_cast<size_t>(n));
  for (int64_t k = 0; k < 6; ++k) {
    b.await(cur);
    b.run(NormalizeImagesArgs{.out = out.f32(), .px = static_cast<const uint8_t*>(cur.data()), .mean = mean,
                              .std = sd, .B = B, .S = S});
    fill(k + 1);  // its buffer's last upload (step k - 1) was released: the copy is done
    Prefetch next = b.prefetch(px[size_t((k + 1) % 2)].data(), size_t(n), "next step");
    b.copy_to_host(got.data(), out.data(), got.size() * sizeof(float));
    int64_t wrong = 0;
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t hw = 0; hw < S * S; ++hw) {
          const int64_t i = (bi * S * S + hw) * 3 + c;
          const float want = (float(uint8_t((i * 7 + k * 31) % 256)) / 255.0f - mean[c]) / sd[c];
          wrong += got[size_t((bi * 3 + c) * S * S + hw)] != want;
        }
    EXPECT_EQ(wrong, 0) << "step " << k;
    cur = std::move(next);  // releases step k's slot once its reads are queued
  }
}

TEST_F(CudaOnGpu, OutOfMemorySaysAskedFreeAndWhatToTry) {
  try {
    backend("cuda").alloc(size_t(1) << 50, "ViT-B-32 training activations, batch 256");
    FAIL() << "a 1 PiB device allocation succeeded";
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1125899906842624 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("ViT-B-32 training activations, batch 256"), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
    EXPECT_NE(m.find("--grad-checkpointing"), std::string::npos) << m;
  }
}

#ifdef OPENCLIP_HAVE_CUDA
TEST_F(CudaOnGpu, DeviceIndexBeyondTheVisibleCountIsAnError) {
  const int n = cuda_device_count();
  const std::string m = device_error(("cuda:" + std::to_string(n)).c_str());
  EXPECT_NE(m.find("visible GPU"), std::string::npos) << m;
  EXPECT_EQ(resolve_device("cuda:0"), "cuda");
}
#endif

// A sequence whose K and V do not fit one block's shared memory (600 tokens of width 64,
// 333 KB): the strided-row kernels of cross attention (kernels_xattn.cu) run it; forward and
// backward, causal and not, fp32 and bf16-rounded operands, equal to ref within the backend
// suite's bounds (backend_cases.h: kF32, kB16).
struct LongAttention {
  std::vector<float> out, att, dqkv;
};

LongAttention long_attention(Backend& be, const std::vector<float>& qkv, const std::vector<float>& dout, int64_t T,
                             int64_t C, int64_t H, bool causal, Prec prec) {
  auto buf = [&](size_t n, const char* what) { return be.alloc_floats(n, what); };
  Buffer in = buf(qkv.size(), "qkv"), d = buf(dout.size(), "dout"), out = buf(size_t(T * C), "out"),
         att = buf(size_t(H * T * T), "att"), dqkv = buf(qkv.size(), "dqkv"), sc = buf(size_t(H * T * T), "scratch");
  be.copy_from_host(in.data(), qkv.data(), qkv.size() * 4);
  be.copy_from_host(d.data(), dout.data(), dout.size() * 4);
  be.run(AttentionForwardArgs{.out = out.f32(),
                              .att = att.f32(),
                              .qkv = in.f32(),
                              .B = 1,
                              .Tn = T,
                              .C = C,
                              .H = H,
                              .causal = causal,
                              .prec = prec});
  be.run(AttentionBackwardArgs{.dqkv = dqkv.f32(),
                               .scratch = sc.f32(),
                               .dout = d.f32(),
                               .qkv = in.f32(),
                               .att = att.f32(),
                               .B = 1,
                               .Tn = T,
                               .C = C,
                               .H = H,
                               .causal = causal,
                               .prec = prec});
  LongAttention r{std::vector<float>(size_t(T * C)), std::vector<float>(size_t(H * T * T)),
                  std::vector<float>(qkv.size())};
  be.copy_to_host(r.out.data(), out.data(), r.out.size() * 4);
  be.copy_to_host(r.att.data(), att.data(), r.att.size() * 4);
  be.copy_to_host(r.dqkv.data(), dqkv.data(), r.dqkv.size() * 4);
  return r;
}

// max |got - want| / max |want|.
double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0, m = 0;
  for (size_t i = 0; i < want.size(); ++i)
    e = std::max(e, double(std::abs(got[i] - want[i]))), m = std::max(m, double(std::abs(want[i])));
  return e / m;
}

TEST_F(CudaOnGpu, AttentionTooLongForSharedMemoryMatchesRef) {
  const int64_t T = 600, C = 64, H = 1;
  Rng rng(5);
  std::vector<float> qkv(size_t(T * 3 * C)), dout(size_t(T * C));
  for (float& x : qkv) x = float(rng.normal() * 0.3);
  for (float& x : dout) x = float(rng.normal());
  for (bool causal : {true, false})
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      const LongAttention g = long_attention(backend("cuda"), qkv, dout, T, C, H, causal, prec);
      const LongAttention r = long_attention(backend("ref"), qkv, dout, T, C, H, causal, prec);
      const double tol = prec == Prec::F32 ? 2e-5 : 1e-2;  // kF32, kB16 (P and dS rounded to bf16 inside)
      const std::string what = std::string(causal ? "causal " : "") + (prec == Prec::F32 ? "fp32" : "bf16");
      EXPECT_LT(rel_error(g.out, r.out), tol) << what << " out";
      EXPECT_LT(rel_error(g.att, r.att), tol) << what << " att";
      EXPECT_LT(rel_error(g.dqkv, r.dqkv), tol) << what << " dqkv";
    }
}

// The amp_bf16 ops (bf16 qkv, dO and out) on the same long sequence.
LongAttention long_attention_bf16(Backend& be, const std::vector<bf16>& qkv, const std::vector<bf16>& dout, int64_t T,
                                  int64_t C, int64_t H, bool causal) {
  Buffer in = be.alloc(qkv.size() * 2, "qkv"), d = be.alloc(dout.size() * 2, "dout"),
         out = be.alloc(size_t(T * C) * 2, "out"), att = be.alloc_floats(size_t(H * T * T), "att"),
         dqkv = be.alloc_floats(qkv.size(), "dqkv");
  be.copy_from_host(in.data(), qkv.data(), qkv.size() * 2);
  be.copy_from_host(d.data(), dout.data(), dout.size() * 2);
  be.run(AttentionForwardBf16Args{
      .out = out.b16(), .att = att.f32(), .qkv = in.b16(), .B = 1, .Tn = T, .C = C, .H = H, .causal = causal});
  be.run(AttentionBackwardBf16Args{
      .dqkv = dqkv.f32(), .dout = d.b16(), .qkv = in.b16(), .att = att.f32(), .B = 1, .Tn = T, .C = C, .H = H});
  std::vector<bf16> o(size_t(T * C));
  LongAttention r{std::vector<float>(o.size()), std::vector<float>(size_t(H * T * T)), std::vector<float>(qkv.size())};
  be.copy_to_host(o.data(), out.data(), o.size() * 2);
  for (size_t i = 0; i < o.size(); ++i) r.out[i] = to_f32(o[i]);
  be.copy_to_host(r.att.data(), att.data(), r.att.size() * 4);
  be.copy_to_host(r.dqkv.data(), dqkv.data(), r.dqkv.size() * 4);
  return r;
}

TEST_F(CudaOnGpu, AttentionBf16TooLongForSharedMemoryMatchesRef) {
  const int64_t T = 600, C = 64, H = 1;
  Rng rng(6);
  std::vector<bf16> qkv(size_t(T * 3 * C)), dout(size_t(T * C));
  for (bf16& x : qkv) x = to_bf16(float(rng.normal() * 0.3));
  for (bf16& x : dout) x = to_bf16(float(rng.normal()));
  for (bool causal : {true, false}) {
    const LongAttention g = long_attention_bf16(backend("cuda"), qkv, dout, T, C, H, causal);
    const LongAttention r = long_attention_bf16(backend("ref"), qkv, dout, T, C, H, causal);
    const char* what = causal ? "causal" : "full";
    EXPECT_LT(rel_error(g.out, r.out), 1e-2) << what << " out";     // kB16: a bf16 output
    EXPECT_LT(rel_error(g.att, r.att), 2e-5) << what << " att";     // kF32
    EXPECT_LT(rel_error(g.dqkv, r.dqkv), 1e-2) << what << " dqkv";  // kB16: P and dS rounded to bf16 inside
  }
}

}  // namespace
}  // namespace oc::ops::test
