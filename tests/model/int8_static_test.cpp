// Static int8 scales (`openclip quantize`: model/int8_scales.h, model/calibrate.h): the file's
// round trip and its bad inputs (each an error naming the tensor and the file), calibration on
// test-tiny and its bad folders, static embeddings close to dynamic and fp32, NaN propagating
// as in fp32, and the rule that --precision int8 finds the scales beside the weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/rng.h"
#include "io/safetensors.h"
#include "model/act_ranges.h"
#include "model/calibrate.h"
#include "model/inference.h"
#include "model/int8_scales.h"
#include "ops/gemm_int8.h"
#include "ops/registry.h"
#include "test_util.h"
#include "tiny_model_files.h"

namespace oc {
namespace {

#define SKIP_WITHOUT_INT8() \
  if (!ops::has_int8(ops::backend("cpu"))) GTEST_SKIP() << "this CPU has no VNNI: int8 falls back to bf16/fp32"

template <class F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << parts[0];
  } catch (const std::exception& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

// A scales file written tensor by tensor (the writer refuses bad values, so bad files are
// made here as another tool would make them).
void write_raw(const std::string& path, const std::vector<std::pair<std::string, HostTensor>>& t,
               const std::string& format = kInt8ScalesFormat) {
  io::write_safetensors(path, t,
                        {{"format", format},
                         {"format_version", "1"},
                         {"model", "test-tiny"},
                         {"calibration_images", "4"},
                         {"calibration_texts", "3"}});
}
HostTensor f32(Shape s, std::vector<float> v) { return HostTensor::from_f32(std::move(s), v); }

TEST(Int8Scales, NamesAndFileRoundTrip) {
  EXPECT_EQ(int8_scale_name("visual.transformer.resblocks.0.mlp.c_proj.weight"),
            "visual.transformer.resblocks.0.mlp.c_proj.input_scale");
  EXPECT_EQ(int8_scale_name("transformer.resblocks.3.attn.in_proj_weight"),
            "transformer.resblocks.3.attn.in_proj_input_scale");
  EXPECT_EQ(int8_scales_beside("/m/run/epoch_3.pt"), "/m/run/epoch_3.int8.safetensors");
  EXPECT_EQ(int8_scales_beside("/m/a.b/weights"), "/m/a.b/weights.int8.safetensors");
  EXPECT_EQ(int8_scales_beside(""), "");
  const std::string dir = test::fresh_dir("int8_scales_rt");
  Int8Scales s;
  s.model = "test-tiny", s.calib_images = 7, s.calib_texts = 9, s.range = "p99.99";
  s.scale = {{"visual.conv1.input_scale", 0.25f}, {"transformer.resblocks.0.attn.in_proj_input_scale", 3e-4f}};
  write_int8_scales(dir + "/s.safetensors", s);
  const Int8Scales r = read_int8_scales(dir + "/s.safetensors");
  EXPECT_EQ(r.file, dir + "/s.safetensors");
  EXPECT_EQ(r.model, "test-tiny");
  EXPECT_EQ(r.calib_images, 7);
  EXPECT_EQ(r.calib_texts, 9);
  EXPECT_EQ(r.range, "p99.99");
  EXPECT_EQ(r.scale, s.scale);
}

// The range of a GEMM input: max|x|, or the percentile from each call's largest values (exact
// here: each call holds half of the largest values, within the 2x share each call keeps).
TEST(Int8Scales, RangesAreTheMaxOrAPercentileOfEveryCall) {
  std::vector<float> x(10000);  // |x| = 1..10000: the odd values first, then the even ones
  for (size_t i = 0; i < 5000; ++i) x[i] = float(2 * i + 1), x[5000 + i] = -float(2 * i + 2);
  x[17] = std::numeric_limits<float>::quiet_NaN();  // ignored
  const float w1 = 0, w2 = 0;
  ActRanges mx, p999(1e-3);
  for (ActRanges* r : {&mx, &p999}) {
    ActRanges::Scope scope(*r);
    observe_gemm_input(&w1, x.data(), 5000);
    observe_gemm_input(&w1, x.data() + 5000, 5000);
    observe_gemm_input(&w2, x.data(), 100);
  }
  observe_gemm_input(&w1, x.data(), 1);  // no scope: nothing
  EXPECT_EQ(mx.ranges().at(&w1), 10000.0f);
  EXPECT_EQ(mx.ranges().at(&w2), 199.0f);
  EXPECT_EQ(p999.ranges().at(&w1), 9991.0f) << "the 10th largest of 10,000";
  EXPECT_EQ(p999.ranges().at(&w2), 199.0f) << "the largest of 100";
}

TEST(Int8Scales, BadFilesAreErrorsNamingTheTensorAndFile) {
  const std::string dir = test::fresh_dir("int8_scales_bad");
  const std::string n = "visual.transformer.resblocks.0.mlp.c_fc.input_scale";
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::string, HostTensor>> cases[] = {
      {{n, f32({2}, {0.1f, 0.2f})}}, {{n, f32({1}, {nan})}},   {{n, f32({1}, {inf})}},
      {{n, f32({1}, {0.0f})}},       {{n, f32({1}, {-0.5f})}}, {{n, f32({1, 1}, {0.1f})}}};
  int i = 0;
  for (const auto& c : cases) {
    const std::string p = dir + "/bad" + std::to_string(i++) + ".safetensors";
    write_raw(p, c);
    expect_error([&] { read_int8_scales(p); }, {n, p});
  }
  write_raw(dir + "/other.safetensors", {{n, f32({1}, {0.1f})}}, "something-else");
  expect_error([&] { read_int8_scales(dir + "/other.safetensors"); }, {dir + "/other.safetensors", "format"});
  expect_error([&] { read_int8_scales(dir + "/missing.safetensors"); }, {dir + "/missing.safetensors"});
}

// test-tiny with random weights (seed 0) and PNG files under `dir`: a calibration set.
struct TinyCalib {
  std::string dir;
  std::vector<std::string> images;
  std::vector<std::string> captions = {"a photo of a dog", "a sketch of a cat", "itap of a red car"};
};
TinyCalib tiny_calib(const std::string& name, int n) {
  TinyCalib t;
  t.dir = test::fresh_dir(name);
  Rng rng(3);
  for (int i = 0; i < n; ++i) {
    t.images.push_back(t.dir + "/" + std::to_string(i) + ".png");
    fs::write_atomic(t.images.back(), std::span<const uint8_t>(test::random_png(rng, 40 + 3 * i, 30)));
  }
  return t;
}
InferenceModel tiny(Precision p, const std::string& weights = "", int batch = 4) {
  InferenceOptions o;
  o.model = "test-tiny", o.weights = weights, o.precision = p, o.max_batch = batch;
  return InferenceModel(o);
}

TEST(Int8Scales, CalibrationCoversEveryInt8GemmAndRefusesBadFolders) {
  const TinyCalib c = tiny_calib("int8_calib", 6);
  InferenceModel fp = tiny(Precision::Fp32);
  CalibrationReport r = calibrate_int8(fp, c.images, c.captions);
  const ModelCfg& cfg = fp.cfg();
  EXPECT_EQ(r.scales.scale.size(), size_t(4 * (cfg.vision.layers + cfg.text.layers) + 1));  // + conv1
  EXPECT_EQ(r.scales.calib_images, 6);
  EXPECT_EQ(r.scales.model, "test-tiny");
  for (const auto& [name, v] : r.scales.scale) EXPECT_TRUE(std::isfinite(v) && v > 0.0f) << name;
  // Unreadable images are counted and skipped; none readable is refused.
  const std::string junk = c.dir + "/junk.png";
  fs::write_atomic(junk, std::string("not a png"));
  std::vector<std::string> with_junk = c.images;
  with_junk.insert(with_junk.begin() + 2, junk);
  r = calibrate_int8(fp, with_junk, c.captions);
  EXPECT_EQ(r.unreadable, 1);
  EXPECT_EQ(r.scales.calib_images, 6);
  EXPECT_NE(r.first_error.find(junk), std::string::npos) << r.first_error;
  const std::vector<std::string> only_junk = {junk};
  expect_error([&] { calibrate_int8(fp, only_junk, c.captions); }, {"no readable calibration image", "1 unreadable"});
  expect_error([&] { calibrate_int8(fp, {}, c.captions); }, {"no readable calibration image"});
  expect_error([&] { calibrate_int8(fp, c.images, {}); }, {"no calibration captions"});
  // A family without an int8 path is named.
  InferenceOptions o;
  o.model = OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json", o.tokenizer = false;
  InferenceModel rn(o);
  expect_error([&] { calibrate_int8(rn, c.images, c.captions); }, {"ModifiedResNet"});
}

TEST(Int8Scales, ScalesForAnotherModelOrMissingATensorAreRefused) {
  const TinyCalib c = tiny_calib("int8_mismatch", 2);
  InferenceModel fp = tiny(Precision::Fp32);
  Int8Scales s = calibrate_int8(fp, c.images, c.captions).scales;
  s.file = c.dir + "/s.int8.safetensors";
  Clip& clip = fp.clip();
  {
    Int8Scales m = s;
    m.scale.erase("transformer.resblocks.1.mlp.c_proj.input_scale");
    expect_error([&] { clip.set_int8_scales(std::make_shared<const Int8Scales>(m)); },
                 {"transformer.resblocks.1.mlp.c_proj.input_scale", s.file});
  }
  {
    Int8Scales m = s;
    m.scale["visual.transformer.resblocks.7.mlp.c_fc.input_scale"] = 0.1f;  // a deeper model's
    expect_error([&] { clip.set_int8_scales(std::make_shared<const Int8Scales>(m)); },
                 {"visual.transformer.resblocks.7.mlp.c_fc.input_scale", s.file});
  }
  {
    Int8Scales m = s;
    m.model = "ViT-B-32";
    expect_error([&] { clip.set_int8_scales(std::make_shared<const Int8Scales>(m)); }, {"ViT-B-32", s.file});
  }
  EXPECT_EQ(clip.int8_scales(), nullptr) << "a refused file leaves the model dynamic";
}

// The calibration images through fp32, dynamic int8 and static int8.
TEST(Int8Scales, StaticEmbeddingsCloseToDynamicAndFp32) {
  SKIP_WITHOUT_INT8();
  const TinyCalib c = tiny_calib("int8_static_close", 8);
  InferenceModel fp = tiny(Precision::Fp32);
  auto scales = std::make_shared<const Int8Scales>(calibrate_int8(fp, c.images, c.captions).scales);
  InferenceModel dyn = tiny(Precision::Int8), st = tiny(Precision::Int8);
  st.clip().set_int8_scales(scales);
  EXPECT_EQ(dyn.precision_label(), "int8 dynamic");
  EXPECT_EQ(st.precision_label(), "int8 static (calibrated in this process)");
  auto fill = [&](InferenceModel& m) {
    return [&](size_t i, std::span<float> px) { m.preprocess(decode_source_image_file(c.images[i]).value(), px); };
  };
  const auto f = fp.encode_images(c.images.size(), fill(fp)), d = dyn.encode_images(c.images.size(), fill(dyn)),
             s = st.encode_images(c.images.size(), fill(st));
  const auto ft = fp.encode_texts(c.captions), dt = dyn.encode_texts(c.captions), stt = st.encode_texts(c.captions);
  const int64_t E = fp.embed_dim();
  EXPECT_NE(s, d) << "the static path ran";
  // Per-tensor scales from max|x| quantize the calibration inputs themselves (nothing clips),
  // with steps of max|x| / 127 of the whole tensor rather than of each row: measured images
  // 0.99997-0.99999 against fp32 and dynamic, texts 0.9983-0.9998 (their padding tokens widen
  // the ranges). 0.995, the dynamic test's bound, fails on a wrong scale or layout.
  for (size_t i = 0; i < c.images.size(); ++i) {
    EXPECT_GT(cosine(f.data() + i * E, s.data() + i * E, E), 0.995) << "image " << i;
    EXPECT_GT(cosine(d.data() + i * E, s.data() + i * E, E), 0.995) << "image " << i;
  }
  for (size_t i = 0; i < c.captions.size(); ++i)
    EXPECT_GT(cosine(ft.data() + i * E, stt.data() + i * E, E), 0.995) << "text " << i;
  // NaN in one image's pixels: that image's embedding is NaN, the others stay finite.
  std::vector<float> px(size_t(3 * st.image_size() * st.image_size() * 3), 0.1f), out(size_t(3 * E));
  px[px.size() / 3 + 17] = std::numeric_limits<float>::quiet_NaN();  // image 1
  st.encode_pixels(px.data(), 3, out.data());
  for (int64_t e = 0; e < E; ++e) {
    EXPECT_TRUE(std::isnan(out[size_t(E + e)])) << e;
    EXPECT_TRUE(std::isfinite(out[size_t(e)]) && std::isfinite(out[size_t(2 * E + e)])) << e;
  }
}

// --precision int8 takes <weights stem>.int8.safetensors beside the weights, or --int8-scales.
TEST(Int8Scales, LoadedBesideTheWeightsOrGiven) {
  SKIP_WITHOUT_INT8();
  const test::TinyModelFiles f = test::make_tiny_model_files("int8_beside");
  const TinyCalib c = tiny_calib("int8_beside_img", 2);
  EXPECT_EQ(tiny(Precision::Int8, f.weights).precision_label(), "int8 dynamic");
  InferenceModel fp = tiny(Precision::Fp32, f.weights);
  write_int8_scales(int8_scales_beside(f.weights), calibrate_int8(fp, c.images, c.captions).scales);
  const std::string beside = f.dir + "/w.int8.safetensors";
  EXPECT_EQ(tiny(Precision::Int8, f.weights).precision_label(), "int8 static (" + beside + ")");
  InferenceOptions o;
  o.model = "test-tiny", o.weights = f.other_weights, o.precision = Precision::Int8, o.int8_scales = beside;
  EXPECT_EQ(InferenceModel(o).precision_label(), "int8 static (" + beside + ")");
  o.int8_scales = f.dir + "/nope.safetensors";
  expect_error([&] { InferenceModel m(o); }, {"nope.safetensors"});
  o.precision = Precision::Fp32, o.int8_scales = beside;
  EXPECT_EQ(InferenceModel(o).precision_label(), "fp32");
}

}  // namespace
}  // namespace oc
