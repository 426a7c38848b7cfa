// `openclip quantize` end to end on test-tiny: the scales file beside the weights, which
// `embed --precision int8` then loads (its log says so) with embeddings close to fp32's; the
// bad folders and a family without an int8 path refused by name.
#include <gtest/gtest.h>

#include <cmath>

#include "core/fs.h"
#include "io/safetensors.h"
#include "model/int8_scales.h"
#include "ops/gemm_int8.h"
#include "ops/registry.h"
#include "test_util.h"
#include "tiny_model_files.h"

namespace oc::test {
namespace {

TEST(CliQuantize, WritesScalesBesideTheWeightsThatInt8Loads) {
  const TinyModelFiles f = make_tiny_model_files("cli_quantize");
  Rng rng(2);
  fs::make_dirs(f.dir + "/img/sub");
  for (int i = 0; i < 5; ++i)
    fs::write_atomic(f.dir + "/img/" + (i % 2 ? "sub/" : "") + std::to_string(i) + ".png",
                     std::span<const uint8_t>(random_png(rng, 32 + i, 28)));
  fs::write_atomic(f.dir + "/img/broken.jpg", std::string("\xff\xd8 not really"));
  fs::write_atomic(f.dir + "/caps.txt", std::string("a photo of a cat\r\n\na drawing of a boat\n"));
  const std::string m = " --model test-tiny --pretrained " + f.weights;
  ::oc::test::Run r =
      run(openclip() + " quantize" + m + " --calib " + f.dir + "/img --calib-captions " + f.dir + "/caps.txt");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string beside = f.dir + "/w.int8.safetensors";
  EXPECT_NE(r.out.find("wrote " + beside), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("from 5 images (1 unreadable, skipped) and 2 captions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("broken.jpg"), std::string::npos) << "the skipped file is named\n" << r.out;
  const Int8Scales s = read_int8_scales(beside);
  EXPECT_EQ(s.model, "test-tiny");
  EXPECT_EQ(s.calib_images, 5);
  EXPECT_EQ(s.calib_texts, 2);
  // -o and --calib-images: another file, from the first 2 images.
  r = run(openclip() + " quantize" + m + " --calib " + f.dir + "/img --calib-images 2 -o " + f.dir +
          "/two.safetensors");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_int8_scales(f.dir + "/two.safetensors").calib_images, 2);
  EXPECT_EQ(read_int8_scales(f.dir + "/two.safetensors").calib_texts, 800) << "the default captions";

  if (!ops::has_int8(ops::backend("cpu"))) GTEST_SKIP() << "this CPU has no VNNI: int8 falls back";
  ::oc::test::Run q = run(openclip() + " embed" + m + " --images " + f.dir + "/img/0.png --precision int8 --out " +
                          f.dir + "/q.safetensors");
  ASSERT_EQ(q.status, 0) << q.out;
  EXPECT_NE(q.out.find("precision: int8 static (" + beside + ")"), std::string::npos) << q.out;
  ::oc::test::Run p = run(openclip() + " embed" + m + " --images " + f.dir + "/img/0.png --precision fp32 --out " +
                          f.dir + "/p.safetensors");
  ASSERT_EQ(p.status, 0) << p.out;
  auto first = [](const std::string& p) { return io::read_safetensors(p).value().tensors.at(0).second.to_f32(); };
  const auto a = first(f.dir + "/q.safetensors"), b = first(f.dir + "/p.safetensors");
  ASSERT_EQ(a.size(), b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  EXPECT_GT(ab / std::sqrt(aa * bb), 0.995) << "as Int8Scales.StaticEmbeddingsCloseToDynamicAndFp32";
  q = run(openclip() + " embed" + m + " --images " + f.dir + "/img/0.png --precision int8 --int8-scales " + f.dir +
          "/two.safetensors --out " + f.dir + "/q2.safetensors");
  EXPECT_NE(q.out.find("int8 static (" + f.dir + "/two.safetensors)"), std::string::npos) << q.out;
}

TEST(CliQuantize, BadFoldersAndFamiliesAreRefusedByName) {
  const TinyModelFiles f = make_tiny_model_files("cli_quantize_bad");
  const std::string m = " --model test-tiny --pretrained " + f.weights;
  fs::make_dirs(f.dir + "/empty");
  fs::make_dirs(f.dir + "/junk");
  fs::write_atomic(f.dir + "/junk/a.png", std::string("nope"));
  struct Case {
    std::string args, part;
  };
  const Case cases[] = {
      {m + " --calib " + f.dir + "/empty", "no images"},
      {m + " --calib " + f.dir + "/junk", "no readable calibration image among 1 (1 unreadable"},
      {m + " --calib " + f.dir + "/missing", "not a folder"},
      {m, "--calib"},
      {" --model " OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json -o " + f.dir + "/rn.safetensors --calib " + f.dir +
           "/junk",
       "ModifiedResNet"},
      {" --model test-tiny --calib " + f.dir + "/junk", "--pretrained"},
  };
  for (const Case& c : cases) {
    ::oc::test::Run r = run(openclip() + " quantize" + c.args);
    EXPECT_NE(r.status, 0) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.part), std::string::npos) << c.args << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(f.dir + "/w.int8.safetensors")) << "nothing written on an error";
}

}  // namespace
}  // namespace oc::test
