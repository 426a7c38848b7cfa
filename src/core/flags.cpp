#include "core/flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "core/check.h"

namespace oc {

namespace flag_detail {

std::string joined(const FlagText& t) {
  std::string r;
  for (size_t i = 0; i < t.values.size(); ++i) r += (i ? " " : "") + t.values[i];
  return r;
}

int64_t as_int(const FlagText& t) { return std::strtoll(t.values.at(0).c_str(), nullptr, 10); }

double as_double(const FlagText& t) { return std::strtod(t.values.at(0).c_str(), nullptr); }

std::vector<double> as_doubles(const FlagText& t) {
  std::vector<double> out;
  for (auto& v : t.values) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(d))
      OC_USER_ERROR("openclip {}: --{} takes finite numbers, got '{}'", t.command, t.spec.name, v);
    out.push_back(d);
  }
  return out;
}

void not_in_table(const FlagText& t) {
  OC_USER_ERROR("openclip {}: --{} {}: choose one of {}", t.command, t.spec.name, joined(t), fmt::join(t.spec.choices, ", "));
}

}  // namespace flag_detail

bool Flag::used_by(const std::string& command) const {
  return std::find(commands.begin(), commands.end(), command) != commands.end();
}

Flag& FlagList::add(std::string name, OptType type, std::string default_value, std::string help) {
  Flag f;
  f.spec.name = std::move(name);
  f.spec.type = type;
  f.spec.default_value = std::move(default_value);
  f.spec.help = std::move(help);
  f.section = section_;
  flags_.push_back(std::move(f));
  return flags_.back();
}

const std::vector<CommandInfo>& command_infos() {
  static const std::vector<CommandInfo> c = {
      {"train", "Train or fine-tune a CLIP model with OpenCLIP's flags (python -m open_clip_train.main).", ""},
      {"eval", "Evaluate a model: zero-shot top-1/top-5 and retrieval recall.", ""},
      {"classify", "Label probabilities for images: softmax(100 * image . text).", ""},
      {"embed", "Write image or text embeddings to a .npy or .safetensors file.", ""},
      {"index build", "Embed images into an index folder (appends when the folder holds an index).", ""},
      {"index search", "The nearest images of an index to a text or an image.", "INDEX_DIR"},
      {"quantize",
       "Static int8 activation scales for --precision int8: runs the fp32 model over calibration images and "
       "captions, records max |x| at the input of every int8 GEMM, and writes the scales as safetensors beside the "
       "weights (<weights stem>.int8.safetensors), where every --precision int8 command finds them.",
       ""},
      {"bench train", "Training-step throughput of a model on synthetic data.", ""},
      {"bench infer", "encode_image / encode_text throughput on synthetic data.", ""},
      {"bench zeroshot", "Zero-shot classifier build time and evaluation images/s.", ""},
      {"bench data", "Data loader throughput: shards -> decoded, augmented, tokenized batches (training mode).",
       "PATTERN"},
      {"demo",
       "The main job: Fashion-MNIST end to end. Imports the dataset into webdataset shards (once), trains a small "
       "CLIP from scratch with a fixed recipe (the same model on every run) or sized to --minutes, evaluates "
       "zero-shot on the 10,000 test images with prompts not used in training, writes the HTML report, and prints "
       "one JSON line. The recipe is one named file, configs/recipes/fmnist-demo-v3.json (built in; --recipe names "
       "an earlier built-in one, fmnist-demo-v2 or fmnist-demo-v1, or reads a file); "
       "the flags below that it sets (model, batch size, lr, wd, warm-up, epochs, precision, seed, max passes) "
       "override it when given.",
       ""},
      {"data split", "Split a CSV into <prefix>_train and <prefix>_test with no group (default: no image) in both.",
       ""},
      {"data shards",
       "Local images to webdataset shards (img2dataset layout: {00000..}.tar with 9-digit keys, .jpg .txt .json, "
       "NNNNN_stats.json, sizes.json). Rerunning skips finished shards.",
       ""},
      {"data fashion-mnist",
       "Fashion-MNIST to webdataset shards: PNG images (lossless), varied captions, .cls labels, sizes.json, and "
       "<out>/fashion_mnist_zeroshot.json (class names + evaluation templates).",
       ""},
      {"data inspect",
       "Samples, samples OpenCLIP would skip (by reason), extensions, image sizes, caption lengths and damaged "
       "shards of a webdataset pattern.",
       "PATTERN"},
      {"data download",
       "Download a URL list into webdataset shards as img2dataset does ({00000..}.tar with .jpg .txt .json, "
       "NNNNN_stats.json, sizes.json). Failures are counted per sample, never fatal. Rerunning resumes.",
       ""},
      {"logs export", "Print a run's TensorBoard scalars.", "RUN_DIR"},
      {"logs compare", "Compare a scalar of run A against reference run B step by step.", "RUN_A RUN_B"},
      {"report",
       "Write a self-contained HTML report of a run: settings, training curves, zero-shot accuracy per epoch, and "
       "from RUN_DIR/zeroshot_<task>.json per-class accuracy, the confusion matrix and example predictions.",
       "RUN_DIR"},
      {"tokenize",
       "Tokenize UTF-8 text lines as OpenCLIP's tokenizer does: one line of context-length space-separated ids per "
       "input line (CLIP BPE: start, text, end, zero padding; bert-base-uncased: [CLS], text, [SEP], [PAD] "
       "padding). With --decode, read such id lines and print the text (special tokens and padding dropped, "
       "trailing spaces stripped, line breaks shown as spaces).",
       ""},
      {"serve", "Serve embeddings, zero-shot classification and index search over HTTP.", ""},
      {"info", "Describe this machine and its devices.", ""},
      {"models",
       "List the model configs this build accepts, by image tower family; with --check, validate one (a built-in "
       "name or a JSON file) without building the model: one line and exit 0, or the refusing key and exit 1.",
       ""},
      {"convert", "Convert model weights between .pt/.pth/.bin (torch.save) and .safetensors.", "IN OUT"},
  };
  return c;
}

namespace {
std::vector<std::pair<int, FlagTable>>& flag_tables() {
  static std::vector<std::pair<int, FlagTable>> t;  // a function's static: safe from other objects' static init
  return t;
}
}  // namespace

void register_flag_table(int order, FlagTable add) { flag_tables().emplace_back(order, add); }

const std::deque<Flag>& all_flags() {
  static const std::deque<Flag> flags = [] {
    auto tables = flag_tables();
    OC_CHECK(!tables.empty(), "no flag table is registered: link the objects of src/cli/flags_*.cpp");
    std::sort(tables.begin(), tables.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    FlagList l;
    for (const auto& [order, add] : tables) add(&l);
    const auto& f = l.flags();
    for (size_t i = 0; i < f.size(); ++i) {
      OC_CHECK(!f[i].commands.empty(), "flag --{} is used by no command", f[i].spec.name);
      for (auto& c : f[i].commands) {
        bool known = false;
        for (auto& ci : command_infos()) known |= ci.name == c;
        OC_CHECK(known, "flag --{}: unknown command '{}'", f[i].spec.name, c);
      }
      for (auto& [c, v] : f[i].default_in) OC_CHECK(f[i].used_by(c), "flag --{}: default for '{}' that does not take it", f[i].spec.name, c);
      for (size_t j = i + 1; j < f.size(); ++j)
        if (f[i].spec.name == f[j].spec.name)
          for (auto& c : f[i].commands)
            OC_CHECK(!f[j].used_by(c), "flag --{} declared twice for '{}'", f[i].spec.name, c);
    }
    return f;
  }();
  return flags;
}

namespace {

// Cross-flag rules: one place for "--a needs --b" and "--a excludes --b". Each runs after a
// command that takes all of its flags has parsed.
struct Rule {
  std::vector<std::string> flags;  // the rule applies to the commands that take all of these
  std::function<void(const Options&)> check;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      {{"train-data-upsampling-factors", "dataset-resampled", "epochs"},  // train only: eval ignores them
       [](const Options& o) {
         if (o.has("train-data-upsampling-factors") && !o.flag("dataset-resampled"))
           OC_USER_ERROR("--train-data-upsampling-factors is only supported with --dataset-resampled");
       }},
      {{"siglip", "local-loss", "gather-with-grad", "global-batch-gradient"},
       [](const Options& o) {
         if (o.flag("siglip") && (o.flag("local-loss") || o.flag("gather-with-grad") || o.flag("global-batch-gradient")))
           OC_USER_ERROR("--siglip exchanges text features between neighbouring ranks; --local-loss, --gather-with-grad "
                         "and --global-batch-gradient belong to the contrastive loss (OpenCLIP ignores them with "
                         "--siglip): remove them");
         if (o.flag("global-batch-gradient") && (o.flag("local-loss") || o.flag("gather-with-grad")))
           OC_USER_ERROR("--global-batch-gradient changes the default distributed loss only, not --local-loss or "
                         "--gather-with-grad (--gather-with-grad already gives the global batch's gradient)");
       }},
      {{"lr-scheduler", "epochs-cooldown"},
       [](const Options& o) {
         if (o.get("lr-scheduler") == "const-cooldown" && !(o.has("epochs-cooldown") && o.get_int("epochs-cooldown") > 0))
           OC_USER_ERROR("--lr-scheduler const-cooldown needs --epochs-cooldown");
       }},
  };
  return r;
}

}  // namespace

Options options_for(const std::string& command) {
  const CommandInfo* info = nullptr;
  for (auto& c : command_infos())
    if (c.name == command) info = &c;
  OC_CHECK(info, "no command '{}' in the flag registry", command);
  std::vector<OptionSpec> specs;
  for (const Flag& f : all_flags()) {
    if (!f.used_by(command)) continue;
    OptionSpec s = f.spec;
    if (auto it = f.default_in.find(command); it != f.default_in.end()) s.default_value = it->second;
    specs.push_back(std::move(s));
  }
  Options o(info->name, info->summary, specs, info->positional);
  for (const Rule& r : rules()) {
    bool all = true;
    for (auto& name : r.flags)
      all &= std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == name; });
    if (all) o.add_rule(r.check);
  }
  return o;
}

void print_help(const Options& o) { std::printf("%s", o.help().c_str()); }

void fill_flags(const Options& o, const std::vector<std::pair<std::type_index, void*>>& targets) {
  for (const Flag& f : all_flags()) {
    if (!f.used_by(o.command())) continue;
    const std::vector<std::string> values = o.text(f.spec.name);
    bool bound = false;
    for (const FlagBinding& b : f.bindings)
      for (const auto& [type, settings] : targets)
        if (b.target == type) {
          bound = true;
          if (!values.empty()) b.write(settings, FlagText{o.command(), f.spec, values, o.given(f.spec.name)});
        }
    // Not read: the no-op flags, the ones not built, and the ones with a single accepted value.
    OC_CHECK(bound || f.status == "no-op" || !f.spec.not_built.empty() || f.spec.choices.size() == 1,
             "flag --{} of '{}' writes no field of the command's settings (bind it in the registry)", f.spec.name,
             o.command());
  }
}

std::string cli_markdown() {
  std::string out =
      "# openclip command-line reference\n\n"
      "Generated from the flag registry (src/cli/flags_*.cpp) by `cmake --build build --target cli-docs`\n"
      "(`openclip help --markdown`); do not edit by hand. `openclip help <command>` and\n"
      "`openclip <command> --help` print the same. Flags may also be spelled with underscores\n"
      "(`--train_data`), as OpenCLIP's argparse accepts.\n\n";
  for (auto& c : command_infos()) out += fmt::format("- [openclip {}](#openclip-{})\n", c.name, [&] {
    std::string a = c.name;
    std::replace(a.begin(), a.end(), ' ', '-');
    return a;
  }());
  out += "\n";
  for (auto& c : command_infos()) out += options_for(c.name).markdown();
  return out;
}

std::string readme_flag_table() {
  std::string out = "| flag | meaning | default | from | status |\n|---|---|---|---|---|\n";
  std::string section;
  for (const Flag& f : all_flags()) {
    if (!f.used_by("train")) continue;
    if (f.section != section) {
      section = f.section;
      out += fmt::format("| **{}** | | | | |\n", section);
    }
    std::string meaning = f.spec.help;
    if (!f.spec.choices.empty()) meaning += fmt::format(" (one of: {})", fmt::join(f.spec.choices, ", "));
    std::string def = f.spec.default_value == "\t" ? "TAB" : f.spec.default_value;
    if (auto it = f.default_in.find("train"); it != f.default_in.end()) def = it->second;
    const std::string status = !f.spec.not_built.empty() ? "refused: " + f.spec.not_built
                               : f.status.empty()        ? "yes"
                                                         : f.status;
    out += fmt::format("| `--{}` | {} | {} | {} | {} |\n", f.spec.name, markdown_cell(meaning),
                       def.empty() ? "" : "`" + def + "`", f.origin, markdown_cell(status));
  }
  return out;
}

}  // namespace oc
