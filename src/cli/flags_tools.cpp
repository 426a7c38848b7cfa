// The flags of every command but train and eval (whose flags, shared with these where the
// meaning is the same, are in flags_train.cpp).
#include "cli/args.h"
#include "core/flags.h"

namespace oc {

namespace {
using T = OptType;

void add_inference_flags(FlagList* l) {
  l->section("inference");
  l->add("json", T::Flag, "", "print the result as JSON (one object; classify: one per image)")
      .on({"eval", "classify", "index build", "index search", "bench train", "bench infer", "bench zeroshot",
           "bench data", "data inspect", "logs compare", "info"})
      .bind(&cli::EvalCommandArgs::json).bind(&cli::ClassifyArgs::json).bind(&cli::IndexBuildArgs::json)
      .bind(&cli::IndexSearchArgs::json).bind(&cli::BenchArgs::json)
      .bind(&cli::BenchDataArgs::json).bind(&cli::DataToolArgs::json).bind(&cli::RunToolArgs::json);
  l->add("image", T::List, "", "image files").on({"classify"}).bind(&cli::ClassifyArgs::images);
  l->add("labels", T::List, "", "candidate texts").on({"classify"}).bind(&cli::ClassifyArgs::labels);
  l->add("images", T::String, "", "images: a file, a folder (recursive), a pattern (*, {a,b}, {000..999}) or shards "
         "(*.tar, index build)").on({"embed", "index build"})
      .bind(&cli::EmbedArgs::images).bind(&index::BuildOptions::images);
  l->add("texts", T::String, "", "a UTF-8 file with one text per line").on({"embed"}).bind(&cli::EmbedArgs::texts);
  l->add("out", T::String, "", "output .npy or .safetensors file").on({"embed"}).bind(&cli::EmbedArgs::out);
  l->add("out", T::String, "", "index folder").on({"index build"}).bind(&index::BuildOptions::out);
  l->add("no-normalize", T::Flag, "", "keep raw (unnormalized) embeddings").on({"embed"})
      .bind(&cli::EmbedArgs::no_normalize);
  l->add("random-init", T::Flag, "", "random weights (seed 0) instead of --pretrained, for benchmarks")
      .on({"index build", "serve"}).bind(&cli::IndexBuildArgs::random_init).bind(&cli::ServeArgs::random_init);
  l->add("faiss", T::String, "auto", "auto (exact below 200,000 vectors, HNSW above), flat or hnsw")
      .on({"index build"}).choices({"auto", "flat", "hnsw"}).bind(&index::BuildOptions::faiss);
  l->add("text", T::String, "", "query text").on({"index search"}).bind(&cli::IndexSearchArgs::text);
  l->add("image", T::String, "", "query image (more like this)").on({"index search"})
      .bind(&cli::IndexSearchArgs::image);
  l->add("k", T::Int, "10", "number of results").on({"index search"}).bind(&cli::IndexSearchArgs::k);
}

void add_quantize_flags(FlagList* l) {
  l->section("quantize");
  const std::vector<std::string> q = {"quantize"};
  l->add("calib", T::String, "", "folder of calibration images (recursive; .jpg .jpeg .png .webp; unreadable ones "
         "are counted and skipped)").on(q).bind(&cli::QuantizeArgs::calib);
  l->add("calib-captions", T::String, "", "calibration texts, one per line (default: OpenCLIP's 80 ImageNet "
         "zero-shot templates over 10 of its class names, 800 captions)").on(q)
      .bind(&cli::QuantizeArgs::calib_captions);
  l->add("calib-images", T::Int, "512", "use at most this many images of --calib (the first in sorted order; 0: "
         "all)").on(q).at_least(0).bind(&cli::QuantizeArgs::calib_images);
  l->add("calib-percentile", T::Float, "100", "the range recorded per GEMM input: 100 = max |x| (the default: "
         "as close to fp32 as 99.99 or closer where measured, docs/BENCHMARKS.md); below 100, that percentile of "
         "|x|, larger values clipping").on(q).bind(&cli::QuantizeArgs::calib_percentile);
  l->add("out", T::String, "", "the scales file, also -o (default: <weights stem>.int8.safetensors beside the "
         "weights, where --precision int8 finds it)").on(q).bind(&cli::QuantizeArgs::out);
  l->add("int8-scales", T::String, "", "static int8 activation scales from `openclip quantize` (default: "
         "<weights stem>.int8.safetensors beside the weights when it exists; without one, int8 quantizes "
         "activations per row on each call)")
      .on({"eval", "classify", "embed", "index build", "bench infer", "serve"}).ours()
      .bind(&openclip::LoadOptions::int8_scales).bind(&EvalArgs::int8_scales)
      .bind(&index::BuildOptions::int8_scales).bind(&serve::ServeOptions::int8_scales)
      .bind(&cli::BenchArgs::int8_scales);
}

void add_bench_flags(FlagList* l) {
  l->section("bench");
  const std::vector<std::string> ti = {"bench train", "bench infer"};
  l->add("steps", T::Int, "5", "measured steps (after the warm-up steps)").on(ti).bind(&cli::BenchArgs::steps);
  l->add("warmup-steps", T::Int, "1", "untimed steps first").on(ti).bind(&cli::BenchArgs::warmup_steps);
  l->add("text-len", T::String, "caption", "'caption' (8-24 tokens, COCO-like) or a fixed token count").on(ti)
      .bind(&cli::BenchArgs::text_len);
  l->add("tower", T::String, "both", "which encoders to time: image, text or both").on({"bench infer"})
      .bind(&cli::BenchArgs::tower);
  l->add("classes", T::Int, "1000", "ImageNet classes to use (first N)").on({"bench zeroshot"})
      .bind(&cli::BenchArgs::classes);
  l->add("templates", T::Int, "80", "OpenAI templates to use (first N)").on({"bench zeroshot"})
      .bind(&cli::BenchArgs::templates);
  l->add("images", T::Int, "128", "synthetic images to classify").on({"bench zeroshot"}).bind(&cli::BenchArgs::images);
  l->add("batches", T::Int, "50", "timed batches").on({"bench data"}).bind(&cli::BenchDataArgs::batches);
  l->add("image-size", T::Int, "224", "RandomResizedCrop output size").on({"bench data"})
      .bind([](data::DataConfig& c, int v) { c.preprocess.size = v; });
  l->add("decode-min-side", T::Int, "0", "let JPEG decoding scale down to this shortest side (0: full size)")
      .on({"bench data"}).bind(&data::DataConfig::decode_min_side);
}

void add_demo_flags(FlagList* l) {
  l->section("demo");
  const std::vector<std::string> d = {"demo"};
  l->add("minutes", T::Float, "", "time-budget mode: size the run to this many minutes of training by a short timing "
         "(default: the fixed recipe's samples and seed: the same model on every run)").on(d)
      .bind(&cli::DemoArgs::minutes);
  l->add("recipe", T::String, "",
         "a built-in recipe's name (fmnist-demo-v3, fmnist-demo-v2, fmnist-demo-v1) or a recipe JSON file (default: "
         "the built-in fmnist-demo-v3, configs/recipes/fmnist-demo-v3.json)")
      .on(d)
      .bind(&cli::DemoArgs::recipe);
  l->add("out", T::String, "data/demo", "folder for the shards (out/fmnist) and runs (out/logs)").on(d)
      .bind(&cli::DemoArgs::out);
  l->add("max-passes", T::Float, "", "cap on passes over the 60,000 training images (budget mode: a fast machine "
         "stops early)").on(d).bind(&cli::DemoArgs::max_passes);
  l->add("samples", T::Int, "0", "train exactly this many samples (0: the recipe's, or as --minutes allows)").on(d).wide()
      .bind(&cli::DemoArgs::samples);
  l->add("source", T::String, "/usr/share/datasets/fashion-mnist",
         "folder with the Fashion-MNIST IDX files (.gz or not; Debian package dataset-fashion-mnist)")
      .on({"demo", "data fashion-mnist"}).bind(&cli::DataToolArgs::source).bind(&cli::DemoArgs::source);
  l->add("limit", T::Int, "0", "import only the first N images of each split (quick checks, tests; 0: all)").on(d).wide()
      .bind(&cli::DemoArgs::limit);
  l->add("no-report", T::Flag, "", "skip the HTML report").on(d).bind(&cli::DemoArgs::no_report);
}

void add_data_tool_flags(FlagList* l) {
  l->section("data tools");
  l->add("csv", T::String, "", "input CSV/TSV").on({"data split"}).bind(&cli::DataToolArgs::csv);
  l->add("test-size", T::Float, "", ">= 1: groups (images) in the test split; below 1: a fraction of them")
      .on({"data split"}).bind(&cli::DataToolArgs::test_size);
  l->add("group-by", T::String, "", "column kept together (default: --csv-img-key)").on({"data split"})
      .bind(&cli::DataToolArgs::group_by);
  l->add("out-prefix", T::String, "", "output prefix (default: the input path without extension)").on({"data split"})
      .bind(&cli::DataToolArgs::out_prefix);
  l->add("from-csv", T::String, "", "CSV with image paths (relative to the CSV's folder) and captions")
      .on({"data shards"}).bind(&cli::DataToolArgs::from_csv);
  l->add("from-folder", T::String, "", "folder of images; captions from <stem>.txt, else the folder name")
      .on({"data shards"}).bind(&cli::DataToolArgs::from_folder);
  l->add("out", T::String, "", "output folder (data fashion-mnist: gets train/ and test/)")
      .on({"data shards", "data fashion-mnist"}).bind(&cli::DataToolArgs::out);
  l->add("shard-size", T::Int, "10000", "samples per shard (data fashion-mnist: 2000 = 30 train shards, enough for "
         "workers x ranks)").on({"data shards", "data fashion-mnist"}).def("data fashion-mnist", "2000").wide()
      .bind(&cli::DataToolArgs::shard_size);
  l->add("image-size", T::Int, "256", "target size (see --resize-mode; data fashion-mnist: the side in pixels, 28 = "
         "the original pixels)").on({"data shards", "data fashion-mnist", "data download"})
      .def("data fashion-mnist", "28")
      .bind(&cli::DataToolArgs::image_size).bind(&download::DownloadOptions::image_size);
  l->add("resize-mode", T::String, "keep_ratio", "how images reach --image-size: keep_ratio, center_crop, border or no")
      .on({"data shards", "data download"}).def("data download", "border")
      .bind(&cli::DataToolArgs::resize_mode).bind(&cli::DownloadArgs::resize_mode_name);
  l->add("encode-quality", T::Int, "95", "JPEG quality").on({"data shards", "data download"})
      .bind(&cli::DataToolArgs::encode_quality).bind(&download::DownloadOptions::encode_quality);
  l->add("first-caption-only", T::Flag, "", "keep only the first line (row) of each caption")
      .on({"data shards", "data download"})
      .bind(&cli::DataToolArgs::first_caption_only).bind(&cli::DownloadArgs::first_caption_only);
  l->add("split", T::String, "both", "train, test or both").on({"data fashion-mnist"}).bind(&cli::DataToolArgs::split);
  l->add("limit", T::Int, "-1", "only the first N images of each split (-1: all)").on({"data fashion-mnist"}).wide()
      .bind(&cli::DataToolArgs::limit);
  l->add("decode", T::Flag, "", "decode every image (finds corrupt images behind good headers)").on({"data inspect"})
      .bind(&cli::DataToolArgs::decode);
}

void add_download_flags(FlagList* l) {
  l->section("data download");
  const std::vector<std::string> d = {"data download"};
  l->add("url-list", T::String, "", "URL list file, or a folder of such files").on(d)
      .bind(&cli::DownloadArgs::url_list);
  l->add("input-format", T::String, "txt", "parquet, csv, tsv, jsonl or txt").on(d)
      .bind(&cli::DownloadArgs::input_format);
  l->add("url-col", T::String, "url", "URL column").on(d).bind(&cli::DownloadArgs::url_col);
  l->add("caption-col", T::String, "", "caption column (none by default)").on(d).bind(&cli::DownloadArgs::caption_col);
  l->add("output-folder", T::String, "images", "output folder").on(d).bind(&download::DownloadOptions::output_folder);
  l->add("output-format", T::String, "webdataset", "webdataset (the only format built)").on(d)
      .bind(&cli::DownloadArgs::output_format);
  l->add("processes-count", T::Int, "1", "decode/resize/encode threads").on(d).at_most(kMaxThreads, "the cap on threads")
      .bind(&download::DownloadOptions::processes);
  l->add("thread-count", T::Int, "256", "transfers per process (processes x threads in flight)").on(d)
      .bind(&download::DownloadOptions::threads);
  l->add("resize-only-if-bigger", T::Flag, "", "resize only images larger than --image-size").on(d)
      .bind(&download::DownloadOptions::resize_only_if_bigger);
  l->add("encode-format", T::String, "jpg", "jpg (the only format built)").on(d)
      .bind(&cli::DownloadArgs::encode_format);
  l->add("number-sample-per-shard", T::Int, "10000", "samples per shard").on(d).wide()
      .bind(&download::DownloadOptions::shard_size);
  l->add("incremental-mode", T::String, "incremental", "incremental (skip finished shards) or overwrite").on(d)
      .bind(&cli::DownloadArgs::incremental_mode);
  l->add("timeout", T::Float, "10", "seconds per attempt (total)").on(d)
      .bind([](download::DownloadOptions& d, double v) { d.fetch.timeout_s = v; });
  l->add("retries", T::Int, "0", "extra attempts per URL").on(d)
      .bind([](download::DownloadOptions& d, int v) { d.fetch.retries = v; });
  l->add("max-redirects", T::Int, "10", "redirects followed per URL").on(d)
      .bind([](download::DownloadOptions& d, int v) { d.fetch.max_redirects = v; });
  l->add("max-body-bytes", T::Int, "33554432", "a larger body fails (data download: the sample; serve: the request, "
         "413)").on({"data download", "serve"}).wide()
      .bind([](serve::ServeOptions& o, int64_t v) { o.max_body = size_t(v); })
      .bind([](download::DownloadOptions& d, int64_t v) { d.fetch.max_bytes = v; });
  l->add("max-image-area", T::Int, "25000000", "decoded pixels above this fail (decompression bombs)").on(d).wide()
      .bind(&download::DownloadOptions::max_pixels);
  l->add("user-agent-token", T::String, "", "token appended to the User-Agent and matched in X-Robots-Tag").on(d)
      .bind([](download::DownloadOptions& d, std::string v) { d.fetch.user_agent_token = std::move(v); });
  l->add("user-agent", T::String, "", "full User-Agent (default: img2dataset's)").on(d)
      .bind([](download::DownloadOptions& d, std::string v) { d.fetch.user_agent = std::move(v); });
  l->add("disallowed-header-directives", T::String, "noai,noimageai,noindex,noimageindex",
         "X-Robots-Tag directives that opt an image out (comma-separated; empty = ignore the header)").on(d)
      .bind(&cli::DownloadArgs::disallowed_header_directives);
}

void add_other_flags(FlagList* l) {
  l->section("logs, report, tokenize, models");
  l->add("tag", T::String, "train/loss", "scalar tag (logs export: 'all' for every tag)")
      .on({"logs export", "logs compare"}).bind(&cli::RunToolArgs::tag);
  l->add("format", T::String, "csv", "output format").on({"logs export"}).choices({"csv", "json"})
      .bind(&cli::RunToolArgs::format);
  l->add("max-rel-diff", T::Float, "0.02", "pass when every common step has |a-b|/|b| <= this").on({"logs compare"})
      .bind(&cli::RunToolArgs::max_rel_diff);
  l->add("top", T::Int, "10", "rows in the table of worst steps").on({"logs compare"}).bind(&cli::RunToolArgs::top);
  l->add("out", T::String, "", "output file (default RUN_DIR/report.html)").on({"report"}).bind(&cli::RunToolArgs::out);
  l->add("title", T::String, "", "page title (default: the run's name)").on({"report"}).bind(&cli::RunToolArgs::title);
  const std::vector<std::string> tk = {"tokenize"};
  l->add("vocab", T::String, "", "bpe_simple_vocab_16e6.txt.gz (default: $OPENCLIP_VOCAB, then the data folder)").on(tk)
      .bind(&cli::TokenizeArgs::vocab);
  l->add("hf-tokenizer", T::String, "", "Hugging Face tokenizer instead of CLIP's BPE: bert-base-uncased (the -CLIPA "
         "configs)").on(tk).bind(&cli::TokenizeArgs::hf_tokenizer);
  l->add("hf-tokenizer-vocab", T::String, "", "its vocab.txt (WordPiece), or for the SigLIP configs "
         "its tokenizer.json or spiece.model (SentencePiece); default: $OPENCLIP_HF_TOKENIZER_VOCAB (WordPiece only), "
         "then <name>-vocab.txt or <name>/vocab.txt (SentencePiece: <name>/tokenizer.json, <name>/spiece.model) in the "
         "data folder").on(tk)
      .bind(&cli::TokenizeArgs::hf_tokenizer_vocab);
  l->add("strip-sep-token", T::Flag, "", "with --hf-tokenizer: [SEP] ids become 0 (tokenizer_kwargs strip_sep_token)")
      .on(tk).bind(&cli::TokenizeArgs::strip_sep_token);
  l->add("context-length", T::Int, "77", "ids per line (OpenCLIP's context_length; with --model: the config's)").on(tk)
      .bind(&cli::TokenizeArgs::context_length).bind(&cli::TokenizeArgs::context_length_given);
  l->add("input", T::String, "-", "input file, - for stdin").on(tk).bind(&cli::TokenizeArgs::input);
  l->add("decode", T::Flag, "", "ids -> text instead of text -> ids").on(tk).bind(&cli::TokenizeArgs::decode);
  l->add("check", T::String, "", "validate one config without building the model: a built-in name or a JSON file "
         "(one line and exit 0, or the refusing key and exit 1)").on({"models"}).bind(&cli::ModelsArgs::check);
}

void add_serve_flags(FlagList* l) {
  l->section("serve");
  const std::vector<std::string> s = {"serve"};
  l->add("index", T::String, "", "index folder (openclip index build) for /v1/search and the page").on(s)
      .bind(&serve::ServeOptions::index_dir);
  l->add("host", T::String, "127.0.0.1", "address to bind (0.0.0.0 exposes the server to the network)").on(s)
      .bind(&serve::ServeOptions::host);
  l->add("port", T::Int, "8080", "port (0 = any free port, printed at start)").on(s).at_least(0).at_most(65535, "the largest TCP port")
      .bind(&serve::ServeOptions::port);
  l->add("max-batch", T::Int, "32", "inputs per forward pass").on(s).bind(&serve::ServeOptions::max_batch);
  l->add("max-wait-ms", T::Int, "5", "how long a request waits for others to batch with").on(s)
      .bind(&serve::ServeOptions::max_wait_ms);
  l->add("max-queue", T::Int, "256", "requests accepted and not yet answered; the next gets 503 + Retry-After").on(s)
      .bind(&serve::ServeOptions::max_queue);
  l->add("http-threads", T::Int, "128", "threads preparing requests (parse, decode, tokenize) for the model")
      .on(s).at_most(kMaxThreads, "the cap on threads").bind(&serve::ServeOptions::http_threads);
  l->add("max-connections", T::Int, "1000", "open connections; the next gets 503 and is closed").on(s)
      .bind(&serve::ServeOptions::max_connections);
  l->add("max-connections-per-client", T::Int, "0", "open connections from one address (IPv6: one /64), 429 beyond; "
         "0: --max-connections / 8, at least 8").on(s).bind(&serve::ServeOptions::max_connections_per_client);
  l->add("max-buffered-body", T::Int, "1073741824", "bytes of request bodies held over all connections, charged as "
         "they arrive, and of preprocessed images over all requests (503 above)").on(s).wide().at_least(1)
      .bind([](serve::ServeOptions& o, int64_t v) { o.max_buffered_body = size_t(v); });
  l->add("header-timeout", T::Int, "10", "seconds for a request's headers, from its first byte (408 after)").on(s)
      .bind([](serve::ServeOptions& o, int v) { o.header_timeout_s = v; });
  l->add("body-timeout", T::Int, "60", "seconds for a request's body, after its headers (408 after)").on(s)
      .bind([](serve::ServeOptions& o, int v) { o.body_timeout_s = v; });
  l->add("min-body-rate", T::Int, "1024", "bytes/s a request body must keep up after a 2 s grace (408 and a log line "
         "below; 0: no minimum)").on(s).at_least(0).bind([](serve::ServeOptions& o, int v) { o.min_body_rate = v; });
  l->add("rate-limit", T::Float, "0", "requests per second per client address (IPv6: one /64), 429 + Retry-After "
         "above; 0: no limit").on(s).at_least(0).bind(&serve::ServeOptions::rate_limit);
  l->add("rate-burst", T::Float, "0", "requests one address may send at once under --rate-limit (0: twice the rate)")
      .on(s).at_least(0).bind(&serve::ServeOptions::rate_burst);
  l->add("max-unsent-bytes", T::Int, "268435456", "response bytes waiting to be written over all connections; "
         "clients that read nothing for 2 s are cut off to make room, else 503").on(s).wide().at_least(1)
      .bind([](serve::ServeOptions& o, int64_t v) { o.max_unsent = size_t(v); });
  l->add("drain-seconds", T::Int, "10", "on SIGTERM: how long requests in progress may finish").on(s)
      .bind([](serve::ServeOptions& o, int v) { o.drain_seconds = v; });
  l->add("max-image-pixels", T::Int, "25000000", "decoded image limit (413 above; decompression bombs)").on(s).wide()
      .bind(&serve::ServeOptions::max_pixels);
  l->add("max-request-pixels", T::Int, "100000000", "decoded pixels of all images of a request (413 above)").on(s).wide()
      .bind(&serve::ServeOptions::max_request_pixels);
  l->add("max-text-bytes", T::Int, "4096", "bytes per text (413 above)").on(s)
      .bind([](serve::ServeOptions& o, int v) { o.max_text_bytes = size_t(v); });
  l->add("max-request-text-bytes", T::Int, "262144", "bytes of all texts of a request (413 above)").on(s)
      .bind([](serve::ServeOptions& o, int v) { o.max_request_text_bytes = size_t(v); });
  l->add("max-inputs", T::Int, "256", "texts, images or labels per request (413 above)").on(s)
      .bind(&serve::ServeOptions::max_inputs);
  l->add("api-key", T::String, "", "required as Authorization: Bearer KEY (visible in ps: prefer --api-key-file)").on(s)
      .bind(&serve::ServeOptions::api_key);
  l->add("api-key-file", T::String, "", "file holding the API key (its first line)").on(s)
      .bind(&cli::ServeArgs::api_key_file);
  l->add("allow-image-urls", T::Flag, "", "/v1/embeddings fetches {\"image\": \"https://...\"} items (public "
         "addresses only; within --image-url-timeout, --max-body-bytes, 5 redirects)").on(s)
      .bind(&serve::ServeOptions::allow_image_urls);
  l->add("allow-private-image-urls", T::Flag, "", "with --allow-image-urls: also fetch from loopback, private and "
         "link-local addresses (the server's own network)").on(s).bind(&serve::ServeOptions::allow_private_image_urls);
  l->add("image-url-timeout", T::Float, "10", "seconds for all image URL fetches of one request").on(s).at_least(0.1)
      .bind(&serve::ServeOptions::image_url_timeout_s);
  l->add("insecure-no-auth", T::Flag, "", "serve a non-loopback --host without an API key").on(s)
      .bind(&serve::ServeOptions::insecure_no_auth);
  l->add("allowed-hosts", T::String, "", "Host names served besides IP literals, localhost and --host (comma-separated)")
      .on(s).bind(&cli::ServeArgs::allowed_hosts_list);
  l->add("cors-origin", T::String, "", "origins allowed cross-origin requests (comma-separated; default none)").on(s)
      .bind(&cli::ServeArgs::cors_origin_list);
}

}  // namespace

void add_tool_flags(FlagList* l) {
  add_inference_flags(l);
  add_bench_flags(l);
  add_quantize_flags(l);
  add_demo_flags(l);
  add_data_tool_flags(l);
  add_download_flags(l);
  add_other_flags(l);
  add_serve_flags(l);
}

// Into the registry (core/flags.h) when these objects are linked: after train's in the docs.
[[maybe_unused]] const bool kToolFlagsRegistered = (register_flag_table(1, add_tool_flags), true);

}  // namespace oc
