// The flags of every command but train and eval (whose flags, shared with these where the
// meaning is the same, are in flags_train.cpp).
#include "core/flags.h"

namespace oc {

namespace {
using T = OptType;

void add_inference_flags(FlagList* l) {
  l->section("inference");
  l->add("json", T::Flag, "", "print the result as JSON (one object; classify: one per image)")
      .on({"eval", "classify", "index build", "index search", "bench train", "bench infer", "bench zeroshot",
           "bench data", "data inspect", "logs compare", "info"});
  l->add("image", T::List, "", "image files").on({"classify"});
  l->add("labels", T::List, "", "candidate texts").on({"classify"});
  l->add("images", T::String, "", "images: a file, a folder (recursive), a pattern (*, {a,b}, {000..999}) or shards "
         "(*.tar, index build)").on({"embed", "index build"});
  l->add("texts", T::String, "", "a UTF-8 file with one text per line").on({"embed"});
  l->add("out", T::String, "", "output .npy or .safetensors file").on({"embed"});
  l->add("out", T::String, "", "index folder").on({"index build"});
  l->add("no-normalize", T::Flag, "", "keep raw (unnormalized) embeddings").on({"embed"});
  l->add("random-init", T::Flag, "", "random weights (seed 0) instead of --pretrained, for benchmarks")
      .on({"index build", "serve"});
  l->add("faiss", T::String, "auto", "auto (exact below 200,000 vectors, HNSW above), flat or hnsw")
      .on({"index build"}).choices({"auto", "flat", "hnsw"});
  l->add("text", T::String, "", "query text").on({"index search"});
  l->add("image", T::String, "", "query image (more like this)").on({"index search"});
  l->add("k", T::Int, "10", "number of results").on({"index search"});
}

void add_bench_flags(FlagList* l) {
  l->section("bench");
  const std::vector<std::string> ti = {"bench train", "bench infer"};
  l->add("steps", T::Int, "5", "measured steps (after the warm-up steps)").on(ti);
  l->add("warmup-steps", T::Int, "1", "untimed steps first").on(ti);
  l->add("text-len", T::String, "caption", "'caption' (8-24 tokens, COCO-like) or a fixed token count").on(ti);
  l->add("classes", T::Int, "1000", "ImageNet classes to use (first N)").on({"bench zeroshot"});
  l->add("templates", T::Int, "80", "OpenAI templates to use (first N)").on({"bench zeroshot"});
  l->add("images", T::Int, "128", "synthetic images to classify").on({"bench zeroshot"});
  l->add("batches", T::Int, "50", "timed batches").on({"bench data"});
  l->add("image-size", T::Int, "224", "RandomResizedCrop output size").on({"bench data"});
  l->add("decode-min-side", T::Int, "0", "let JPEG decoding scale down to this shortest side (0: full size)")
      .on({"bench data"});
}

void add_demo_flags(FlagList* l) {
  l->section("demo");
  const std::vector<std::string> d = {"demo"};
  l->add("minutes", T::Float, "", "time-budget mode: size the run to this many minutes of training by a short timing "
         "(default: the fixed recipe's samples and seed: the same model on every run)").on(d);
  l->add("recipe", T::String, "", "recipe JSON file (default: the built-in configs/recipes/fmnist-demo.json)").on(d);
  l->add("out", T::String, "data/demo", "folder for the shards (out/fmnist) and runs (out/logs)").on(d);
  l->add("max-passes", T::Float, "", "cap on passes over the 60,000 training images (budget mode: a fast machine "
         "stops early)").on(d);
  l->add("samples", T::Int, "0", "train exactly this many samples (0: the recipe's, or as --minutes allows)").on(d).wide();
  l->add("source", T::String, "/usr/share/datasets/fashion-mnist",
         "folder with the Fashion-MNIST IDX files (.gz or not; Debian package dataset-fashion-mnist)")
      .on({"demo", "data fashion-mnist"});
  l->add("limit", T::Int, "0", "import only the first N images of each split (quick checks, tests; 0: all)").on(d).wide();
  l->add("no-report", T::Flag, "", "skip the HTML report").on(d);
}

void add_data_tool_flags(FlagList* l) {
  l->section("data tools");
  l->add("csv", T::String, "", "input CSV/TSV").on({"data split"});
  l->add("test-size", T::Float, "", ">= 1: groups (images) in the test split; below 1: a fraction of them")
      .on({"data split"});
  l->add("group-by", T::String, "", "column kept together (default: --csv-img-key)").on({"data split"});
  l->add("out-prefix", T::String, "", "output prefix (default: the input path without extension)").on({"data split"});
  l->add("from-csv", T::String, "", "CSV with image paths (relative to the CSV's folder) and captions")
      .on({"data shards"});
  l->add("from-folder", T::String, "", "folder of images; captions from <stem>.txt, else the folder name")
      .on({"data shards"});
  l->add("out", T::String, "", "output folder (data fashion-mnist: gets train/ and test/)")
      .on({"data shards", "data fashion-mnist"});
  l->add("shard-size", T::Int, "10000", "samples per shard (data fashion-mnist: 2000 = 30 train shards, enough for "
         "workers x ranks)").on({"data shards", "data fashion-mnist"}).def("data fashion-mnist", "2000").wide();
  l->add("image-size", T::Int, "256", "target size (see --resize-mode; data fashion-mnist: the side in pixels, 28 = "
         "the original pixels)").on({"data shards", "data fashion-mnist", "data download"})
      .def("data fashion-mnist", "28");
  l->add("resize-mode", T::String, "keep_ratio", "how images reach --image-size: keep_ratio, center_crop, border or no")
      .on({"data shards", "data download"}).def("data download", "border");
  l->add("encode-quality", T::Int, "95", "JPEG quality").on({"data shards", "data download"});
  l->add("first-caption-only", T::Flag, "", "keep only the first line (row) of each caption")
      .on({"data shards", "data download"});
  l->add("split", T::String, "both", "train, test or both").on({"data fashion-mnist"});
  l->add("limit", T::Int, "-1", "only the first N images of each split (-1: all)").on({"data fashion-mnist"}).wide();
  l->add("decode", T::Flag, "", "decode every image (finds corrupt images behind good headers)").on({"data inspect"});
}

void add_download_flags(FlagList* l) {
  l->section("data download");
  const std::vector<std::string> d = {"data download"};
  l->add("url-list", T::String, "", "URL list file, or a folder of such files").on(d);
  l->add("input-format", T::String, "txt", "parquet, csv, tsv, jsonl or txt").on(d);
  l->add("url-col", T::String, "url", "URL column").on(d);
  l->add("caption-col", T::String, "", "caption column (none by default)").on(d);
  l->add("output-folder", T::String, "images", "output folder").on(d);
  l->add("output-format", T::String, "webdataset", "webdataset (the only format built)").on(d);
  l->add("processes-count", T::Int, "1", "decode/resize/encode threads").on(d).at_most(kMaxThreads, "the cap on threads");
  l->add("thread-count", T::Int, "256", "transfers per process (processes x threads in flight)").on(d);
  l->add("resize-only-if-bigger", T::Flag, "", "resize only images larger than --image-size").on(d);
  l->add("encode-format", T::String, "jpg", "jpg (the only format built)").on(d);
  l->add("number-sample-per-shard", T::Int, "10000", "samples per shard").on(d).wide();
  l->add("incremental-mode", T::String, "incremental", "incremental (skip finished shards) or overwrite").on(d);
  l->add("timeout", T::Float, "10", "seconds per attempt (total)").on(d);
  l->add("retries", T::Int, "0", "extra attempts per URL").on(d);
  l->add("max-redirects", T::Int, "10", "redirects followed per URL").on(d);
  l->add("max-body-bytes", T::Int, "33554432", "a larger body fails (data download: the sample; serve: the request, "
         "413)").on({"data download", "serve"}).wide();
  l->add("max-image-area", T::Int, "25000000", "decoded pixels above this fail (decompression bombs)").on(d).wide();
  l->add("user-agent-token", T::String, "", "token appended to the User-Agent and matched in X-Robots-Tag").on(d);
  l->add("user-agent", T::String, "", "full User-Agent (default: img2dataset's)").on(d);
  l->add("disallowed-header-directives", T::String, "noai,noimageai,noindex,noimageindex",
         "X-Robots-Tag directives that opt an image out (comma-separated; empty = ignore the header)").on(d);
}

void add_other_flags(FlagList* l) {
  l->section("logs, report, tokenize");
  l->add("tag", T::String, "train/loss", "scalar tag (logs export: 'all' for every tag)")
      .on({"logs export", "logs compare"});
  l->add("format", T::String, "csv", "output format").on({"logs export"}).choices({"csv", "json"});
  l->add("max-rel-diff", T::Float, "0.02", "pass when every common step has |a-b|/|b| <= this").on({"logs compare"});
  l->add("top", T::Int, "10", "rows in the table of worst steps").on({"logs compare"});
  l->add("out", T::String, "", "output file (default RUN_DIR/report.html)").on({"report"});
  l->add("title", T::String, "", "page title (default: the run's name)").on({"report"});
  const std::vector<std::string> tk = {"tokenize"};
  l->add("vocab", T::String, "", "bpe_simple_vocab_16e6.txt.gz (default: $OPENCLIP_VOCAB, then the data folder)").on(tk);
  l->add("hf-tokenizer", T::String, "", "Hugging Face tokenizer instead of CLIP's BPE: bert-base-uncased (the -CLIPA "
         "configs)").on(tk);
  l->add("hf-tokenizer-vocab", T::String, "", "its vocab.txt (default: $OPENCLIP_HF_TOKENIZER_VOCAB, then "
         "<name>-vocab.txt or <name>/vocab.txt in the data folder)").on(tk);
  l->add("strip-sep-token", T::Flag, "", "with --hf-tokenizer: [SEP] ids become 0 (tokenizer_kwargs strip_sep_token)")
      .on(tk);
  l->add("context-length", T::Int, "77", "ids per line (OpenCLIP's context_length; with --model: the config's)").on(tk);
  l->add("input", T::String, "-", "input file, - for stdin").on(tk);
  l->add("decode", T::Flag, "", "ids -> text instead of text -> ids").on(tk);

  l->section("serve");
  const std::vector<std::string> s = {"serve"};
  l->add("index", T::String, "", "index folder (openclip index build) for /v1/search and the page").on(s);
  l->add("host", T::String, "127.0.0.1", "address to bind (0.0.0.0 exposes the server to the network)").on(s);
  l->add("port", T::Int, "8080", "port (0 = any free port, printed at start)").on(s).at_least(0).at_most(65535, "the largest TCP port");
  l->add("max-batch", T::Int, "32", "inputs per forward pass").on(s);
  l->add("max-wait-ms", T::Int, "5", "how long a request waits for others to batch with").on(s);
  l->add("max-queue", T::Int, "256", "requests accepted and not yet answered; the next gets 503 + Retry-After").on(s);
  l->add("http-threads", T::Int, "128", "threads preparing requests (parse, decode, tokenize) for the model")
      .on(s).at_most(kMaxThreads, "the cap on threads");
  l->add("max-connections", T::Int, "1000", "open connections; the next gets 503 and is closed").on(s);
  l->add("header-timeout", T::Int, "10", "seconds for a request's headers, from its first byte (408 after)").on(s);
  l->add("body-timeout", T::Int, "60", "seconds for a request's body, after its headers (408 after)").on(s);
  l->add("drain-seconds", T::Int, "10", "on SIGTERM: how long requests in progress may finish").on(s);
  l->add("max-image-pixels", T::Int, "25000000", "decoded image limit (413 above; decompression bombs)").on(s).wide();
  l->add("max-request-pixels", T::Int, "100000000", "decoded pixels of all images of a request (413 above)").on(s).wide();
  l->add("max-text-bytes", T::Int, "4096", "bytes per text (413 above)").on(s);
  l->add("max-request-text-bytes", T::Int, "262144", "bytes of all texts of a request (413 above)").on(s);
  l->add("max-inputs", T::Int, "256", "texts, images or labels per request (413 above)").on(s);
  l->add("api-key", T::String, "", "required as Authorization: Bearer KEY (visible in ps: prefer --api-key-file)").on(s);
  l->add("api-key-file", T::String, "", "file holding the API key (its first line)").on(s);
  l->add("insecure-no-auth", T::Flag, "", "serve a non-loopback --host without an API key").on(s);
  l->add("allowed-hosts", T::String, "", "Host names served besides IP literals, localhost and --host (comma-separated)")
      .on(s);
  l->add("cors-origin", T::String, "", "origins allowed cross-origin requests (comma-separated; default none)").on(s);
}

}  // namespace

void add_tool_flags(FlagList* l) {
  add_inference_flags(l);
  add_bench_flags(l);
  add_demo_flags(l);
  add_data_tool_flags(l);
  add_download_flags(l);
  add_other_flags(l);
}

}  // namespace oc
