// The HTTP/1.1 server under `openclip serve`: one epoll thread owns every socket (accept,
// non-blocking reads fed to http::RequestParser, writes, deadlines), and a pool of handler
// threads runs complete requests. So a slow or idle client costs a buffer and no thread,
// and the limits hold whatever the clients do:
//   - a listen backlog of 4096 (the kernel clamps it to net.core.somaxconn);
//   - at most max_connections open; the excess gets a 503 and is closed at once; at most
//     max_connections_per_client from one address (429 beyond); out of descriptors, the
//     listener is left alone for 100 ms (the rest is served);
//   - one deadline for a request's headers (from its first byte) and one for its body,
//     whatever the pace of the bytes (408), an idle keep-alive timeout, a write deadline;
//   - a minimum body rate: after a grace period the body's bytes must keep up with
//     min_body_rate bytes/s (408 and a log line otherwise: a byte every few seconds holds
//     nothing for long);
//   - a token bucket of requests per client address (429 + Retry-After; serve/rate_limit.h);
//   - a cap on the response bytes waiting to be written over all connections: a response
//     that does not fit first closes connections whose clients have read nothing for
//     kStall (they do not read; a log line names them), else it becomes a 503;
//   - request line, header and body caps (RequestParser), and a cap on the body bytes held
//     over all connections (503 above it);
//   - at most max_pending requests handed to the handler threads and not yet answered:
//     the next one gets the `busy` response (503 + Retry-After) at once.
// stop() (any thread, async-signal-safe) closes the listener; run() then answers what is in
// progress and returns when all is done or after drain_seconds, closing what is left.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "serve/http.h"

namespace oc::serve::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port
  Limits limits;
  int threads = 128;                // handler threads
  int max_connections = 1000;
  int max_connections_per_client = 0;  // per client address (IPv6: per /64); 0: max_connections / 8, at least 8
  int max_pending = 256;
  size_t max_buffered_body = 1u << 30;
  double header_timeout_s = 10, body_timeout_s = 60, idle_timeout_s = 5, write_timeout_s = 60;
  double min_body_rate = 0, body_rate_grace_s = 2;  // bytes/s after the grace; 0: no minimum
  double rate_per_client = 0, rate_burst = 0;       // requests/s per address; 0: no limit
  size_t max_unsent = 256u << 20;                   // response bytes not yet written, all connections
};

struct Hooks {
  // Once the headers are in, before the body is read: a response here refuses the request.
  std::function<std::optional<Response>(const Request&)> check_head;
  // Cheap endpoints answered on the I/O thread (never queued, so served under overload).
  std::function<bool(const Request&)> run_inline;
  std::function<Response(const Request&)> handle;  // on a handler thread (or inline)
  std::function<Response()> busy;                   // max_pending reached
  // When the drain ends (stop() + drain_seconds, or everything answered): drop queued work
  // so that the handler threads return at once. Optional.
  std::function<void()> drain_end;
  // Every response, on the I/O thread; seconds since the request was complete.
  std::function<void(const Request&, const Response&, double seconds)> answered;
};

class HttpServer {
 public:
  HttpServer(const ServerOptions& opt, Hooks hooks);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int bind();  // the port, or -1 when the address cannot be bound
  void run(double drain_seconds);
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::serve::http
