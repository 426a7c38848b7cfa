// The guarded test backend (tests/guarded_backend.h) checks each op's arguments against the
// memory contract of ops/op_args.h: raw pointers must be memory of the backend (or null), host
// arrays (std::span) and host scalars (Host<T>) must not be. These tests show it accepts what
// the contract allows and rejects, naming the op and the field, what it does not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "guarded_backend.h"

namespace oc::ops {
namespace {

using test::guarded;

// The message of the error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Buffer upload(Backend& be, const std::vector<float>& x) {
  Buffer b = be.alloc_floats(x.size(), "guarded test input", false);
  be.copy_from_host(b.data(), x.data(), x.size() * sizeof(float));
  return b;
}

TEST(GuardedBackend, RunsOpsOnItsOwnMemory) {
  Backend& g = guarded();
  Buffer y = upload(g, {0.5f, 0.5f, 0.5f, 0.5f}), x = upload(g, {1, -2, 3, 4});
  g.run(AddInplaceArgs{.y = y.f32(), .x = x.f32(), .n = 4});
  std::vector<float> out(4);
  g.copy_to_host(out.data(), y.data(), sizeof(float) * 4);
  EXPECT_EQ(out, (std::vector<float>{1.5f, -1.5f, 3.5f, 4.5f}));
  // Null where the contract allows it (no input gradient, no bias gradient).
  Buffer dout = upload(g, std::vector<float>(6, 1.0f)), inp = upload(g, std::vector<float>(6, 2.0f));
  Buffer w = upload(g, std::vector<float>(9, 0.0f)), dw = upload(g, std::vector<float>(9, 0.0f));
  EXPECT_EQ(error_of([&] {
              g.run(LinearBackwardArgs{.dinp = nullptr, .dweight = dw.f32(), .dbias = nullptr, .dout = dout.f32(),
                                       .inp = inp.f32(), .weight = w.f32(), .M = 2, .K = 3, .N = 3});
            }),
            "");
}

TEST(GuardedBackend, RejectsHostMemoryWhereTheBackendsIsNeeded) {
  Backend& g = guarded();
  Buffer y = upload(g, std::vector<float>(4, 0.0f));
  std::vector<float> host(4, 1.0f);
  const std::string e = error_of([&] { g.run(AddInplaceArgs{.y = y.f32(), .x = host.data(), .n = 4}); });
  EXPECT_NE(e.find("AddInplaceArgs field 1"), std::string::npos) << e;
  EXPECT_NE(e.find("copy_from_host"), std::string::npos) << e;
}

TEST(GuardedBackend, HostArraysStayOnTheHost) {
  Backend& g = guarded();
  const int64_t B = 2, T = 3, C = 4, V = 5;
  Buffer x = g.alloc_floats(size_t(B * T * C), "x"), wte = upload(g, std::vector<float>(size_t(V * C), 1.0f));
  Buffer wpe = upload(g, std::vector<float>(size_t(T * C), 2.0f));
  const std::vector<int32_t> tokens = {0, 1, 2, 3, 4, 0};  // host ids: accepted
  EXPECT_EQ(error_of([&] {
              g.run(TokenEmbedForwardArgs{.x = x.f32(), .tokens = tokens, .wte = wte.f32(), .wpe = wpe.f32(), .B = B,
                                          .Tn = T, .C = C, .V = V});
            }),
            "");
  // Token ids in backend memory are not host values.
  Buffer ids = g.alloc(tokens.size() * sizeof(int32_t), "ids");
  const std::string e = error_of([&] {
    g.run(TokenEmbedForwardArgs{.x = x.f32(), .tokens = {static_cast<const int32_t*>(ids.data()), tokens.size()},
                                .wte = wte.f32(), .wpe = wpe.f32(), .B = B, .Tn = T, .C = C, .V = V});
  });
  EXPECT_NE(e.find("TokenEmbedForwardArgs field 1 is a host value"), std::string::npos) << e;
}

// Backend::prefetch where the memory is not the host's (the default a device backend without
// its own inherits; what the trainer's next-step uploads take on the guarded backend): the
// bytes land in a buffer of the backend, which ops accept; the host source may go at once.
TEST(GuardedBackend, PrefetchCopiesIntoItsOwnMemory) {
  test::GuardedBackend& g = guarded();
  Buffer y = upload(g, std::vector<float>(4, 0.5f));
  const int64_t copies = g.copies_from_host();
  Prefetch p;
  {
    const std::vector<float> x = {1, -2, 3, 4};
    p = g.prefetch(x.data(), sizeof(float) * 4, "a guarded test batch");
    EXPECT_NE(p.data(), static_cast<const void*>(x.data()));
  }
  EXPECT_TRUE(g.owns(p.data()));
  EXPECT_EQ(p.bytes(), sizeof(float) * 4);
  EXPECT_EQ(p.backend(), &g);
  EXPECT_EQ(g.copies_from_host(), copies + 1);
  g.await(p);
  g.run(AddInplaceArgs{.y = y.f32(), .x = p.f32(), .n = 4});
  std::vector<float> out(4);
  g.copy_to_host(out.data(), y.data(), sizeof(float) * 4);
  EXPECT_EQ(out, (std::vector<float>{1.5f, -1.5f, 3.5f, 4.5f}));
  // A prefetch belongs to its backend: another one cannot await it.
  const std::string e = error_of([&] { guarded(1).await(p); });
  EXPECT_NE(e.find("a prefetch of backend guarded awaited here"), std::string::npos) << e;
  const void* d = p.data();
  p.reset();  // its buffer goes back to the backend
  EXPECT_EQ(p.data(), nullptr);
  EXPECT_FALSE(g.owns(d));
}

// Where the backend's memory is the host's (ref, cpu), prefetch hands back the host bytes
// themselves: nothing is copied, the ops read the loader's buffer in place as before.
TEST(GuardedBackend, PrefetchOnHostMemoryIsTheHostBuffer) {
  Backend& cpu = backend("cpu");
  const std::vector<float> x = {1, 2, 3};
  Prefetch p = cpu.prefetch(x.data(), sizeof(float) * 3, "a host batch");
  EXPECT_EQ(p.data(), static_cast<const void*>(x.data()));
  cpu.await(p);
  EXPECT_EQ(&cpu.host_allocator(), &plain_host_allocator());
}

}  // namespace
}  // namespace oc::ops
