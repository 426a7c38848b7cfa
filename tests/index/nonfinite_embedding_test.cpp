// Issue 42 #8, its second half: an embedding that is not finite (NaN weights) is not written
// into an index; each such item is counted as failed and named in a warning.
#include <gtest/gtest.h>

#include <cmath>

#include "index_fixture.h"
#include "model/clip.h"
#include "model/weights.h"

namespace oc::test {
namespace {

TEST(NonFiniteEmbedding, IsNotIndexedAndTheItemIsNamed) {
  const TinyModelFiles f = make_fixture("nonfinite_index", 3);
  Clip m(load_model_config("test-tiny"));
  load_weights(m, f.weights);
  const ParamInfo* proj = m.table().find("visual.proj");
  ASSERT_NE(proj, nullptr);
  std::vector<float> nan(size_t(proj->numel), std::nanf(""));
  m.backend().copy_from_host(m.params() + proj->offset, nan.data(), sizeof(float) * nan.size());
  const std::string w = f.dir + "/nan.safetensors";
  save_weights(m, w);
  const std::string out = f.dir + "/index";
  auto r = run(build_cmd(f, f.dir + "/img", out, w));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find(f.images[0] + ": its embedding is not finite (NaN or infinity); not indexed"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("none of the images could be read"), std::string::npos) << r.out;
  // The same images with the model's own weights are indexed (the control).
  r = run(build_cmd(f, f.dir + "/img", out));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["added"], 3);
}

}  // namespace
}  // namespace oc::test
