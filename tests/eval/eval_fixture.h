// The eval tests' data: weights of a randomly initialized test-tiny, 32x32 random PNGs in
// three class folders (folder/<class>/<i>.png), val.csv (filepath, title; the first image of
// each class has a second caption) and templates.txt.
#pragma once
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/rng.h"
#include "image/codec.h"
#include "model/clip.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc::test {

// Weights of a randomly initialized test-tiny, and a few 32x32 PNGs in class folders.
struct EvalFixture {
  std::string dir, weights;
  std::vector<std::string> images;
};

inline EvalFixture make_eval_fixture(const std::string& name) {
  EvalFixture f;
  f.dir = test::fresh_dir(name);
  Clip m(load_model_config("test-tiny"));
  m.init(11);
  f.weights = f.dir + "/w.safetensors";
  save_weights(m, f.weights);
  const char* classes[] = {"redsquare", "greencircle", "bluesquare"};
  Rng rng(1);
  std::string csv = "filepath\ttitle\n";
  for (int c = 0; c < 3; ++c) {
    fs::make_dirs(f.dir + "/folder/" + classes[c]);
    for (int i = 0; i < 3; ++i) {
      ImageU8 img;
      img.width = img.height = 32;
      img.rgb.resize(32 * 32 * 3);
      for (auto& p : img.rgb) p = uint8_t(rng.below(256));
      const std::string rel = std::string("folder/") + classes[c] + "/" + std::to_string(i) + ".png";
      auto png = encode_image(img, ImageFormat::Png);
      EXPECT_TRUE(png.ok());
      fs::write_atomic(f.dir + "/" + rel, png.value());
      f.images.push_back(f.dir + "/" + rel);
      csv += rel + "\ta photo of a " + classes[c] + " number " + std::to_string(i) + "\n";
      if (i == 0) csv += rel + "\tanother caption of the " + classes[c] + "\n";  // multi-caption
    }
  }
  fs::write_atomic(f.dir + "/val.csv", csv);
  fs::write_atomic(f.dir + "/templates.txt", std::string("a photo of a {c}.\nthe {c}\n"));
  return f;
}

}  // namespace oc::test
