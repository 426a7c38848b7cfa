// libFuzzer target: the restricted pickle VM (torch's opcodes, the allowlisted globals,
// memo, nesting) and what is done with its result: repr, structural equality, and the
// protocol-2 writer, whose output must unpickle to an equal tree.
#include "fuzz_util.h"
#include "io/pickle.h"

using namespace oc;

namespace {
bool has_tensor(const io::PyValue& v) {
  if (v.is(io::PyKind::Tensor)) return true;
  for (const auto& x : v.items)
    if (has_tensor(x)) return true;
  for (const auto& kv : v.dict)
    if (has_tensor(kv.first) || has_tensor(kv.second)) return true;
  return false;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::guarded([&] {
    auto v = io::unpickle(std::span<const uint8_t>(data, size), "fuzz.pkl");
    if (!v.ok()) return;
    (void)v->repr();
    fuzz::check(*v == *v);
    // Tensors here are views without values; the writer needs materialized ones.
    if (has_tensor(*v)) return;
    std::vector<uint8_t> out = io::pickle_dumps(*v, [](const auto&) { return std::string("0"); });
    auto back = io::unpickle(out, "roundtrip.pkl");
    fuzz::check(back.ok());
  });
  return 0;
}
