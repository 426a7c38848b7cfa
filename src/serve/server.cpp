#include "serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "core/check.h"
#include "image/codec.h"
#include "index/checksum.h"
#include "index/sources.h"
#include "serve/handlers.h"
#include "serve/page.h"

namespace oc::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

thread_local Clock::time_point t_start;

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& msg) {
  send_json(res, status, {{"error", {{"code", status}, {"message", msg}}}});
}

// Metric label for a path: the endpoints themselves, everything else as "other".
std::string endpoint_label(const std::string& path) {
  for (const char* p : {"/v1/embed/text", "/v1/embed/image", "/v1/classify", "/v1/search", "/healthz", "/metrics"})
    if (path == p) return p;
  if (path.rfind("/v1/images/", 0) == 0) return "/v1/images";
  if (path == "/") return "/";
  return "other";
}

const char* default_message(int status) {
  switch (status) {
    case 400: return "malformed request";
    case 404: return "no such endpoint";
    case 405: return "method not allowed";
    case 413: return "the request body is over the size limit";
    case 414: return "the request URI is too long";
    case 503: return "the server is busy";
    default: return "request failed";
  }
}

}  // namespace

struct Server::Impl {
  ServeOptions opt;
  index::Encoder enc;
  Metrics metrics;
  std::optional<index::Searcher> searcher;
  Batcher batcher;
  httplib::Server svr;
  Context ctx;

  explicit Impl(const ServeOptions& o)
      : opt(o),
        enc({o.model, o.weights, o.precision, o.max_batch}),
        searcher(open_index(o)),
        batcher(enc, {o.max_batch, o.max_wait_ms, o.max_queue}, &metrics),
        ctx{opt, enc, batcher, searcher ? &*searcher : nullptr} {
    routes();
  }

  static std::optional<index::Searcher> open_index(const ServeOptions& o) {
    if (o.index_dir.empty()) return std::nullopt;
    std::optional<index::Searcher> s(std::in_place, o.index_dir);
    index::check_same_model(s->meta(), o.index_dir, o.model, index::weights_checksum(o.weights));
    return s;
  }

  // Wraps an endpoint body: JSON result or JSON error, 503 + Retry-After when the queue is full.
  httplib::Server::Handler wrap(json (*fn)(const Context&, const httplib::Request&)) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        send_json(res, 200, fn(ctx, req));
      } catch (const HttpError& e) {
        send_error(res, e.status, e.what());
      } catch (const QueueFull& e) {
        res.set_header("Retry-After", "1");
        send_error(res, 503, e.what());
      } catch (const ShuttingDown& e) {
        send_error(res, 503, e.what());
      } catch (const std::exception& e) {
        send_error(res, 500, e.what());
      }
    };
  }

  void image_file(const httplib::Request& req, httplib::Response& res) {
    if (!searcher) return send_error(res, 404, "no index loaded");
    const std::string id_s = req.matches[1];
    const size_t id = std::stoul(id_s);  // the route's pattern allows digits only
    if (id_s.size() > 12 || id >= searcher->items().size()) return send_error(res, 404, "no image " + id_s + " in the index");
    auto bytes = index::read_item_bytes(searcher->items()[id]);
    if (!bytes) return send_error(res, 404, bytes.error());
    const char* type = "application/octet-stream";
    switch (sniff_format(bytes.value())) {
      case ImageFormat::Jpeg: type = "image/jpeg"; break;
      case ImageFormat::Png: type = "image/png"; break;
      case ImageFormat::Webp: type = "image/webp"; break;
      default: break;
    }
    res.set_content(std::string(bytes.value().begin(), bytes.value().end()), type);
  }

  void routes() {
    const size_t threads = size_t(std::max(4, opt.http_threads));
    svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server on
    // the same port starts silently and the kernel splits connections between the two.
    svr.set_socket_options([](int sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    svr.set_payload_max_length(opt.max_body);
    svr.set_keep_alive_max_count(100000);
    svr.set_keep_alive_timeout(2);
    svr.set_read_timeout(10, 0);
    svr.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      t_start = Clock::now();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) send_error(res, res.status, default_message(res.status));
    });
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const double s = t_start == Clock::time_point{} ? 0 : std::chrono::duration<double>(Clock::now() - t_start).count();
      t_start = {};
      metrics.request(endpoint_label(req.path), res.status, s);
    });
    svr.Post("/v1/embed/text", wrap(embed_text));
    svr.Post("/v1/embed/image", wrap(embed_image));
    svr.Post("/v1/classify", wrap(classify));
    svr.Get("/v1/search", wrap(search));
    svr.Post("/v1/search", wrap(search));
    svr.Get(R"(/v1/images/(\d+))", [this](const httplib::Request& q, httplib::Response& r) { image_file(q, r); });
    svr.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      json j = {{"status", "ok"}, {"model", opt.model}, {"embed_dim", enc.embed_dim()},
                {"queue_depth", batcher.queue_depth()}, {"index", searcher ? json(searcher->meta().count) : json(nullptr)}};
      send_json(res, 200, j);
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      metrics.set_queue_depth(batcher.queue_depth());
      res.set_content(metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
    });
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(search_page(), "text/html; charset=utf-8"); });
  }
};

Server::Server(const ServeOptions& opt) : impl_(std::make_unique<Impl>(opt)) {}
Server::~Server() = default;

int Server::bind() {
  auto& o = impl_->opt;
  const int port = o.port == 0 ? impl_->svr.bind_to_any_port(o.host) : (impl_->svr.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) OC_USER_ERROR("cannot listen on {}:{} (is the port in use, or the address not local?)", o.host, o.port);
  return port;
}

void Server::run() {
  impl_->svr.listen_after_bind();  // returns after stop(), once the connection threads are done
  impl_->batcher.stop();           // nothing should be left; finishes whatever is
}

void Server::stop() { impl_->svr.stop(); }

}  // namespace oc::serve
