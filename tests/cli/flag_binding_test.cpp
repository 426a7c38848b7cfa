// Flags bound to typed fields (core/flags.h): every command's flags fill its settings struct
// (a flag of a command with no field to write is a bug the parse reports), values arrive in
// the field's type, enums through their spelling tables, std::optional fields only when
// given, and a binding whose field type does not fit the flag is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/args.h"
#include "core/check.h"
#include "core/flags.h"
#include "error_of.h"
#include "train/args.h"

namespace oc {
namespace {

template <class S> S parsed(const std::string& command, const std::vector<std::string>& args) {
  Options o = options_for(command);
  o.parse(args);
  S s;
  fill_flags(o, &s);
  return s;
}

TEST(FlagBinding, EveryCommandFillsItsSettings) {
  std::vector<std::string> covered;
  auto fills = [&]<class S>(const std::string& command, S*) {
    covered.push_back(command);
    EXPECT_EQ(test::error_of([&] { parsed<S>(command, {}); }), "") << command;
  };
  fills("train", (TrainArgs*)nullptr);
  fills("eval", (cli::EvalCommandArgs*)nullptr);
  fills("classify", (cli::ClassifyArgs*)nullptr);
  fills("embed", (cli::EmbedArgs*)nullptr);
  fills("index build", (cli::IndexBuildArgs*)nullptr);
  fills("index search", (cli::IndexSearchArgs*)nullptr);
  for (const char* c : {"bench train", "bench infer", "bench zeroshot"}) fills(c, (cli::BenchArgs*)nullptr);
  fills("bench data", (cli::BenchDataArgs*)nullptr);
  for (const char* c : {"data split", "data shards", "data fashion-mnist", "data inspect"})
    fills(c, (cli::DataToolArgs*)nullptr);
  fills("data download", (cli::DownloadArgs*)nullptr);
  for (const char* c : {"logs export", "logs compare", "report", "info"}) fills(c, (cli::RunToolArgs*)nullptr);
  fills("tokenize", (cli::TokenizeArgs*)nullptr);
  fills("models", (cli::ModelsArgs*)nullptr);
  fills("serve", (cli::ServeArgs*)nullptr);
  fills("demo", (cli::DemoArgs*)nullptr);
  fills("quantize", (cli::QuantizeArgs*)nullptr);
  for (const CommandInfo& c : command_infos()) {
    if (c.name == "convert") continue;  // no flags
    EXPECT_NE(std::find(covered.begin(), covered.end(), c.name), covered.end()) << c.name << ": no settings test";
  }
}

TEST(FlagBinding, ValuesArriveInTheFieldsType) {
  auto s = parsed<cli::ServeArgs>("serve", {"--port", "9000", "--header-timeout", "3", "--max-body-bytes", "1000",
                                            "--allowed-hosts", "a,b", "--random-init"});
  EXPECT_EQ(s.port, 9000);
  EXPECT_EQ(s.header_timeout_s, 3.0);
  EXPECT_EQ(s.max_body, 1000u);
  EXPECT_EQ(s.allowed_hosts_list, "a,b");
  EXPECT_TRUE(s.random_init);
  EXPECT_EQ(s.max_queue, 256);       // the registry's default
  EXPECT_EQ(s.precision, Precision::Fp32);  // serve's own default
  auto t = parsed<TrainArgs>("train", {"--image-mean", "0.5", "--lr", "1e-3", "--train-num-samples", "5000000000"});
  EXPECT_EQ(t.image_mean, std::vector<double>{0.5});
  EXPECT_EQ(t.lr, 1e-3);
  EXPECT_EQ(t.train_num_samples, 5000000000);  // a wide Int: int64_t
  EXPECT_EQ(t.workers, 4);                     // train's default (the flag's is 2)
  EXPECT_FALSE(t.beta1.has_value());           // None: by model (adamw_cfg)
  EXPECT_NE(test::error_of([] { parsed<TrainArgs>("train", {"--image-mean", "x"}); }).find("--image-mean"),
            std::string::npos);
}

TEST(FlagBinding, EnumsThroughTheirSpellingTables) {
  auto b = parsed<cli::BenchArgs>("bench train", {"--precision", "amp"});
  EXPECT_EQ(b.precision, Precision::AmpBf16);
  EXPECT_EQ(b.precision_spelled, "amp");
  EXPECT_EQ(parsed<cli::BenchArgs>("bench infer", {}).precision, Precision::AmpBf16);  // default amp_bf16
  EXPECT_EQ(parsed<cli::BenchArgs>("bench infer", {"--precision", "pure_bf16"}).precision, Precision::PureBf16);
  EXPECT_EQ(parsed<cli::BenchDataArgs>("bench data", {"--dataset-type", "csv"}).type, data::DatasetType::Csv);
  auto t = parsed<TrainArgs>("train", {"--precision", "amp_bfloat16", "--dataset-type", "synthetic"});
  EXPECT_EQ(t.precision, Precision::AmpBf16);
  EXPECT_EQ(t.precision_spelled, "amp_bfloat16");  // OpenCLIP's run name and params.txt show it
  EXPECT_EQ(t.dataset_type, data::DatasetType::Synthetic);
  t = parsed<TrainArgs>("train", {});
  EXPECT_EQ(t.precision, Precision::AmpBf16);  // train's default: amp
  EXPECT_EQ(t.dataset_type, data::DatasetType::Auto);
}

TEST(FlagBinding, OptionalFieldsOnlyWhenGiven) {
  auto t = parsed<cli::TokenizeArgs>("tokenize", {});
  EXPECT_EQ(t.context_length, 77);
  EXPECT_FALSE(t.context_length_given.has_value());
  t = parsed<cli::TokenizeArgs>("tokenize", {"--context-length", "77"});
  EXPECT_EQ(t.context_length_given.value_or(-1), 77);
  auto q = parsed<cli::IndexSearchArgs>("index search", {"--text", ""});
  ASSERT_TRUE(q.text.has_value());  // given, empty: the command says so
  EXPECT_EQ(*q.text, "");
  EXPECT_FALSE(q.image.has_value());
  // The demo: its recipe file supplies what a flag does not give.
  auto d = parsed<cli::DemoArgs>("demo", {"--lr", "0.002", "--precision", "amp"});
  EXPECT_EQ(d.lr.value_or(-1), 0.002);
  EXPECT_EQ(d.precision.value_or(""), "amp");
  EXPECT_FALSE(d.batch_size || d.epochs || d.seed || d.warmup || d.wd || d.max_passes || d.minutes || d.model);
  EXPECT_EQ(d.workers, 1);  // the demo's own default
}

TEST(FlagBinding, AFieldThatDoesNotFitTheFlagIsRefused) {
  struct S {
    int narrow = 0;
    int64_t wide = 0;
    double x = 0;
  };
  FlagList l;
  EXPECT_NO_THROW(l.add("a", OptType::Int, "1", "").bind(&S::narrow));
  EXPECT_THROW(l.add("b", OptType::Int, "1", "").wide().bind(&S::narrow), Error);
  EXPECT_THROW(l.add("c", OptType::Int, "1", "").bind(&S::wide), Error);
  EXPECT_THROW(l.add("d", OptType::Flag, "", "").bind(&S::x), Error);
  EXPECT_THROW(l.add("e", OptType::Float, "1", "").bind(&S::narrow), Error);
}

}  // namespace
}  // namespace oc
