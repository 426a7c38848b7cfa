// Request parsing and the endpoint bodies of the server, free of HTTP plumbing: each takes
// the parsed request pieces and returns a JSON document, or throws HttpError.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "image/image.h"
#include "index/searcher.h"
#include "model/inference.h"
#include "serve/batcher.h"
#include "serve/http.h"
#include "serve/server.h"

namespace oc::serve {

struct Context {
  const ServeOptions& opt;
  InferenceModel& enc;
  Batcher& batcher;
  const index::Searcher* searcher;  // null without --index
};

// The JSON body of a request (400 on bad JSON, an object expected, nesting over 32 levels).
nlohmann::json parse_json_body(const http::Request& req);

// Preprocessed images held by all requests at once (S x S x 3 bytes per image, uint8 until
// the batcher's forward pass: a 1x1 PNG costs 150 KB at 224): at most --max-buffered-body
// bytes, 503 beyond.
// The lease returns its bytes when the request's Pixels are gone.
struct PixelLease {
  size_t bytes = 0;
  PixelLease() = default;
  PixelLease(const PixelLease&) = delete;
  PixelLease& operator=(const PixelLease&) = delete;
  ~PixelLease();
  static size_t held();  // over all requests, for tests and /metrics
};
// Charges `bytes` more to `lease` (also image bytes fetched from URLs while they are held),
// or 503 when all requests together would hold more than --max-buffered-body.
void charge_pixels(const Context& c, PixelLease& lease, size_t bytes);

// A request's images, resized and cropped to the model's input: n rows of S x S x 3 uint8
// (HWC; the batcher normalizes them into floats pass by pass).
struct Pixels {
  std::vector<uint8_t> data;
  size_t n = 0;
  std::shared_ptr<PixelLease> lease = std::make_shared<PixelLease>();
};
// Image uploads: multipart parts named "image" (or any file part), or JSON "image"/"images"
// as base64 strings. Decoded one at a time (each is preprocessed and dropped before the
// next is decoded) within the per-image pixel limit and the request's pixel budget, both
// checked from the image header before decoding (413 over either; 400 for non-images).
Pixels request_pixels(const Context& c, const http::Request& req);
// One upload appended to `out` (decoded within the per-image limit and `budget_left`, which
// it decreases; 413 past --max-inputs, 400 for a non-image).
void add_image(const Context& c, Pixels& out, std::span<const uint8_t> bytes, int64_t& budget_left);
// Texts checked (400 empty, 413 over the byte limits) and tokenized: [n, context_length] ids.
std::vector<int32_t> text_ids(const Context& c, const std::vector<std::string>& texts);
std::vector<float> run_texts(const Context& c, const std::vector<std::string>& texts);

nlohmann::json embed_text(const Context& c, const http::Request& req);
nlohmann::json embed_image(const Context& c, const http::Request& req);
nlohmann::json classify(const Context& c, const http::Request& req);
nlohmann::json search(const Context& c, const http::Request& req);  // GET ?q= or POST image

}  // namespace oc::serve
