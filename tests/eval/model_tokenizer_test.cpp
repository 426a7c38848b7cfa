// The tokenizer a model config selects reaches every place that tokenizes: the data loader
// (training and retrieval captions), zero-shot prompts and the inference path
// (src/model/inference.h: classify/embed, index, serve). A -CLIPA style config
// (tests/model/configs/tiny-clipa.json: hf_tokenizer_name bert-base-uncased, strip_sep_token,
// context 16, vocabulary 1000) trains and evaluates on WordPiece ids from a tiny vocabulary
// file; CLIP's BPE stays the default.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/check.h"
#include "core/fs.h"
#include "model/model_tokenizer.h"
#include "model/config.h"
#include "eval_fixture.h"
#include "test_util.h"

namespace oc {
namespace {

using test::run;

const std::string kClipa = OPENCLIP_TEST_DIR "/model/configs/tiny-clipa.json";

// id = line number; ids stay below the config's vocab_size (1000).
std::string write_vocab(const std::string& dir) {
  const std::string path = dir + "/bert-vocab.txt";
  fs::write_atomic(path, std::string("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nphoto\nof\ndog\nred\nsquare\n"
                                     "green\ncircle\nblue\nnumber\nthe\nanother\ncaption\n0\n1\n2\n.\n"));
  return path;
}

TEST(ModelTokenizer, ConfigSelectsBpeOrWordPiece) {
  const std::string dir = test::fresh_dir("model_tok_select");
  EXPECT_EQ(model_tokenizer(load_model_config("test-tiny"))->name(), "clip-bpe");
  auto wp = model_tokenizer(load_model_config(kClipa), write_vocab(dir));
  EXPECT_EQ(wp->name(), "bert-base-uncased");
  EXPECT_EQ(wp->context_length(), 16);
  std::vector<int32_t> row(16, -1);
  ASSERT_TRUE(wp->tokenize("A photo of a DOG", row).ok());
  // [CLS] a photo of a dog, then padding: strip_sep_token drops [SEP] (OpenCLIP's HFTokenizer).
  const std::vector<int32_t> want = {2, 5, 6, 7, 5, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(row, want);
}

TEST(ModelTokenizer, MissingWordPieceVocabularyNamesTheTokenizer) {
  const std::string dir = test::fresh_dir("model_tok_missing");
  ::unsetenv("OPENCLIP_HF_TOKENIZER_VOCAB");
  ::setenv("OPENCLIP_DATA_DIR", dir.c_str(), 1);
  try {
    model_tokenizer(load_model_config(kClipa));
    ADD_FAILURE() << "no vocabulary, no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bert-base-uncased"), std::string::npos) << e.what();
  }
}


TEST(ModelTokenizer, ClipaConfigTrainsAndEvaluatesThroughTheCli) {
  const test::EvalFixture f = test::make_eval_fixture("model_tok_cli");  // its test-tiny weights are unused
  const std::string dir = f.dir, csv = dir + "/val.csv";  // 12 captions of 9 images
  const std::string env = "cd '" + dir + "' && OPENCLIP_HF_TOKENIZER_VOCAB='" + write_vocab(dir) + "' ";
  auto t = run(env + test::openclip() + " train --model " + kClipa + " --train-data " + csv +
               " --dataset-type csv --train-num-samples 12 --batch-size 4 --epochs 1 --lr 1e-3 --precision fp32"
               " --workers 1 --name clipa --val-data " + csv + " --val-frequency 1 2>&1");
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string ckpt = dir + "/logs/clipa/checkpoints/epoch_1.pt";
  ASSERT_TRUE(fs::exists(ckpt)) << t.out;
  auto e = run(env + test::openclip() + " eval --model " + kClipa + " --pretrained " + ckpt + " --imagenet-val " + dir +
               "/folder --zeroshot-templates " + dir + "/templates.txt --val-data " + csv + " --batch-size 4 --json");
  ASSERT_EQ(e.status, 0) << e.out;
  EXPECT_NE(e.out.find("imagenet-zeroshot-val-top1"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("image_to_text_R@1"), std::string::npos) << e.out;
  auto c = run(env + test::openclip() + " classify --model " + kClipa + " --pretrained " + ckpt + " --image " + dir +
               "/folder/redsquare/0.png --labels 'a red square' 'a dog' --json");
  ASSERT_EQ(c.status, 0) << c.out;
  // Without the vocabulary the same training stops before it starts, naming what is missing.
  auto m = run("cd '" + dir + "' && OPENCLIP_DATA_DIR='" + dir + "/none' " + test::openclip() + " train --model " + kClipa +
               " --train-data " + csv + " --dataset-type csv --train-num-samples 12 --batch-size 4 --epochs 1 --name nov 2>&1");
  EXPECT_NE(m.status, 0);
  EXPECT_NE(m.out.find("bert-base-uncased"), std::string::npos) << m.out;
}

}  // namespace
}  // namespace oc
