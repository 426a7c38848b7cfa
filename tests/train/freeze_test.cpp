// --lock-image / --lock-text: which parameters train. Image groups against OpenCLIP 2.24's own
// lock_image_tower; text groups as OpenCLIP 3.x's lock_text_tower (2.24 has none for a CLIP
// text tower), by hand: whole groups, LayerNorms included.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/check.h"
#include "model/config.h"
#include "test_util.h"
#include "train/freeze.h"

namespace oc {
namespace {

std::set<std::string> trainable(const Clip& m, const TrainArgs& a) {
  std::vector<bool> mask = trainable_mask(m, a);
  std::set<std::string> out;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) out.insert(m.table().params[i].name);
  return out;
}

TEST(Freeze, ImageGroupsEqualOpenClip224) {
  OC_NEED_OPEN_CLIP();
  Clip m(load_model_config("test-tiny"));
  const std::string cfg = OPENCLIP_SOURCE_DIR "/configs/models/test-tiny.json";
  // test-tiny has 2 blocks: 4 groups (embeddings, block 0, [block 1, ln_post], proj); 5 > 4.
  auto r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/openclip_ref.py lock-image " + cfg +
                     " 0 1 2 3 4 5 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  std::map<int, std::set<std::string>> by_n;
  std::istringstream in(r.out);
  int n = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0) n = std::stoi(line.substr(3));
    else if (!line.empty() && n >= 0) by_n[n].insert(line);
  }
  for (int unlocked = 0; unlocked <= 5; ++unlocked) {
    const std::set<std::string>& theirs = by_n[unlocked];
    TrainArgs a;
    a.lock_image = true;
    a.lock_image_unlocked_groups = unlocked;
    EXPECT_EQ(trainable(m, a), theirs) << "unlocked groups " << unlocked;
  }
}

TEST(Freeze, TextGroupsAsOpenClip3) {
  Clip m(load_model_config("test-tiny"));  // 2 text blocks: groups emb, block 0, [block 1, ln_final], proj
  TrainArgs a;
  a.lock_text = true;
  a.lock_text_freeze_layer_norm = true;
  std::set<std::string> vision;
  for (const auto& p : m.table().params)
    if (p.name.rfind("visual.", 0) == 0 || p.name == "logit_scale") vision.insert(p.name);
  auto text_trainable = [&](int unlocked) {
    a.lock_text_unlocked_layers = unlocked;
    std::set<std::string> t = trainable(m, a), out;
    for (const auto& n : t)
      if (!vision.count(n)) out.insert(n);
    EXPECT_TRUE(std::includes(t.begin(), t.end(), vision.begin(), vision.end())) << "the image tower trains";
    return out;
  };
  EXPECT_TRUE(text_trainable(0).empty());
  EXPECT_EQ(text_trainable(1), std::set<std::string>{"text_projection"});
  const std::set<std::string> two = text_trainable(2);
  EXPECT_TRUE(two.count("ln_final.weight") && two.count("transformer.resblocks.1.ln_1.weight") &&
              two.count("transformer.resblocks.1.attn.in_proj_weight"));
  EXPECT_FALSE(two.count("transformer.resblocks.0.ln_1.weight"));
  const std::set<std::string> three = text_trainable(3);
  EXPECT_TRUE(three.count("transformer.resblocks.0.ln_2.bias"));
  EXPECT_FALSE(three.count("token_embedding.weight"));
  const std::set<std::string> all = text_trainable(4);
  EXPECT_TRUE(all.count("token_embedding.weight") && all.count("positional_embedding"));
  EXPECT_EQ(text_trainable(9), all);  // more than the groups: all of them (3.x: min(n, groups))
  a.lock_text_freeze_layer_norm = false;
  EXPECT_THROW(trainable_mask(m, a), std::exception);  // 3.x asserts freeze_layer_norm
}


// A SigLIP model (timm image tower, CustomTextCLIP's text.* names), shrunk: --lock-image locks
// the whole trunk (OpenCLIP's TimmModel.lock(0)); --lock-text finds its groups under text.*.
TEST(Freeze, SiglipTimmTowerAndTextPrefix) {
  ModelCfg c = load_model_config("ViT-B-16-SigLIP");
  c.vision.image_size = 32, c.vision.width = 32, c.vision.head_width = 16, c.vision.layers = 2, c.embed_dim = 32;
  c.text.width = 32, c.text.heads = 2, c.text.layers = 2, c.text.vocab_size = 50, c.text.context_length = 8;
  Clip m(c);
  TrainArgs a;
  a.lock_image = true;
  for (const std::string& n : trainable(m, a)) EXPECT_NE(n.rfind("visual.", 0), 0u) << n << " trains";
  EXPECT_TRUE(trainable(m, a).count("text.token_embedding.weight"));
  a.lock_image_unlocked_groups = 1;
  EXPECT_THROW(trainable(m, a), Error);
  a = TrainArgs{};
  a.lock_text = a.lock_text_freeze_layer_norm = true;
  a.lock_text_unlocked_layers = 1;  // the projection only
  std::set<std::string> text;
  for (const std::string& n : trainable(m, a))
    if (n.rfind("text.", 0) == 0) text.insert(n);
  EXPECT_EQ(text, (std::set<std::string>{"text.text_projection.weight", "text.text_projection.bias"}));
}

// ModifiedResNet.lock: every parameter of the tower frozen (the text tower and logit_scale
// train); partial locking is refused, as OpenCLIP asserts unlocked_groups == 0.
TEST(Freeze, ResNetTowerLocksWhole) {
  Clip m(load_model_config(OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json"));
  TrainArgs a;
  a.lock_image = true;
  const std::set<std::string> t = trainable(m, a);
  for (const ParamInfo& p : m.table().params)
    EXPECT_EQ(t.count(p.name) == 1, p.name.rfind("visual.", 0) != 0) << p.name;
  a.lock_image_unlocked_groups = 1;
  EXPECT_THROW(trainable_mask(m, a), std::exception);
}

}  // namespace
}  // namespace oc
