// Request parsing and the endpoint bodies of the server, free of HTTP plumbing: each takes
// the parsed request pieces and returns a JSON document, or throws HttpError.
#pragma once
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "image/image.h"
#include "index/encoder.h"
#include "index/searcher.h"
#include "serve/batcher.h"
#include "serve/server.h"

namespace oc::serve {

struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& msg) : std::runtime_error(msg), status(status) {}
  int status;
};

struct Context {
  const ServeOptions& opt;
  index::Encoder& enc;
  Batcher& batcher;
  const index::Searcher* searcher;  // null without --index
};

// The JSON body of a request (400 on bad JSON, an object expected, nesting over 32 levels).
nlohmann::json parse_json_body(const httplib::Request& req);
// Image uploads: multipart parts named "image" (or any file part), or JSON "image"/"images"
// as base64 strings. Decoded with the pixel limit (413 over it, 400 for non-images).
std::vector<ImageU8> request_images(const Context& c, const httplib::Request& req);

nlohmann::json embed_text(const Context& c, const httplib::Request& req);
nlohmann::json embed_image(const Context& c, const httplib::Request& req);
nlohmann::json classify(const Context& c, const httplib::Request& req);
nlohmann::json search(const Context& c, const httplib::Request& req);  // GET ?q= or POST image

}  // namespace oc::serve
