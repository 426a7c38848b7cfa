// TrainArgs as the run shows it: --precision's spelling in OpenCLIP's run name and params.txt
// (the mode is an enum from parsing on), and the dataset type's name.
#include <gtest/gtest.h>

#include "core/flags.h"
#include "train/args.h"

namespace oc {
namespace {

TEST(TrainArgs, RunNameAndParamsShowThePrecisionAsSpelled) {
  TrainArgs a = train_defaults("test-tiny");
  EXPECT_EQ(a.precision, Precision::AmpBf16);  // train's default --precision amp
  EXPECT_EQ(precision_label(a), "amp");
  const std::string name = default_run_name(a, 0);
  EXPECT_EQ(name.substr(name.size() - 6), "-p_amp") << name;
  EXPECT_EQ(train_settings(a).at("precision"), "amp");
  a.precision_spelled = "amp_bfloat16";
  EXPECT_EQ(precision_label(a), "amp_bfloat16");
  // A program that sets only the mode: the spelling of another mode is not shown.
  a.precision = Precision::PureBf16;
  EXPECT_EQ(precision_label(a), "pure_bf16");
  a.precision_spelled.clear();
  EXPECT_EQ(train_settings(a).at("precision"), "pure_bf16");
}

// --allow-tf32 reaches the field params.txt shows (the CUDA backend's GEMMs read it through
// Backend::set_allow_tf32; the host backends have no TF32).
TEST(TrainArgs, AllowTf32IsAFieldAndAParam) {
  TrainArgs a = train_defaults("test-tiny");
  EXPECT_FALSE(a.allow_tf32);
  EXPECT_EQ(train_settings(a).at("allow_tf32"), "False");
  Options o = options_for("train");
  o.parse({"--model", "test-tiny", "--allow-tf32"});
  a = resolve_train_args(o);
  EXPECT_TRUE(a.allow_tf32);
  EXPECT_EQ(train_settings(a).at("allow_tf32"), "True");
}

// --image-mean/--image-std: each value in the bounds a hub preprocess_cfg must meet
// (model_source.h); std 0 made every loss NaN and the run went on (issue 42 item 8).
TEST(TrainArgs, ImageMeanAndStdAreRangeChecked) {
  auto error_of = [](std::vector<std::string> flags) -> std::string {
    Options o = options_for("train");
    flags.insert(flags.begin(), {"--model", "test-tiny"});
    try {
      o.parse(flags);
      (void)resolve_train_args(o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of({"--image-std", "0.5", "0.5", "0.5"}), "");
  EXPECT_EQ(error_of({"--image-mean", "0.4", "--image-std", "0.3"}), "");
  EXPECT_NE(error_of({"--image-std", "0", "0", "0"}).find("--image-std value 1 is 0; it must be from 0.001"),
            std::string::npos);
  EXPECT_NE(error_of({"--image-std", "0.5", "-0.5", "0.5"}).find("--image-std value 2 is -0.5"), std::string::npos);
  EXPECT_NE(error_of({"--image-std", "1e-45"}).find("--image-std value 1"), std::string::npos);
  EXPECT_NE(
      error_of({"--image-mean", "0.5", "0.5", "3e38"}).find("--image-mean value 3 is 3e+38; it must be within +-1000"),
      std::string::npos);
  EXPECT_NE(error_of({"--image-mean", "nan"}).find("--image-mean"), std::string::npos);  // the parser or the range
  EXPECT_NE(error_of({"--image-std", "inf"}).find("--image-std"), std::string::npos);
  EXPECT_NE(error_of({"--image-std", "0.5", "0.5"}).find("--image-std takes 1 or 3 values, got 2"), std::string::npos);
}

TEST(TrainArgs, ParamsShowTheDatasetTypeByName) {
  TrainArgs a = train_defaults("test-tiny");
  EXPECT_EQ(train_settings(a).at("dataset_type"), "auto");
  a.dataset_type = data::DatasetType::SyntheticLearnable;
  EXPECT_EQ(train_settings(a).at("dataset_type"), "synthetic-learnable");
}

}  // namespace
}  // namespace oc
