// The eval transform against OpenCLIP 2.24.0's own image_transform (open_clip/transform.py on
// torchvision and Pillow) for each resize mode and interpolation, on RGB images of odd sizes
// and aspect ratios: equal floats (the resampler is PIL-exact and ToTensor + Normalize is the
// same float32 arithmetic).
#include <gtest/gtest.h>

#include <cstring>

#include "core/fs.h"
#include "image/codec.h"
#include "image/test_images.h"
#include "image/transform.h"
#include "test_util.h"

namespace oc {
namespace {

TEST(OpenClipTransform, EvalTransformEqualsOpenClip) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = test::fresh_dir("openclip_transform");
  std::vector<std::string> paths;
  std::vector<ImageU8> images;
  const int sizes[][2] = {{57, 31}, {31, 57}, {224, 224}, {300, 97}, {13, 40}};
  for (int i = 0; i < 5; ++i) {
    images.push_back(testing_images::make_rgb(sizes[i][0], sizes[i][1], uint32_t(40 + i)));
    paths.push_back(dir + "/" + std::to_string(i) + ".png");
    fs::write_atomic(paths.back(), encode_image(images.back(), ImageFormat::Png).value());
  }
  const int S = 32;
  for (const char* mode : {"shortest", "longest", "squash"})
    for (const char* interp : {"bicubic", "bilinear"}) {
      std::string cmd = test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/openclip_ref.py transform " + dir +
                        "/out.f32 " + std::to_string(S) + " " + mode + " " + interp;
      for (const auto& p : paths) cmd += " " + p;
      auto r = test::run(cmd + " 2>/dev/null");
      ASSERT_EQ(r.status, 0) << r.out;
      const std::string ref = fs::read_text(dir + "/out.f32").value();
      const size_t n = size_t(3 * S * S);
      ASSERT_EQ(ref.size(), images.size() * n * sizeof(float));
      PreprocessCfg cfg;
      cfg.size = S;
      cfg.interpolation = std::string(interp) == "bilinear" ? Interp::Bilinear : Interp::Bicubic;
      cfg.resize_mode = std::string(mode) == "longest" ? ResizeMode::Longest
                        : std::string(mode) == "squash" ? ResizeMode::Squash
                                                        : ResizeMode::Shortest;
      for (size_t k = 0; k < images.size(); ++k) {
        std::vector<float> ours(n), theirs(n);
        preprocess_eval(images[k], cfg, ours);
        std::memcpy(theirs.data(), ref.data() + k * n * sizeof(float), n * sizeof(float));
        size_t diff = 0;
        for (size_t i = 0; i < n; ++i) diff += ours[i] != theirs[i];
        EXPECT_EQ(diff, 0u) << mode << " " << interp << " image " << images[k].width << "x" << images[k].height;
      }
    }
}

}  // namespace
}  // namespace oc
