#include "serve/openai_api.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/base64.h"
#include "image/codec.h"
#include "serve/url_fetch.h"

namespace oc::serve {
namespace {

using json = nlohmann::json;
static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");

// An error with OpenAI's `param` and `code` fields.
struct ApiError : HttpError {
  ApiError(int status, const std::string& msg, std::string param = "", std::string code = "")
      : HttpError(status, msg), param(std::move(param)), code(std::move(code)) {}
  std::string param, code;
};

const char* error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 403) return "permission_error";
  if (status == 404) return "not_found_error";
  if (status == 429 || status == 503) return "rate_limit_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

http::Response api_error(int status, const std::string& msg, const std::string& param = "",
                         const std::string& code = "") {
  http::Response r;
  r.status = status;
  const json j = {{"error",
                   {{"message", msg},
                    {"type", error_type(status)},
                    {"param", param.empty() ? json(nullptr) : json(param)},
                    {"code", code.empty() ? json(nullptr) : json(code)}}}};
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// The body, refused while it is parsed (before it is held as a JSON tree) when "input" has
// more than --max-inputs items or the tree more nodes than a full request can need.
json parse_body(const Context& c, const http::Request& req) {
  const size_t max_items = size_t(c.opt.max_inputs);
  const size_t max_nodes = max_items * size_t(c.enc.context_length() + 8) + 64;
  size_t items = 0, nodes = 0;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json&) {
    if (depth > 32) throw ApiError(400, "the JSON body nests deeper than 32 levels");
    if (ev == json::parse_event_t::key || ev == json::parse_event_t::array_end || ev == json::parse_event_t::object_end)
      return true;
    if (depth == 2 && ++items > max_items)
      throw ApiError(400, "\"input\" has more than " + std::to_string(max_items) + " items (--max-inputs)", "input");
    if (++nodes > max_nodes) throw ApiError(400, "the JSON body has more values than a request may", "input");
    return true;
  };
  json j = json::parse(req.body, cb, false);
  if (j.is_discarded()) throw ApiError(400, "the body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "the JSON body must be an object");
  return j;
}

// One input item: a text, a row of token ids, or image bytes (or the URL to fetch them from).
struct Item {
  enum Kind { Text, Tokens, Image } kind = Text;
  std::string text;
  std::vector<int32_t> ids;
  std::vector<uint8_t> bytes;
  std::string url;
};

std::string item_name(size_t i) { return "input[" + std::to_string(i) + "]"; }

// A data: URL's bytes; the MIME type it declares must be an image type and be what the bytes are.
std::vector<uint8_t> data_url_bytes(const std::string& s, const std::string& where) {
  const size_t comma = s.find(',');
  const std::string head = s.substr(0, comma == std::string::npos ? 0 : comma);
  if (comma == std::string::npos || head.size() < 12 || head.compare(head.size() - 7, 7, ";base64") != 0)
    throw ApiError(400, where + ": a data: URL must be data:image/TYPE;base64,<bytes>", "input");
  const std::string mime = head.substr(5, head.size() - 12);
  ImageFormat declared = ImageFormat::Unknown;
  if (mime == "image/png") declared = ImageFormat::Png;
  if (mime == "image/jpeg" || mime == "image/jpg") declared = ImageFormat::Jpeg;
  if (mime == "image/webp") declared = ImageFormat::Webp;
  if (declared == ImageFormat::Unknown)
    throw ApiError(400, where + ": the data: URL's type \"" + mime + "\" is not image/png, image/jpeg or image/webp",
                   "input");
  auto bytes = base64_decode(std::string_view(s).substr(comma + 1));
  if (!bytes) throw ApiError(400, where + ": the data: URL's payload is not valid base64", "input");
  if (sniff_format(*bytes) != declared)
    throw ApiError(
        400, where + ": the data: URL says " + mime + " but its bytes are not a " + mime.substr(6) + " image", "input");
  return std::move(*bytes);
}

bool is_remote_url(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

Item image_item(const Context& c, const json& v, const std::string& where) {
  if (!v.is_string())
    throw ApiError(400, where + ": \"image\" must be a base64 string, a data: URL or an http(s) URL", "input");
  const std::string& s = v.get_ref<const std::string&>();
  Item it{Item::Image, {}, {}, {}, {}};
  if (is_remote_url(s)) {
    if (!c.opt.allow_image_urls)
      throw ApiError(400,
                     where +
                         ": this server does not fetch image URLs (start it with --allow-image-urls to enable "
                         "them); send the image as a data: URL or base64",
                     "input", "image_urls_disabled");
    it.url = s;
    return it;
  }
  if (s.rfind("data:", 0) == 0) {
    it.bytes = data_url_bytes(s, where);
  } else {
    auto bytes = base64_decode(s);
    if (!bytes) throw ApiError(400, where + ": \"image\" is not valid base64", "input");
    it.bytes = std::move(*bytes);
  }
  return it;
}

Item string_item(const Context& c, const std::string& s, const std::string& where) {
  if (s.rfind("data:image/", 0) == 0) return image_item(c, json(s), where);
  if (s.empty()) throw ApiError(400, where + " is an empty string", "input");
  return {Item::Text, s, {}, {}, {}};
}

Item token_item(const Context& c, const json& v, const std::string& where) {
  const int ctx = c.enc.context_length(), vocab = c.enc.cfg().text.vocab_size;
  if (v.empty()) throw ApiError(400, where + " is an empty list of token ids", "input");
  if (v.size() > size_t(ctx))
    throw ApiError(400,
                   where + " has " + std::to_string(v.size()) + " token ids, over the model's context length " +
                       std::to_string(ctx),
                   "input");
  Item it{Item::Tokens, {}, {}, {}, {}};
  for (auto& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab)
      throw ApiError(400, where + ": token ids must be integers in [0, " + std::to_string(vocab) + ")", "input");
    it.ids.push_back(int32_t(t.get<int64_t>()));
  }
  return it;
}

// "input" as OpenAI accepts it (str, [str], [int], [[int]]), plus image items.
std::vector<Item> parse_input(const Context& c, const json& in) {
  if (in.is_string()) return {string_item(c, in.get<std::string>(), item_name(0))};
  if (!in.is_array())
    throw ApiError(400,
                   "\"input\" must be a string, an array of strings, an array of token ids or an array of such arrays",
                   "input");
  if (in.empty()) throw ApiError(400, "\"input\" is empty", "input");
  if (in[0].is_number()) return {token_item(c, in, "input")};
  std::vector<Item> items;
  for (size_t i = 0; i < in.size(); ++i) {
    const json& v = in[i];
    if (v.is_string())
      items.push_back(string_item(c, v.get<std::string>(), item_name(i)));
    else if (v.is_array())
      items.push_back(token_item(c, v, item_name(i)));
    else if (v.is_object() && v.contains("image"))
      items.push_back(image_item(c, v["image"], item_name(i)));
    else
      throw ApiError(400, item_name(i) + " must be a string, an array of token ids or {\"image\": ...}", "input");
  }
  return items;
}

// Ids that are not padding: up to the last id that differs from the padding id (the last
// id of the empty text's row).
int64_t token_count(const int32_t* row, int ctx, int32_t pad) {
  int last = ctx - 1;
  while (last >= 0 && row[last] == pad) --last;
  return last + 1;
}

// An image item's bytes: its upload, or its URL fetched within what is left of the request's
// deadline (the bytes are charged to --max-buffered-body while they are held).
void add_item_image(const Context& c, Pixels& px, const Item& it, size_t i, int64_t& budget,
                    std::chrono::steady_clock::time_point deadline) {
  if (it.url.empty()) return add_image(c, px, it.bytes, budget);
  const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
  if (left <= 0)
    throw ApiError(400,
                   item_name(i) + ": the request's image URLs were not all fetched within " +
                       std::to_string(c.opt.image_url_timeout_s) + " s (--image-url-timeout)",
                   "input");
  PixelLease lease;
  charge_pixels(c, lease, c.opt.max_body);
  UrlFetchOptions o;
  o.max_bytes = c.opt.max_body;
  o.timeout_s = left;
  o.allow_private = c.opt.allow_private_image_urls;
  const UrlFetched f = fetch_url(it.url, o);
  if (!f.error.empty()) throw ApiError(400, item_name(i) + ": the image URL was not fetched: " + f.error, "input");
  add_image(c, px, f.body, budget);
}

struct Embedded {
  std::vector<std::vector<float>> rows;
  int64_t tokens = 0;
};

Embedded embed_items(const Context& c, const std::vector<Item>& items) {
  const int ctx = c.enc.context_length();
  const size_t E = size_t(c.enc.embed_dim());
  std::vector<std::string> texts;
  for (auto& it : items)
    if (it.kind == Item::Text) texts.push_back(it.text);
  const std::vector<int32_t> text_rows = texts.empty() ? std::vector<int32_t>{} : text_ids(c, texts);
  const int32_t pad = c.enc.tokenize(std::vector<std::string>{""})[size_t(ctx - 1)];
  std::vector<int32_t> ids;
  Pixels px;
  int64_t budget = c.opt.max_request_pixels;
  Embedded out;
  size_t t = 0, i = 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(c.opt.image_url_timeout_s));
  for (auto& it : items) {
    if (it.kind == Item::Image) {
      add_item_image(c, px, it, i++, budget, deadline);
      continue;
    }
    ++i;
    const size_t at = ids.size();
    if (it.kind == Item::Text) {
      ids.insert(ids.end(), text_rows.begin() + long(t * ctx), text_rows.begin() + long((t + 1) * ctx));
      ++t;
    } else {  // the ids given, padded as the tokenizer pads
      ids.insert(ids.end(), it.ids.begin(), it.ids.end());
      ids.resize(at + size_t(ctx), pad);
    }
    out.tokens += token_count(ids.data() + at, ctx, pad);
  }
  const int64_t n_text = int64_t(ids.size() / size_t(ctx)), n_image = int64_t(px.n);
  const auto te = n_text ? c.batcher.run(Kind::Text, std::move(ids), {}, n_text) : std::vector<float>{};
  const auto ie = n_image ? c.batcher.run(Kind::Image, {}, std::move(px.data), n_image) : std::vector<float>{};
  size_t ti = 0, ii = 0;
  for (auto& it : items) {
    const float* p = it.kind == Item::Image ? ie.data() + E * ii++ : te.data() + E * ti++;
    out.rows.emplace_back(p, p + E);
  }
  return out;
}

// The first n values, L2-normalized again (OpenAI's "dimensions").
void shorten(std::vector<float>& v, size_t n) {
  v.resize(n);
  double ss = 0;
  for (float x : v) ss += double(x) * x;
  const double inv = ss > 0 ? 1.0 / std::sqrt(ss) : 0.0;
  for (float& x : v) x = float(x * inv);
}

json model_json(const Context& c) {
  static const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"id", c.opt.model}, {"object", "model"}, {"created", created}, {"owned_by", "openclip-cpp"}};
}

http::Response ok(const json& j) {
  http::Response r;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

struct Params {
  bool base64 = false;
  size_t dims = 0;
};

Params parse_params(const Context& c, const json& j) {
  if (!j.contains("model") || !j["model"].is_string())
    throw ApiError(400, "\"model\" is required and must be a string", "model");
  if (j["model"].get<std::string>() != c.opt.model)
    throw ApiError(
        404,
        "the model \"" + j["model"].get<std::string>() + "\" does not exist; this server has \"" + c.opt.model + "\"",
        "model", "model_not_found");
  if (!j.contains("input")) throw ApiError(400, "\"input\" is required", "input");
  Params p;
  p.dims = size_t(c.enc.embed_dim());
  if (j.contains("encoding_format") && !j["encoding_format"].is_null()) {
    const json& f = j["encoding_format"];
    if (!f.is_string() || (f != "float" && f != "base64"))
      throw ApiError(400, "\"encoding_format\" must be \"float\" or \"base64\"", "encoding_format");
    p.base64 = f == "base64";
  }
  if (j.contains("dimensions") && !j["dimensions"].is_null()) {
    const json& d = j["dimensions"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > int64_t(p.dims))
      throw ApiError(
          400,
          "\"dimensions\" must be an integer from 1 to " + std::to_string(p.dims) + " (the model's embedding size)",
          "dimensions");
    p.dims = size_t(d.get<int64_t>());
  }
  if (j.contains("user") && !j["user"].is_string() && !j["user"].is_null())
    throw ApiError(400, "\"user\" must be a string", "user");
  return p;
}

}  // namespace

http::Response openai_embeddings(const Context& c, const http::Request& req) {
  try {
    const json j = parse_body(c, req);
    const Params p = parse_params(c, j);
    Embedded e = embed_items(c, parse_input(c, j["input"]));
    json data = json::array();
    for (size_t i = 0; i < e.rows.size(); ++i) {
      auto& v = e.rows[i];
      if (p.dims < v.size()) shorten(v, p.dims);
      const json emb = p.base64
                           ? json(base64_encode({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)}))
                           : json(v);
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", emb}});
    }
    return ok({{"object", "list"},
               {"data", std::move(data)},
               {"model", c.opt.model},
               {"usage", {{"prompt_tokens", e.tokens}, {"total_tokens", e.tokens}}}});
  } catch (const ApiError& e) {
    return api_error(e.status, e.what(), e.param, e.code);
  }
}

http::Response openai_models(const Context& c, const http::Request& req) {
  if (req.path == "/v1/models") return ok({{"object", "list"}, {"data", json::array({model_json(c)})}});
  const std::string id = http::percent_decode(req.path.substr(std::string("/v1/models/").size()), false);
  if (id != c.opt.model) return api_error(404, "the model \"" + id + "\" does not exist", "model", "model_not_found");
  return ok(model_json(c));
}

bool is_openai_path(const std::string& path) {
  return path == "/v1/embeddings" || path == "/v1/models" || path.rfind("/v1/models/", 0) == 0;
}

void to_openai_error(http::Response& r) {
  if (r.status < 400) return;
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object() || j["error"].contains("type")) return;
  const std::string msg = j["error"].value("message", std::string("error"));
  const http::Response shaped = api_error(r.status, msg, "", r.status == 401 ? "invalid_api_key" : "");
  r.body = shaped.body;
  r.content_type = shaped.content_type;
}

}  // namespace oc::serve
