// The tiny model's files with n PNG images under img/ and img/sub/, and the `index build`
// command line over them (tests/index).
#pragma once
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "core/fs.h"
#include "core/rng.h"
#include "test_util.h"
#include "tiny_model_files.h"

namespace oc::test {

// images: sorted, as the index lists a folder.
inline TinyModelFiles make_fixture(const std::string& name, int n = 12) {
  TinyModelFiles f = make_tiny_model_files(name);
  Rng rng(3);
  fs::make_dirs(f.dir + "/img/sub");
  for (int i = 0; i < n; ++i) {
    const std::string p = f.dir + (i % 3 ? "/img/" : "/img/sub/") + "im" + std::to_string(10 + i) + ".png";
    fs::write_atomic(p, random_png(rng, 20 + i, 24));
    f.images.push_back(p);
  }
  std::sort(f.images.begin(), f.images.end());
  return f;
}

inline std::string build_cmd(const TinyModelFiles& f, const std::string& images, const std::string& out,
                             const std::string& w = "") {
  return openclip() + " index build --model test-tiny --pretrained " + (w.empty() ? f.weights : w) + " --images '" +
         images + "' --out " + out + " --json";
}

inline nlohmann::json last_json_line(const std::string& out) {
  auto pos = out.rfind("\n{");
  return nlohmann::json::parse(pos == std::string::npos ? out : out.substr(pos + 1));
}

}  // namespace oc::test
