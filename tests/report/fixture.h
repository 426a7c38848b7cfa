// A run folder for the report tests, built from scratch: params.txt, TensorBoard events
// written with our EventWriter (a NaN loss at one step included), and a zero-shot
// predictions file with a known confusion matrix and PNG examples encoded with our codec.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/base64.h"
#include "core/fs.h"
#include "image/codec.h"
#include "io/tfevents.h"

namespace oc::report::test {

inline std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/" + name;
  std::system(("rm -rf '" + d + "' && mkdir -p '" + d + "'").c_str());
  return d;
}

// A 28x28 picture per class (a bright shape on black, like Fashion-MNIST), as PNG base64.
inline std::string example_png(int cls) {
  ImageU8 img;
  img.width = img.height = 28;
  img.rgb.assign(28 * 28 * 3, 0);
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) {
      bool on = false;
      switch (cls % 4) {
        case 0: on = y > 6 && y < 22 && x > 4 && x < 24 && !(y > 12 && (x < 9 || x > 19)); break;  // a T-shirt
        case 1: on = y > 3 && y < 25 && ((x > 8 && x < 13) || (x > 15 && x < 20) || (y < 8 && x > 8 && x < 20)); break;
        case 2: on = (x - 14) * (x - 14) + (y - 14) * (y - 14) < 90; break;
        default: on = y > 3 && y < 25 && std::abs(x - 14) < 3 + (y - 3) / 3; break;  // a dress
      }
      const uint8_t v = on ? uint8_t(120 + (x * 5 + y * 3) % 130) : 0;
      for (int c = 0; c < 3; ++c) img.rgb[(size_t(y) * 28 + x) * 3 + c] = v;
    }
  auto png = encode_image(img, ImageFormat::Png);
  EXPECT_TRUE(png.ok()) << png.error();
  return base64_encode(png.value());
}

inline const std::vector<std::string>& classnames() {
  static const std::vector<std::string> c = {"T-shirt/top", "trouser", "<b>pull & over</b>", "dress"};
  return c;
}
// Rows: true class, columns: predicted. Distinct numbers so a test can find each one.
inline const std::vector<std::vector<int64_t>>& confusion() {
  static const std::vector<std::vector<int64_t>> m = {
      {37, 2, 5, 6}, {1, 44, 0, 5}, {9, 3, 31, 7}, {4, 8, 0, 38}};
  return m;
}

inline void write_params(const std::string& dir) {
  fs::write_atomic(fs::join(dir, "params.txt"),
                   std::string("batch_size: 256\nepochs: 3\nlr: 0.001\nmodel: fmnist-S\nname: fixture <run> & co\n"
                               "precision: amp_bf16\ntrain_num_samples: 60000\nwarmup: 20\n"));
}

inline void write_events(const std::string& dir, bool with_val = true, int steps = 120) {
  io::EventWriter w(fs::join(dir, "tensorboard"));
  const double t0 = 1.8e9;
  for (int s = 0; s < steps; ++s) {
    float loss = float(5.5 * std::exp(-s / 40.0) + 0.3 + 0.05 * std::sin(s * 1.3));
    if (s == 50) loss = std::numeric_limits<float>::quiet_NaN();
    w.add_scalar("train/loss", loss, s, t0 + s);
    w.add_scalar("train/lr", float(1e-3 * std::min(1.0, (s + 1) / 20.0) * (0.5 + 0.5 * std::cos(M_PI * s / steps))), s, t0 + s);
    w.add_scalar("train/samples_per_second", float(800 + 40 * std::sin(s * 0.7)), s, t0 + s);
    w.add_scalar("train/scale", float(14.28 + s * 0.05), s, t0 + s);
  }
  if (with_val)
    for (int e = 1; e <= 3; ++e) {
      w.add_scalar("val/fashion-mnist-zeroshot-top1", float(0.2 + 0.2 * e + 0.06 * (e == 3)), e, t0 + 200 + e);
      w.add_scalar("val/fashion-mnist-zeroshot-top5", float(0.7 + 0.09 * e), e, t0 + 200 + e);
    }
  w.flush();
}

inline nlohmann::json predictions_json() {
  const auto& cn = classnames();
  nlohmann::json per_class = nlohmann::json::array();
  for (size_t r = 0; r < 4; ++r) {
    int64_t n = 0;
    for (auto v : confusion()[r]) n += v;
    per_class.push_back(double(confusion()[r][r]) / double(n));
  }
  nlohmann::json examples = nlohmann::json::array();
  // Example i: true class i; the first two are predicted right, the last two wrong.
  for (int i = 0; i < 4; ++i) {
    nlohmann::json top = nlohmann::json::array();
    const int first = i < 2 ? i : (i + 1) % 4;
    const int order[3] = {first, first == i ? (i + 2) % 4 : i, (i + 3) % 4};
    const double probs[3] = {0.71, 0.2, 0.05};
    for (int j = 0; j < 3; ++j)
      top.push_back({{"class", order[j]},
                     {"name", cn[size_t(order[j])]},
                     {"caption", "a photo of a " + cn[size_t(order[j])] + "."},
                     {"prob", probs[j]}});
    examples.push_back({{"key", "test_00000" + std::to_string(i)}, {"label", i}, {"png_base64", example_png(i)}, {"top", top}});
  }
  return {{"task", "fashion-mnist"},
          {"data", "data/demo/fmnist/test/{00000..00004}.tar"},
          {"checkpoint", "logs/x/checkpoints/epoch_3.pt"},
          {"classnames", cn},
          {"templates", {"a photo of a {c}.", "a blurry photo of a {c}."}},
          {"samples", 200},
          {"top1", 0.75},
          {"top5", 0.97},
          {"images_per_second", 812.3},
          {"classifier_seconds", 0.4},
          {"confusion", confusion()},
          {"per_class_top1", per_class},
          {"examples", examples}};
}

// The whole run: params, events and predictions.
inline std::string make_run(const std::string& name) {
  const std::string dir = fresh_dir(name);
  write_params(dir);
  write_events(dir);
  fs::write_atomic(fs::join(dir, "zeroshot_fashion-mnist.json"), predictions_json().dump(1));
  return dir;
}

}  // namespace oc::report::test
