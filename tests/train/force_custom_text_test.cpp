// --force-custom-text (OpenCLIP's CustomTextCLIP layout for any config): the text tower's
// parameters are saved under text.*, a CLIP-layout checkpoint given as --pretrained is
// converted on load as OpenCLIP's load_checkpoint does, the run's checkpoint loads back into
// the plain config, and OpenCLIP 2.24 loads it with force_custom_text=True.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "model/clip.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc {
namespace {

std::string tiny_train(const std::string& dir, const std::string& name, const std::string& model = "test-tiny") {
  return "cd '" + dir + "' && " + test::openclip() +
         " train --dataset-type synthetic --train-num-samples 16 --batch-size 8 --epochs 1 --workers 1"
         " --precision fp32 --model " + model + " --name " + name;
}

bool has_key(const NamedTensors& sd, const std::string& k) {
  return std::any_of(sd.begin(), sd.end(), [&](auto& kv) { return kv.first == k; });
}

TEST(ForceCustomText, CheckpointUsesTextNamesAndConvertsBothWays) {
  const std::string dir = test::fresh_dir("force_custom_text");
  auto plain = test::run(tiny_train(dir, "plain"));
  ASSERT_EQ(plain.status, 0) << plain.out;
  const std::string plain_ck = dir + "/logs/plain/checkpoints/epoch_1.pt";
  ASSERT_TRUE(has_key(read_state_dict(plain_ck), "positional_embedding"));

  // A CLIP-layout checkpoint as --pretrained of a --force-custom-text run: converted on load.
  auto custom = test::run(tiny_train(dir, "custom") + " --force-custom-text --pretrained " + plain_ck);
  ASSERT_EQ(custom.status, 0) << custom.out;
  const std::string custom_ck = dir + "/logs/custom/checkpoints/epoch_1.pt";
  const NamedTensors sd = read_state_dict(custom_ck);
  for (const char* k : {"text.positional_embedding", "text.token_embedding.weight", "text.ln_final.weight",
                        "text.text_projection", "text.transformer.resblocks.0.attn.in_proj_weight"})
    EXPECT_TRUE(has_key(sd, k)) << k;
  for (const char* k : {"positional_embedding", "token_embedding.weight", "text_projection"})
    EXPECT_FALSE(has_key(sd, k)) << k;
  EXPECT_TRUE(has_key(sd, "visual.conv1.weight"));
  const std::string params = fs::read_text(dir + "/logs/custom/params.txt").value();
  EXPECT_NE(params.find("force_custom_text: True"), std::string::npos) << params;

  // Back into the plain config: the same tensors under CLIP's names, byte for byte.
  Clip m(load_model_config("test-tiny"));
  load_weights(m, custom_ck);
  const NamedTensors back = state_dict_copy(m);
  for (auto& [name, t] : back) {
    const std::string in_file = name.rfind("visual.", 0) == 0 || name == "logit_scale" ? name : "text." + name;
    auto it = std::find_if(sd.begin(), sd.end(), [&](auto& kv) { return kv.first == in_file; });
    ASSERT_NE(it, sd.end()) << in_file;
    EXPECT_EQ(it->second.to_f32(), t.to_f32()) << name;
  }
}

TEST(ForceCustomText, OpenClipLoadsTheCheckpoint) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = test::fresh_dir("force_custom_text_py");
  auto r = test::run(tiny_train(dir, "t") + " --force-custom-text");
  ASSERT_EQ(r.status, 0) << r.out;
  // A strict load into OpenCLIP's CustomTextCLIP of the same config (test-tiny.json is in
  // OpenCLIP's format; load_checkpoint takes checkpoint["state_dict"]).
  const std::string py = test::pyref_python() +
                         " -c \"import open_clip; open_clip.add_model_config('" OPENCLIP_SOURCE_DIR
                         "/configs/models/test-tiny.json'); m = open_clip.create_model('test-tiny', "
                         "force_custom_text=True, pretrained='" + dir + "/logs/t/checkpoints/epoch_1.pt'); "
                         "print(type(m).__name__)\" 2>&1";
  auto p = test::run(py);
  ASSERT_EQ(p.status, 0) << p.out;
  EXPECT_NE(p.out.find("CustomTextCLIP"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace oc
