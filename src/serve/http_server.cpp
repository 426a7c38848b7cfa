#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "serve/rate_limit.h"

namespace oc::serve::http {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kListenId = 0, kWakeId = 1;
constexpr int kBacklog = 4096;             // the kernel clamps it to net.core.somaxconn
constexpr auto kLinger = std::chrono::seconds(2);  // reading a refused request's tail before close
constexpr int kAcceptBurst = 64;                   // connections taken per wake-up: the other sockets get their turn
constexpr auto kFdPause = std::chrono::milliseconds(100);  // no accepting after EMFILE/ENFILE
constexpr uint64_t kFilePiece = 64 << 10;                  // a file body is read this much at a time
constexpr auto kStall = std::chrono::seconds(2);           // a writer that made no progress this long may be closed

Clock::duration seconds(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

std::string refusal(int status, const std::string& msg) {
  Response r = json_error(status, msg);
  r.headers.emplace_back("Retry-After", "1");
  return serialize(r, false);
}
// The answers to a connection over a cap, sent as it is accepted.
const std::string& too_many_connections() {
  static const std::string bytes = refusal(503, "too many connections; retry later");
  return bytes;
}
const std::string& too_many_from_client() {
  static const std::string bytes = refusal(429, "too many connections from your address; retry later");
  return bytes;
}

// The address a connection counts against: IPv4 (also IPv4-mapped IPv6) whole, IPv6 by its
// /64 (one host's addresses).
std::string client_key(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET)
    return std::string(reinterpret_cast<const char*>(&reinterpret_cast<const sockaddr_in&>(ss).sin_addr), 4);
  if (ss.ss_family != AF_INET6) return "?";
  const auto* a = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr.s6_addr;
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a, mapped, 12) == 0) return std::string(reinterpret_cast<const char*>(a + 12), 4);
  return std::string(reinterpret_cast<const char*>(a), 8);
}

// A client_key as text, for the log: an IPv4 address, or an IPv6 /64.
std::string client_text(const std::string& key) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (key.size() == 4) inet_ntop(AF_INET, key.data(), buf, sizeof buf);
  if (key.size() != 8) return buf;
  uint8_t a[16] = {};
  std::memcpy(a, key.data(), 8);
  inet_ntop(AF_INET6, a, buf, sizeof buf);
  return std::string(buf) + "/64";
}

struct Conn {
  enum class St { Reading, Waiting, Writing, Closing };
  int fd = -1;
  St st = St::Reading;
  std::string in, out;
  size_t out_at = 0;
  std::optional<RequestParser> parser;
  Request req;                 // the request being answered (for the `answered` hook)
  bool head_checked = false, keep_alive = false, timed = false;  // timed: header deadline set
  bool eof = false;                          // the client half-closed after sending (its request is still answered)
  bool http11 = false, probed = false;       // a waiting request's client may be asked if it is still there
  std::string client;                        // client_key, for the per-address cap
  std::shared_ptr<std::atomic<bool>> gone;   // the waiting request's flag (Request::gone)
  std::shared_ptr<const io::ReadFile> file;  // a file body being streamed: [file_at, file_end) left
  uint64_t file_at = 0, file_end = 0;
  size_t reserved = 0;         // body bytes counted against max_buffered_body
  size_t counted = 0;          // out bytes not yet written, counted against max_unsent
  uint64_t body_bytes = 0;     // bytes read after the headers (the minimum body rate)
  Clock::time_point body_start{}, body_end = Clock::time_point::max(), last_sent{};
  Clock::time_point deadline = Clock::time_point::max();
};

struct Task {
  uint64_t id;
  Request req;
  Clock::time_point start;
  Response res;
};

}  // namespace

struct HttpServer::Impl {
  ServerOptions opt;
  Hooks hooks;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, spare_fd = -1;
  std::unordered_map<uint64_t, Conn> conns;
  std::unordered_map<std::string, int> per_client;             // open connections by client_key
  Clock::time_point accept_resume = Clock::time_point::max();  // accepting paused until then
  uint64_t next_id = 2;
  int closing = 0, pending = 0;
  size_t buffered = 0;
  size_t unsent = 0;  // response bytes waiting to be written, over all connections
  RateLimiter limiter{opt.rate_per_client, opt.rate_burst};
  Clock::time_point next_sweep = Clock::time_point::max();
  std::vector<uint64_t> ready;  // keep-alive connections with pipelined bytes to parse
  std::atomic<bool> stopping{false};

  std::mutex mu;  // the handler queue and the answers
  std::condition_variable cv;
  std::deque<Task> tasks;
  std::vector<Task> answers;
  bool workers_quit = false;
  std::vector<std::thread> workers;

  explicit Impl(const ServerOptions& o, Hooks h) : opt(o), hooks(std::move(h)) {
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    watch(wake_fd, kWakeId, EPOLLIN, EPOLL_CTL_ADD);
  }
  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd, spare_fd})
      if (fd >= 0) close(fd);
  }

  void watch(int fd, uint64_t id, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(epoll_fd, op, fd, &ev);
  }
  void set_deadline(Conn& c, Clock::time_point t) {
    c.deadline = t;
    next_sweep = std::min(next_sweep, t);
  }

  int bind_listener() {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo(opt.host.c_str(), std::to_string(opt.port).c_str(), &hints, &res) != 0) return -1;
    for (addrinfo* a = res; a && listen_fd < 0; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      int yes = 1;  // SO_REUSEADDR only: with SO_REUSEPORT a second server would share the port
      if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) == 0 &&
          ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, kBacklog) == 0)
        listen_fd = fd;
      else if (fd >= 0)
        close(fd);
    }
    freeaddrinfo(res);
    if (listen_fd < 0) return -1;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len);
    watch(listen_fd, kListenId, EPOLLIN, EPOLL_CTL_ADD);
    return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }

  int client_cap() const {
    return opt.max_connections_per_client > 0 ? opt.max_connections_per_client : std::max(8, opt.max_connections / 8);
  }

  // Out of descriptors (EMFILE/ENFILE): the waiting connection cannot be taken and the
  // listener stays readable, so accepting again at once spun for ever (issue 42, item 5).
  // Refuse one through the spare descriptor, then leave the listener alone for kFdPause:
  // open connections, answers and signals are served meanwhile.
  void out_of_descriptors() {
    if (spare_fd >= 0) {
      close(spare_fd);
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) send(fd, too_many_connections().data(), too_many_connections().size(), MSG_NOSIGNAL), close(fd);
      spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    watch(listen_fd, kListenId, 0, EPOLL_CTL_MOD);
    accept_resume = Clock::now() + kFdPause;
  }

  void resume_accepting(Clock::time_point now) {
    if (now < accept_resume) return;
    accept_resume = Clock::time_point::max();
    if (listen_fd >= 0) watch(listen_fd, kListenId, EPOLLIN, EPOLL_CTL_MOD);
  }

  void accept_all() {
    for (int i = 0; i < kAcceptBurst; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0 && (errno == EMFILE || errno == ENFILE)) return out_of_descriptors();
      if (fd < 0) return;  // EAGAIN, or an aborted connection
      std::string who = client_key(ss);
      if (auto at = per_client.find(who); at != per_client.end() && at->second >= client_cap()) {
        // One address holding its share is refused at once, without a linger: its slots
        // cost it what they cost us (issue 40, item 4).
        send(fd, too_many_from_client().data(), too_many_from_client().size(), MSG_NOSIGNAL);
        close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const uint64_t id = next_id++;
      Conn& c = conns[id];
      c.fd = fd;
      ++per_client[who];
      c.client = std::move(who);
      if (int(conns.size()) - closing > opt.max_connections) {  // over the cap: answer and linger
        send(fd, too_many_connections().data(), too_many_connections().size(), MSG_NOSIGNAL);
        if (closing >= opt.max_connections) {
          close_conn(id);
          continue;
        }
        watch(fd, id, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
        linger(c);
        continue;
      }
      c.parser.emplace(opt.limits);
      c.timed = true;  // a fresh connection's header deadline runs from the connect
      set_deadline(c, Clock::now() + seconds(opt.header_timeout_s));
      watch(fd, id, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    }
  }

  void close_conn(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    if (c.st == Conn::St::Closing) --closing;
    buffered -= c.reserved;
    unsent -= c.counted;
    if (c.gone) c.gone->store(true);  // its queued work is dropped
    if (auto at = per_client.find(c.client); at != per_client.end() && --at->second <= 0) per_client.erase(at);
    close(it->second.fd);  // also removes it from the epoll set
    conns.erase(it);
  }

  // After a response that leaves bytes unread: half-close and read the rest briefly, so the
  // client gets the response rather than a reset.
  void linger(Conn& c) {
    shutdown(c.fd, SHUT_WR);
    c.st = Conn::St::Closing;
    ++closing;
    c.in.clear();
    c.in.shrink_to_fit();
    set_deadline(c, Clock::now() + kLinger);
  }

  // false when the connection is gone (closed or over).
  bool read_some(uint64_t id, Conn& c) {
    char buf[65536];
    for (int i = 0; i < 4; ++i) {
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n > 0 && c.st == Conn::St::Closing) continue;  // discarded
      if (n > 0) {
        c.in.append(buf, size_t(n));
        if (c.head_checked) c.body_bytes += uint64_t(n);
        if (size_t(n) < sizeof buf) return true;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
      if (n == 0 && c.st == Conn::St::Reading && !c.in.empty()) {
        // A half-close after the request (shutdown(SHUT_WR)): what arrived is parsed and
        // answered first; EOF used to drop a complete request when the bytes came in
        // multiples of the buffer (issue 40, item 10).
        c.eof = true;
        watch(c.fd, id, 0, EPOLL_CTL_MOD);
        return true;
      }
      close_conn(id);  // EOF or error: the client is gone
      return false;
    }
    return true;
  }

  void on_event(uint64_t id, uint32_t events) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    if (c.st == Conn::St::Writing && (events & EPOLLOUT)) return flush(id, c);
    if ((events & (EPOLLERR | EPOLLHUP)) && c.st != Conn::St::Reading && c.st != Conn::St::Closing) return close_conn(id);
    if (c.st == Conn::St::Waiting && (events & EPOLLRDHUP)) return probe(id, c);
    if (c.st == Conn::St::Waiting || c.st == Conn::St::Writing) return;
    if (!read_some(id, c) || c.st == Conn::St::Closing) return;
    process(id, c);
  }

  // A waiting request's client sent FIN: it left, or it half-closed and waits for the answer.
  // An HTTP/1.1 client is sent an interim 100 (every 1.1 client reads 1xx): a client that
  // left answers with a reset, reported as EPOLLHUP/EPOLLERR, and the connection closes,
  // dropping its queued work (issue 40, item 6). FIN is not watched again.
  void probe(uint64_t id, Conn& c) {
    if (c.http11 && !c.probed) send(c.fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL);
    c.probed = true;
    watch(c.fd, id, 0, EPOLL_CTL_MOD);
  }

  void process(uint64_t id, Conn& c) {
    const auto st = c.parser->feed(c.in);
    const auto now = Clock::now();
    if (!c.timed && c.parser->started()) {  // the header deadline runs from the first byte
      c.timed = true;
      set_deadline(c, now + seconds(opt.header_timeout_s));
    }
    if (st == RequestParser::State::Error) {
      c.req = std::move(c.parser->request());
      return respond(id, c, json_error(c.parser->error_status(), c.parser->error_message()), now);
    }
    if (st == RequestParser::State::Head) return c.eof ? close_conn(id) : void();
    Request& req = c.parser->request();
    if (!c.head_checked) {
      c.head_checked = true;
      auto refusal = rate_refusal(c, now);
      if (!refusal) refusal = hooks.check_head(req);
      if (refusal) {
        refusal->close = refusal->close || req.has_body();
        c.req = std::move(req);
        return respond(id, c, std::move(*refusal), now);
      }
      if (st == RequestParser::State::Body) {
        c.body_start = now;
        c.body_bytes = 0;
        c.body_end = now + seconds(opt.body_timeout_s);
        const std::string* expect = req.header("expect");
        if (expect && *expect == "100-continue") send(c.fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL);
      }
    }
    // The body budget is charged with the memory the bodies hold, as their bytes arrive: a
    // header alone reserves nothing (issue 40, item 5).
    const size_t held = c.parser->body_bytes_held();
    if (held > c.reserved) {
      if (buffered + held - c.reserved > opt.max_buffered_body) {
        c.req = std::move(req);
        Response r = json_error(503,
                                "the server's memory for request bodies (--max-buffered-body) is in use by "
                                "other requests; retry later");
        r.headers.emplace_back("Retry-After", "1");
        return respond(id, c, std::move(r), now);
      }
      buffered += held - c.reserved;
      c.reserved = held;
    }
    if (st == RequestParser::State::Body) body_deadline(c);
    if (st == RequestParser::State::Done) dispatch(id, c, now);
    else if (c.eof)
      close_conn(id);  // the client closed before its request was whole
  }

  // 429 + Retry-After when the client's address has no request token left (--rate-limit).
  std::optional<Response> rate_refusal(const Conn& c, Clock::time_point now) {
    const double wait = limiter.take(c.client, now);
    if (wait <= 0) return std::nullopt;
    Response r = json_error(429, "too many requests from your address (the server's --rate-limit); retry after " +
                                     std::to_string(int(std::ceil(wait))) + " s");
    r.headers.emplace_back("Retry-After", std::to_string(int(std::ceil(wait))));
    return r;
  }

  // The body's deadline: --body-timeout, and the minimum rate's: after the grace, the bytes
  // so far must keep up with min_body_rate (a byte every few seconds is cut off in seconds).
  void body_deadline(Conn& c) {
    auto t = c.body_end;
    if (opt.min_body_rate > 0)
      t = std::min(t, c.body_start + seconds(opt.body_rate_grace_s + double(c.body_bytes) / opt.min_body_rate));
    set_deadline(c, t);
  }

  void dispatch(uint64_t id, Conn& c, Clock::time_point now) {
    c.st = Conn::St::Waiting;
    c.deadline = Clock::time_point::max();
    // Errors and hang-ups are reported; a FIN (EPOLLRDHUP) is probed once (probe()).
    watch(c.fd, id, c.eof ? 0u : uint32_t(EPOLLRDHUP), EPOLL_CTL_MOD);
    Request req = std::move(c.parser->request());
    c.http11 = req.minor_version >= 1;
    c.probed = c.eof;
    req.gone = c.gone = std::make_shared<std::atomic<bool>>(false);
    if (hooks.run_inline(req)) {
      Response r = hooks.handle(req);
      c.req = std::move(req);
      return respond(id, c, std::move(r), now);
    }
    if (pending >= opt.max_pending) {
      c.req = std::move(req);
      return respond(id, c, hooks.busy(), now);
    }
    ++pending;
    {
      std::lock_guard<std::mutex> l(mu);
      tasks.push_back({id, std::move(req), now, {}});
    }
    cv.notify_one();
  }

  void respond(uint64_t id, Conn& c, Response r, Clock::time_point start) {
    const bool complete = c.parser->state() == RequestParser::State::Done || c.parser->state() == RequestParser::State::Body;
    c.keep_alive = !r.close && complete && c.req.keep_alive() && !stopping.load() && !c.eof;
    c.gone.reset();
    c.out = serialize(r, c.keep_alive);
    if (!admit(c.out.size() + (r.file ? size_t(std::min<uint64_t>(kFilePiece, r.file_size)) : 0))) {
      r = json_error(503,
                     "the server's memory for responses not yet read by their clients (--max-unsent-bytes) is full; "
                     "retry later");
      r.headers.emplace_back("Retry-After", "1");
      c.keep_alive = false;
      c.out = serialize(r, false);
    }
    if (hooks.answered) hooks.answered(c.req, r, std::chrono::duration<double>(Clock::now() - start).count());
    c.out_at = 0;
    c.file = std::move(r.file);
    c.file_at = r.file_offset;
    c.file_end = r.file_offset + r.file_size;
    c.st = Conn::St::Writing;
    c.last_sent = Clock::now();
    set_deadline(c, c.last_sent + seconds(opt.write_timeout_s));
    flush(id, c);
  }

  // Room for `bytes` more unsent response bytes under max_unsent: connections whose clients
  // have read nothing for kStall are closed, longest stalled first, until they fit (issue 40,
  // item 9: clients that never read held every response in memory for the write deadline).
  // A response always goes out when nothing else is waiting. False: no room.
  bool admit(size_t bytes) {
    if (unsent == 0 || unsent + bytes <= opt.max_unsent) return true;
    const auto now = Clock::now();
    std::vector<std::pair<Clock::time_point, uint64_t>> stalled;
    for (auto& [id, c] : conns)
      if (c.st == Conn::St::Writing && c.counted > 0 && c.last_sent + kStall <= now)
        stalled.emplace_back(c.last_sent, id);
    std::sort(stalled.begin(), stalled.end());
    for (auto& [since, id] : stalled) {
      if (unsent == 0 || unsent + bytes <= opt.max_unsent) break;
      const Conn& c = conns.at(id);
      std::fprintf(stderr,
                   "serve: closed a connection from %s: its client read none of its response for %.0f s while the "
                   "memory for unsent responses (--max-unsent-bytes %zu) was full (%zu bytes were waiting for it)\n",
                   client_text(c.client).c_str(), std::chrono::duration<double>(now - since).count(), opt.max_unsent,
                   c.counted);
      close_conn(id);
    }
    return unsent == 0 || unsent + bytes <= opt.max_unsent;
  }

  void recount(Conn& c) {
    unsent -= c.counted;
    c.counted = c.out.size() - c.out_at;
    unsent += c.counted;
  }

  // The next piece of a file body into the emptied output buffer; false when the file can no
  // longer be read (the connection is closed: the client sees a short body, never other bytes).
  bool refill(Conn& c) {
    const size_t n = size_t(std::min<uint64_t>(kFilePiece, c.file_end - c.file_at));
    c.out.resize(n);
    c.out_at = 0;
    if (!c.file->read(c.file_at, {reinterpret_cast<uint8_t*>(c.out.data()), n}).ok()) return false;
    c.file_at += n;
    return true;
  }

  void flush(uint64_t id, Conn& c) {
    for (;;) {
      if (c.out_at == c.out.size()) {
        if (!c.file || c.file_at >= c.file_end) break;
        if (!refill(c)) return close_conn(id);
      }
      const ssize_t n = send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_at += size_t(n);
        c.last_sent = Clock::now();
      } else if (n < 0 && errno == EAGAIN) {
        recount(c);
        return watch(c.fd, id, EPOLLOUT, EPOLL_CTL_MOD);
      } else if (!(n < 0 && errno == EINTR)) {
        return close_conn(id);
      }
    }
    buffered -= c.reserved;
    c.reserved = 0;
    c.file.reset();
    c.out.clear();
    c.out_at = 0;
    recount(c);
    c.out.shrink_to_fit();
    c.req = {};
    watch(c.fd, id, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
    if (!c.keep_alive) return linger(c);
    c.st = Conn::St::Reading;
    c.parser.emplace(opt.limits);
    c.head_checked = c.timed = false;
    set_deadline(c, Clock::now() + seconds(opt.idle_timeout_s));
    if (!c.in.empty()) ready.push_back(id);
  }

  // Deadlines: an idle connection closes quietly, a late request gets 408, a client that
  // does not read its response or its linger is closed.
  void sweep(Clock::time_point now) {
    next_sweep = now + std::chrono::seconds(1);
    std::vector<uint64_t> late;
    for (auto& [id, c] : conns) {
      if (c.deadline <= now) late.push_back(id);
      else next_sweep = std::min(next_sweep, c.deadline);
    }
    for (uint64_t id : late) {
      auto it = conns.find(id);  // a response's admission may have closed it
      if (it == conns.end()) continue;
      Conn& c = it->second;
      if (c.st == Conn::St::Reading && c.parser->started()) {
        c.req = std::move(c.parser->request());
        respond(id, c, late_request(c, now), now);
      } else {
        close_conn(id);
      }
    }
  }

  // 408 for a request past its deadline: the header or body timeout, or (before the body's
  // deadline) the minimum body rate, which the log names too.
  Response late_request(const Conn& c, Clock::time_point now) {
    if (!c.head_checked || now >= c.body_end) return json_error(408, "the request was not received in time");
    const double s = std::chrono::duration<double>(now - c.body_start).count();
    const std::string rate = std::to_string(int64_t(double(c.body_bytes) / std::max(s, 1e-3)));
    std::fprintf(stderr,
                 "serve: cut off a request body from %s: %llu bytes in %.1f s (%s bytes/s), under --min-body-rate %g\n",
                 client_text(c.client).c_str(), (unsigned long long)c.body_bytes, s, rate.c_str(), opt.min_body_rate);
    return json_error(408, "the request body arrived at " + rate + " bytes/s, under the server's minimum of " +
                               std::to_string(int64_t(opt.min_body_rate)) + " (--min-body-rate)");
  }

  void take_answers() {
    uint64_t n;
    if (read(wake_fd, &n, sizeof n) < 0) {
      // nothing to read: another wake-up took it
    }
    std::vector<Task> done;
    {
      std::lock_guard<std::mutex> l(mu);
      done.swap(answers);
    }
    for (auto& t : done) {
      --pending;
      auto it = conns.find(t.id);
      if (it == conns.end() || it->second.st != Conn::St::Waiting) continue;  // the client left
      it->second.req = std::move(t.req);
      respond(t.id, it->second, std::move(t.res), t.start);
    }
  }

  void worker() {
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return workers_quit || !tasks.empty(); });
        if (tasks.empty()) return;
        t = std::move(tasks.front());
        tasks.pop_front();
      }
      const bool large = t.req.body.size() > (size_t(1) << 20);
      try {
        // A request whose client has gone by the time a thread is free is not started.
        t.res = t.req.gone && t.req.gone->load() ? json_error(503, "the client went away") : hooks.handle(t.req);
      } catch (...) {
        t.res = json_error(500, "internal error");
      }
      if (large) {  // give a large request's memory back: 40 x 32 MB requests kept 1 GB (issue 42, item 12)
        t.req.body = std::string();
        malloc_trim(0);
      }
      {
        std::lock_guard<std::mutex> l(mu);
        answers.push_back(std::move(t));
      }
      wake();
    }
  }

  void wake() {
    const uint64_t one = 1;
    if (write(wake_fd, &one, sizeof one) < 0) {
      // the counter is full: the loop is awake anyway
    }
  }

  void begin_drain() {
    if (listen_fd >= 0) close(listen_fd), listen_fd = -1;
    std::vector<uint64_t> idle;
    for (auto& [id, c] : conns)
      if ((c.st == Conn::St::Reading && !c.parser->started()) || c.st == Conn::St::Closing) idle.push_back(id);
    for (uint64_t id : idle) close_conn(id);
  }

  void loop(double drain_seconds) {
    epoll_event evs[256];
    auto drain_end = Clock::time_point::max();
    for (;;) {
      auto now = Clock::now();
      if (stopping.load() && drain_end == Clock::time_point::max()) {
        drain_end = now + seconds(drain_seconds);
        begin_drain();
      }
      if (drain_end != Clock::time_point::max() && ((conns.empty() && pending == 0) || now >= drain_end)) break;
      resume_accepting(now);
      const auto until = std::min({next_sweep, drain_end, accept_resume, now + std::chrono::seconds(1)});
      const int ms = int(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1));
      const int n = epoll_wait(epoll_fd, evs, 256, ms);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = evs[i].data.u64;
        if (id == kListenId) accept_all();
        else if (id == kWakeId) take_answers();
        else on_event(id, evs[i].events);
      }
      while (!ready.empty()) {
        const uint64_t id = ready.back();
        ready.pop_back();
        auto it = conns.find(id);
        if (it != conns.end() && it->second.st == Conn::St::Reading) process(id, it->second);
      }
      now = Clock::now();
      if (now >= next_sweep) sweep(now);
    }
  }

  void run(double drain_seconds) {
    for (int i = 0; i < std::max(1, opt.threads); ++i) workers.emplace_back([this] { worker(); });
    loop(drain_seconds);
    // The drain deadline is a deadline (issue 40, item 7): queued work is dropped (the hook),
    // the clients still waiting get a 503, and nothing waits for the queue to be computed.
    if (hooks.drain_end) hooks.drain_end();
    std::vector<uint64_t> left;
    for (auto& [id, c] : conns) left.push_back(id);
    static const std::string bye = refusal(503, "the server is shutting down");
    for (uint64_t id : left) {
      if (conns.at(id).st == Conn::St::Waiting)
        send(conns.at(id).fd, bye.data(), bye.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close_conn(id);
    }
    {
      std::lock_guard<std::mutex> l(mu);
      workers_quit = true;
      tasks.clear();  // not started before the drain ended: dropped with their connections
    }
    cv.notify_all();
    for (auto& w : workers) w.join();
    workers.clear();
  }
};

HttpServer::HttpServer(const ServerOptions& opt, Hooks hooks) : impl_(std::make_unique<Impl>(opt, std::move(hooks))) {}
HttpServer::~HttpServer() = default;
int HttpServer::bind() { return impl_->bind_listener(); }
void HttpServer::run(double drain_seconds) { impl_->run(drain_seconds); }
void HttpServer::stop() {
  impl_->stopping.store(true);
  impl_->wake();
}

}  // namespace oc::serve::http
