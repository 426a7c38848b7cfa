#include "serve/server.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/check.h"
#include "image/codec.h"
#include "index/checksum.h"
#include "index/sources.h"
#include "serve/access.h"
#include "serve/handlers.h"
#include "serve/http_server.h"
#include "serve/openai_api.h"
#include "serve/page.h"

namespace oc::serve {
namespace {

using json = nlohmann::json;
using http::Request;
using http::Response;

Response json_response(const json& j) {
  Response r;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// An endpoint's error: the request was read whole, so the connection stays open.
Response error(int status, const std::string& msg) {
  Response r = http::json_error(status, msg);
  r.close = false;
  return r;
}

// Metric label for a path: the endpoints themselves, everything else as "other".
std::string endpoint_label(const std::string& path) {
  for (const char* p : {"/v1/embed/text", "/v1/embed/image", "/v1/classify", "/v1/search", "/v1/embeddings",
                        "/v1/models", "/healthz", "/metrics"})
    if (path == p) return p;
  if (path.rfind("/v1/images/", 0) == 0) return "/v1/images";
  if (path == "/") return "/";
  return "other";
}

struct Route {
  const char* method;
  std::string path;
  bool prefix = false, needs_key = true, run_inline = false;
  std::function<Response(const Request&)> fn;
};

bool matches_extension(ImageFormat fmt, const std::string& path) {
  std::string ext = path.substr(path.rfind('.') + 1);
  for (char& ch : ext) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (fmt == ImageFormat::Jpeg) return ext == "jpg" || ext == "jpeg";
  return ext == (fmt == ImageFormat::Png ? "png" : "webp");
}

void check_options(const ServeOptions& o) {
  if (!is_loopback_host(o.host) && o.api_key.empty() && !o.insecure_no_auth)
    OC_USER_ERROR("--host {} is reachable from the network: set --api-key or --api-key-file (or --insecure-no-auth to "
                  "serve anyone who can connect)", o.host);
}

}  // namespace

struct Server::Impl {
  ServeOptions opt;
  ModelSource source;  // --model / --pretrained resolved: the index's weights check reads its file
  InferenceModel enc;
  Metrics metrics;
  std::optional<index::Searcher> searcher;
  Batcher batcher;
  Context ctx;
  AccessPolicy policy;
  std::vector<Route> routes;
  http::HttpServer http;
  // Indexed images that decoded whole, by id, with the identity of the file they were read
  // from (device, inode, size, change times, offset): a file is decoded once, not per GET.
  std::mutex verify_mu;  // also serializes the decoding: one image's pixels in memory at a time
  std::unordered_map<uint64_t, std::string> verified;

  explicit Impl(const ServeOptions& o)
      : opt((check_options(o), o)),
        source(resolve_model_source(o.model, o.weights)),
        enc(source, inference_options(o)),
        searcher(open_index(o, source.weights)),
        batcher(enc, {o.max_batch, o.max_wait_ms, o.max_queue}, &metrics),
        ctx{opt, enc, batcher, searcher ? &*searcher : nullptr},
        policy{o.host, o.allowed_hosts, o.cors_origins, o.api_key},
        routes(make_routes()),
        http(http_options(o), hooks()) {}

  static InferenceOptions inference_options(const ServeOptions& o) {
    InferenceOptions io;
    io.precision = o.precision;
    io.int8_scales = o.int8_scales;
    io.device = o.device;
    io.max_batch = o.max_batch;
    return io;
  }

  static std::optional<index::Searcher> open_index(const ServeOptions& o, const std::string& weights) {
    if (o.index_dir.empty()) return std::nullopt;
    std::optional<index::Searcher> s(std::in_place, o.index_dir);
    index::check_same_model(s->meta(), o.index_dir, effective_model(o.model, o.weights),
                            index::weights_checksum(weights));
    return s;
  }

  static http::ServerOptions http_options(const ServeOptions& o) {
    http::ServerOptions h;
    h.host = o.host;
    h.port = o.port;
    h.limits.max_body = o.max_body;
    h.threads = std::max(4, o.http_threads);
    h.max_connections = o.max_connections;
    h.max_connections_per_client = o.max_connections_per_client;
    h.max_pending = o.max_queue;
    h.max_buffered_body = o.max_buffered_body;
    h.header_timeout_s = o.header_timeout_s;
    h.body_timeout_s = o.body_timeout_s;
    h.min_body_rate = o.min_body_rate;
    h.rate_per_client = o.rate_limit;
    h.rate_burst = o.rate_burst > 0 ? o.rate_burst : std::max(1.0, 2 * o.rate_limit);
    h.max_unsent = o.max_unsent;
    return h;
  }

  http::Hooks hooks() {
    http::Hooks h;
    h.check_head = [this](const Request& r) { return check_head(r); };
    h.run_inline = [this](const Request& r) { return find(r)->run_inline; };
    h.handle = [this](const Request& r) { return handle(r); };
    h.drain_end = [this] { batcher.stop(); };
    h.busy = [this] {
      metrics.rejected();
      Response r = error(503, QueueFull().what());
      r.headers.emplace_back("Retry-After", "1");
      return r;
    };
    h.answered = [this](const Request& req, const Response& res, double s) { metrics.request(endpoint_label(req.path), res.status, s); };
    return h;
  }

  // The route of a path and method; null with `status` 404 or 405 when there is none.
  const Route* find(const Request& req, int* status = nullptr) const {
    bool path_known = false;
    for (auto& r : routes) {
      if (!(r.prefix ? req.path.rfind(r.path, 0) == 0 : req.path == r.path)) continue;
      path_known = true;
      if (req.method == r.method) return &r;
    }
    if (status) *status = path_known ? 405 : 404;
    return nullptr;
  }

  std::optional<Response> check_head(const Request& req) {
    auto refusal = check_head_ours(req);
    if (refusal && is_openai_path(req.path)) to_openai_error(*refusal);
    return refusal;
  }

  std::optional<Response> check_head_ours(const Request& req) {
    int status = 0;
    const Route* route = find(req, &status);
    if (auto refusal = check_access(policy, req, !route || route->needs_key)) return refusal;
    if (!route) return error(status, status == 404 ? "no such endpoint" : "method not allowed");
    const std::string type = req.media_type();
    if (req.method == "POST" && req.has_body() && type != "application/json" && type != "multipart/form-data")
      return error(415, "Content-Type \"" + type + "\" is not accepted: send application/json (curl -H 'Content-Type: "
                        "application/json') or multipart/form-data");
    return std::nullopt;
  }

  Response handle(const Request& req) {
    Response res;
    const CancelScope cancel(req.gone);  // queued work is dropped once the client has gone
    try {
      res = find(req)->fn(req);
    } catch (const HttpError& e) {
      res = error(e.status, e.what());
    } catch (const QueueFull& e) {
      metrics.rejected();
      res = error(503, e.what());
      res.headers.emplace_back("Retry-After", "1");
    } catch (const ShuttingDown& e) {
      res = error(503, e.what());
    } catch (const ClientGone& e) {
      res = error(503, e.what());        // nobody reads it
    } catch (const std::exception& e) {  // the client gets no internal text; the log does
      std::fprintf(stderr, "serve: internal error on %s %s: %s\n", req.method.c_str(), endpoint_label(req.path).c_str(), e.what());
      res = error(500, "internal error");
    }
    if (is_openai_path(req.path)) to_openai_error(res);
    add_cors_headers(policy, req, res);
    return res;
  }

  Route api(const char* method, const char* path, json (*fn)(const Context&, const Request&)) {
    return {method, path, false, true, false, [this, fn](const Request& r) { return json_response(fn(ctx, r)); }};
  }

  std::vector<Route> make_routes() {
    std::vector<Route> r = {api("POST", "/v1/embed/text", embed_text), api("POST", "/v1/embed/image", embed_image),
                            api("POST", "/v1/classify", classify), api("GET", "/v1/search", search),
                            api("POST", "/v1/search", search)};
    r.push_back({"GET", "/v1/images/", true, true, false, [this](const Request& q) { return image_file(q); }});
    r.push_back(
        {"POST", "/v1/embeddings", false, true, false, [this](const Request& q) { return openai_embeddings(ctx, q); }});
    for (const char* models : {"/v1/models", "/v1/models/"})
      r.push_back(
          {"GET", models, models[10] == '/', true, true, [this](const Request& q) { return openai_models(ctx, q); }});
    r.push_back({"GET", "/healthz", false, false, true, [this](const Request&) {
                   return json_response({{"status", "ok"}, {"model", opt.model}, {"embed_dim", enc.embed_dim()},
                                         {"queue_depth", batcher.queue_depth()},
                                         {"index", searcher ? json(searcher->meta().count) : json(nullptr)}});
                 }});
    r.push_back({"GET", "/metrics", false, true, true, [this](const Request&) {
                   metrics.set_queue_depth(batcher.queue_depth());
                   Response res;
                   res.content_type = "text/plain; version=0.0.4; charset=utf-8";
                   res.body = metrics.render();
                   return res;
                 }});
    r.push_back({"GET", "/", false, false, true, [](const Request&) {
                   Response res;
                   res.content_type = "text/html; charset=utf-8";
                   res.body = std::string(search_page());
                   return res;
                 }});
    return r;
  }

  // "" when the item's bytes decode whole as an image (not only their first bytes: a file
  // cut short or damaged after the build is not served); otherwise the decoder's error.
  // JPEGs are decoded at 1/8 scale (every byte is still entropy-decoded).
  std::string decode_check(uint64_t id, const index::ItemFile& f) {
    struct stat st {};
    if (fstat(f.file.fd(), &st) != 0) return "the file cannot be examined";
    const std::string stamp = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                              std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                              std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
                              std::to_string(st.st_ctim.tv_nsec) + ":" + std::to_string(f.offset);
    std::lock_guard<std::mutex> lock(verify_mu);
    if (auto at = verified.find(id); at != verified.end() && at->second == stamp) return "";
    if (f.size > (uint64_t(256) << 20)) return "it is over the 256 MiB the server decodes to check an image";
    auto bytes = f.file.read(f.offset, f.size);
    if (!bytes) return "it cannot be read";
    DecodeOptions d;
    d.max_pixels = opt.max_pixels;
    d.min_shortest_side = 1;
    auto img = decode_image(bytes.value(), d);
    if (!img) return img.error();
    verified[id] = stamp;
    return "";
  }

  Response image_file(const Request& req) {
    if (!searcher) return error(404, "no index loaded");
    const std::string id_s = req.path.substr(std::string("/v1/images/").size());
    if (id_s.empty() || id_s.find_first_not_of("0123456789") != std::string::npos) return error(404, "no such endpoint");
    if (id_s.size() > 12 || std::stoull(id_s) >= searcher->items().size()) return error(404, "no image " + id_s + " in the index");
    const index::Item& it = searcher->items()[std::stoull(id_s)];
    auto f = index::open_item(it, searcher->meta().roots);
    if (!f) {  // the reason names paths: the log gets it, the client does not
      std::fprintf(stderr, "serve: image %s not served: %s\n", id_s.c_str(), f.error().c_str());
      return error(404, "image " + id_s + " cannot be read (the server's log says why)");
    }
    uint8_t head[16] = {};
    const size_t n_head = size_t(std::min<uint64_t>(sizeof head, f->size));
    if (!f->file.read(f->offset, {head, n_head}).ok()) return error(404, "image " + id_s + " cannot be read");
    const ImageFormat fmt = sniff_format({head, n_head});
    // Only what was indexed: an image whose bytes are of the kind its name says (a file
    // replaced after the build by something else is not served as octet-stream).
    if (fmt == ImageFormat::Unknown || (it.size == 0 && !matches_extension(fmt, it.path)))
      return error(404, "image " + id_s + " is no longer the image that was indexed (" + it.key + ")");
    if (auto bad = decode_check(std::stoull(id_s), *f); !bad.empty())
      return error(404, "image " + id_s + " (" + it.key + ") does not decode: " + bad);
    Response res;
    res.content_type = fmt == ImageFormat::Jpeg ? "image/jpeg" : fmt == ImageFormat::Png ? "image/png" : "image/webp";
    res.headers.emplace_back("Accept-Ranges", "bytes");
    const uint64_t size = f->size;
    const std::string* range_header = req.header("range");
    const auto range = range_header ? http::single_range(*range_header, size) : std::nullopt;
    if (range && range->unsatisfiable) {
      res = error(416, "the range is outside the image");
      res.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
      return res;
    }
    // Streamed from the open file (checked above) as the client reads: the server holds
    // 64 KiB per connection, not the image (issue 40, item 9).
    res.file = std::make_shared<const io::ReadFile>(std::move(f->file));
    res.file_offset = f->offset + (range ? range->first : 0);
    res.file_size = range ? range->last - range->first + 1 : size;
    if (range) {
      res.status = 206;
      res.headers.emplace_back("Content-Range", "bytes " + std::to_string(range->first) + "-" +
                                                    std::to_string(range->last) + "/" + std::to_string(size));
    }
    return res;
  }
};

Server::Server(const ServeOptions& opt) : impl_(std::make_unique<Impl>(opt)) {}
Server::~Server() = default;

int Server::bind() {
  const int port = impl_->http.bind();
  if (port <= 0) OC_USER_ERROR("cannot listen on {}:{} (is the port in use, or the address not local?)", impl_->opt.host, impl_->opt.port);
  return port;
}

void Server::run() {
  impl_->http.run(impl_->opt.drain_seconds);  // returns after stop(), once drained
  impl_->batcher.stop();                       // finishes whatever is queued
}

void Server::stop() { impl_->http.stop(); }

}  // namespace oc::serve
