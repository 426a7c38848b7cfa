#include "serve/handlers.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/base64.h"
#include "core/check.h"
#include "image/codec.h"
#include "image/transform.h"

namespace oc::serve {
namespace {

using json = nlohmann::json;

// Handler threads prepare inputs single-threaded: many run at once, and one OpenMP team
// per connection would oversubscribe the cores the model's forward pass needs.
void one_omp_thread() {
  thread_local bool set = false;
  if (!set) omp_set_num_threads(1), set = true;
}

std::atomic<size_t> g_pixel_bytes{0};

bool is_multipart(const http::Request& req) { return req.media_type() == "multipart/form-data"; }

// Decodes upload i within the per-image limit and what is left of the request's budget;
// both are checked by the decoder from the image header, before it allocates the pixels.
ImageU8 decode_upload(const Context& c, std::span<const uint8_t> bytes, size_t i, int64_t budget_left) {
  const std::string what = "image " + std::to_string(i);
  const std::string budget = std::to_string(c.opt.max_request_pixels);
  if (budget_left <= 0) throw HttpError(413, what + ": the request is over its budget of " + budget + " decoded pixels");
  DecodeOptions d;
  d.max_pixels = std::min(c.opt.max_pixels, budget_left);
  auto img = decode_image(bytes, d);
  if (img) return std::move(img).value();
  if (img.error().find("exceeds the pixel limit") == std::string::npos)
    throw HttpError(400, what + " is not a readable JPEG, PNG or WebP: " + img.error());
  if (budget_left < c.opt.max_pixels)
    throw HttpError(413, what + " would take the request over its budget of " + budget + " decoded pixels (" + img.error() + ")");
  throw HttpError(413, what + ": " + img.error());
}

std::vector<float> run_images(const Context& c, Pixels p) {
  return c.batcher.run(Kind::Image, {}, std::move(p.data), int64_t(p.n));
}

std::vector<std::string> string_list(const json& j, const char* one, const char* many, size_t max) {
  std::vector<std::string> out;
  if (j.contains(many)) {
    if (!j[many].is_array()) throw HttpError(400, std::string("\"") + many + "\" must be an array of strings");
    for (auto& t : j[many]) {
      if (!t.is_string()) throw HttpError(400, std::string("\"") + many + "\" must be an array of strings");
      out.push_back(t.get<std::string>());
    }
  } else if (j.contains(one)) {
    if (!j[one].is_string()) throw HttpError(400, std::string("\"") + one + "\" must be a string");
    out.push_back(j[one].get<std::string>());
  }
  if (out.size() > max) throw HttpError(413, std::to_string(out.size()) + " inputs, over the limit of " + std::to_string(max));
  return out;
}

json rows(const std::vector<float>& e, size_t n, size_t dim) {
  json out = json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(std::vector<float>(e.begin() + i * dim, e.begin() + (i + 1) * dim));
  return out;
}

json hits_json(const Context& c, const float* q, int k) {
  json res = json::array();
  for (auto& h : c.searcher->search(q, k))
    res.push_back({{"id", h.id}, {"score", h.score}, {"key", h.item->key}, {"caption", h.item->caption},
                   {"url", "/v1/images/" + std::to_string(h.id)}});
  return res;
}

int parse_k(const std::string& s) {
  char* end = nullptr;
  const long k = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || k < 1 || k > 1000) throw HttpError(400, "k must be an integer from 1 to 1000");
  return int(k);
}

}  // namespace

void charge_pixels(const Context& c, PixelLease& lease, size_t bytes) {
  size_t cur = g_pixel_bytes.load();
  do {
    if (cur + bytes > c.opt.max_buffered_body)
      throw HttpError(503,
                      "the server's memory for images (--max-buffered-body) is in use by other requests; retry later");
  } while (!g_pixel_bytes.compare_exchange_weak(cur, cur + bytes));
  lease.bytes += bytes;
}

PixelLease::~PixelLease() { g_pixel_bytes -= bytes; }
size_t PixelLease::held() { return g_pixel_bytes.load(); }

json parse_json_body(const http::Request& req) {
  bool too_deep = false;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t, json&) {
    if (depth > 32) too_deep = true;
    return !too_deep;
  };
  json j = json::parse(req.body, cb, false);
  if (too_deep) throw HttpError(400, "the JSON body nests deeper than 32 levels");
  if (j.is_discarded()) throw HttpError(400, "the body is not valid JSON");
  if (!j.is_object()) throw HttpError(400, "the JSON body must be an object");
  return j;
}

std::vector<int32_t> text_ids(const Context& c, const std::vector<std::string>& texts) {
  size_t total = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].empty()) throw HttpError(400, "text " + std::to_string(i) + " is empty");
    if (texts[i].size() > c.opt.max_text_bytes)
      throw HttpError(413, "text " + std::to_string(i) + " has " + std::to_string(texts[i].size()) +
                               " bytes, over the limit of " + std::to_string(c.opt.max_text_bytes));
    total += texts[i].size();
    if (total > c.opt.max_request_text_bytes)
      throw HttpError(413, "the request's texts are over its budget of " + std::to_string(c.opt.max_request_text_bytes) + " bytes");
  }
  one_omp_thread();
  std::vector<int32_t> ids;
  try {
    ids = c.enc.tokenize(texts);
  } catch (const Error& e) {
    throw HttpError(400, e.what());
  }
  return ids;
}

std::vector<float> run_texts(const Context& c, const std::vector<std::string>& texts) {
  return c.batcher.run(Kind::Text, text_ids(c, texts), {}, int64_t(texts.size()));
}

// Room for n images (at most the limit), charged as reserved: one allocation where the count
// is known up front (a batch of 64 is 9.6 MB, which doubling would copy and fault in ~7 times).
void reserve_images(const Context& c, Pixels& out, size_t n) {
  const size_t px = size_t(3 * c.enc.image_size() * c.enc.image_size());
  const size_t want = std::min(n, size_t(c.opt.max_inputs)) * px;
  if (out.data.capacity() >= want) return;
  charge_pixels(c, *out.lease, want - out.data.capacity());
  out.data.reserve(want);
}

void add_image(const Context& c, Pixels& out, std::span<const uint8_t> bytes, int64_t& budget_left) {
  const size_t px = size_t(3 * c.enc.image_size() * c.enc.image_size());
  const size_t max_n = size_t(c.opt.max_inputs);
  if (out.n >= max_n) throw HttpError(413, "more than " + std::to_string(max_n) + " images, over the limit");
  one_omp_thread();
  const ImageU8 img = decode_upload(c, bytes, out.n, budget_left);
  budget_left -= int64_t(img.width) * img.height;
  if (out.data.capacity() < (out.n + 1) * px)  // doubling where the count was not known
    reserve_images(c, out, std::max(2 * out.data.capacity() / px, out.n + 1));
  out.data.resize((out.n + 1) * px);
  preprocess_eval(img, c.enc.preprocess_cfg(), std::span<uint8_t>(out.data.data() + out.n * px, px));
  ++out.n;
}

Pixels request_pixels(const Context& c, const http::Request& req) {
  const size_t max_n = size_t(c.opt.max_inputs);
  Pixels out;
  int64_t left = c.opt.max_request_pixels;
  auto add = [&](std::span<const uint8_t> bytes) { add_image(c, out, bytes, left); };
  if (is_multipart(req)) {
    const auto parts = http::parse_multipart(req, 2 * max_n + 8);
    auto is_image = [](const auto& part) { return part.name == "image" || part.name == "images" || !part.filename.empty(); };
    reserve_images(c, out, size_t(std::count_if(parts.begin(), parts.end(), is_image)));
    for (auto& part : parts)
      if (is_image(part)) add({reinterpret_cast<const uint8_t*>(part.content.data()), part.content.size()});
  } else {
    json j = parse_json_body(req);
    const auto images = string_list(j, "image", "images", max_n);
    reserve_images(c, out, images.size());
    for (auto& s : images) {
      auto bytes = base64_decode(s);
      if (!bytes) throw HttpError(400, "image " + std::to_string(out.n) + " is not valid base64");
      add(*bytes);
    }
  }
  if (out.n == 0) throw HttpError(400, "no image: send multipart/form-data with an \"image\" file, or JSON {\"image\": \"<base64>\"}");
  return out;
}

json embed_text(const Context& c, const http::Request& req) {
  json j = parse_json_body(req);
  auto texts = string_list(j, "text", "texts", size_t(c.opt.max_inputs));
  if (texts.empty()) throw HttpError(400, "no text: send {\"texts\": [\"...\"]} or {\"text\": \"...\"}");
  auto e = run_texts(c, texts);
  const size_t E = size_t(c.enc.embed_dim());
  return {{"model", c.opt.model}, {"dim", E}, {"embeddings", rows(e, texts.size(), E)}};
}

json embed_image(const Context& c, const http::Request& req) {
  auto images = request_pixels(c, req);
  const size_t n = images.n;
  auto e = run_images(c, std::move(images));
  const size_t E = size_t(c.enc.embed_dim());
  return {{"model", c.opt.model}, {"dim", E}, {"embeddings", rows(e, n, E)}};
}

json classify(const Context& c, const http::Request& req) {
  std::vector<std::string> labels;
  if (is_multipart(req)) {
    for (auto& part : http::parse_multipart(req, 2 * size_t(c.opt.max_inputs) + 8))
      if (part.name == "labels" || part.name == "label") labels.push_back(part.content);
    if (labels.size() > size_t(c.opt.max_inputs)) throw HttpError(413, "too many labels");
  } else {
    labels = string_list(parse_json_body(req), "label", "labels", size_t(c.opt.max_inputs));
  }
  if (labels.empty()) throw HttpError(400, "classify needs at least one label (\"labels\")");
  auto images = request_pixels(c, req);
  const size_t n = images.n;
  auto img = run_images(c, std::move(images));
  auto txt = run_texts(c, labels);
  const size_t E = size_t(c.enc.embed_dim());
  json probs = json::array();
  for (size_t i = 0; i < n; ++i) probs.push_back(label_probabilities(img.data() + i * E, txt.data(), labels.size(), size_t(E)));
  return {{"labels", labels}, {"probs", probs}};
}

json search(const Context& c, const http::Request& req) {
  if (!c.searcher) throw HttpError(404, "no index loaded (start the server with --index INDEX_DIR)");
  const auto params = req.params();
  const int k = params.count("k") ? parse_k(params.at("k")) : 10;
  std::vector<float> q;
  std::string query;
  if (req.method == "GET") {
    query = params.count("q") ? params.at("q") : "";
    if (query.empty()) throw HttpError(400, "search needs a query: /v1/search?q=TEXT&k=10");
    q = run_texts(c, {query});
  } else {
    auto images = request_pixels(c, req);
    if (images.n != 1) throw HttpError(400, "search by image takes exactly one image");
    q = run_images(c, std::move(images));
  }
  return {{"query", query}, {"k", k}, {"results", hits_json(c, q.data(), k)}};
}

}  // namespace oc::serve
