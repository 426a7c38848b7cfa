// openclip serve: the model (and an index) behind an HTTP JSON API with dynamic batching
// (docs/SERVE.md). SIGTERM/SIGINT stop accepting connections, answer what is in progress
// within --drain-seconds and finish what is queued.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "core/fs.h"
#include "model/model_source.h"
#include "serve/access.h"
#include "serve/server.h"

namespace oc::cli {
namespace {

int g_pipe[2] = {-1, -1};

void on_signal(int) {
  const char c = 's';
  const ssize_t r = write(g_pipe[1], &c, 1);
  (void)r;
}

// The key is the file's first line, without surrounding whitespace; the file is at most
// 4 KiB (a key is a few dozen bytes; a 1 GiB sparse file is refused, not read).
std::string read_key_file(const std::string& path) {
  fs::ReadOptions ro;
  ro.cap = {"the 4 KiB API key file cap", 4096};
  auto text = fs::read_text(path, ro);
  if (!text) OC_USER_ERROR("--api-key-file {}: {}", path, text.error());
  std::string key = text.value().substr(0, text.value().find('\n'));
  key.erase(0, key.find_first_not_of(" \t\r"));
  key.erase(key.find_last_not_of(" \t\r") + 1);
  if (key.empty()) OC_USER_ERROR("--api-key-file {}: the first line is empty", path);
  return key;
}

int run(const std::vector<std::string>& args) {
  ServeArgs a;
  if (!parse_flags("serve", args, &a)) return 0;
  if ((a.weights.empty() && !model_carries_weights(a.model)) != a.random_init)
    OC_USER_ERROR(
        "serve needs --pretrained WEIGHTS|TAG|hf-hub:ORG/NAME or --model a hub folder or hf-hub:ORG/NAME "
        "(or --random-init, without them)");
  serve::ServeOptions& s = a;
  if (!a.api_key_file.empty()) s.api_key = read_key_file(a.api_key_file);
  s.allowed_hosts = serve::split_list(a.allowed_hosts_list);
  s.cors_origins = serve::split_list(a.cors_origin_list);
  if (s.port < 0 || s.port > 65535) OC_USER_ERROR("--port must be 0..65535");
  if (s.max_batch < 1 || s.max_wait_ms < 0 || s.max_queue < 1 || s.max_inputs < 1 || s.max_connections < 1)
    OC_USER_ERROR("--max-batch, --max-queue, --max-inputs and --max-connections must be at least 1, --max-wait-ms at least 0");
  if (s.max_connections_per_client < 0)
    OC_USER_ERROR("--max-connections-per-client must be at least 0 (0: --max-connections / 8)");
  if (s.header_timeout_s < 1 || s.body_timeout_s < 1 || s.drain_seconds < 0)
    OC_USER_ERROR("--header-timeout and --body-timeout must be at least 1 second, --drain-seconds at least 0");
  if (s.allow_private_image_urls && !s.allow_image_urls)
    OC_USER_ERROR(
        "--allow-private-image-urls widens --allow-image-urls: give both (image URLs are not fetched without "
        "--allow-image-urls)");
  // SIGTERM/SIGINT: the handler only writes a byte to a pipe (async-signal-safe); a watcher
  // thread reads it and stops the server outside the handler. (Masking plus sigwait is not
  // enough: threads started before this point, by libraries, would take the default action.)
  if (pipe(g_pipe) != 0) OC_USER_ERROR("serve: cannot create the signal pipe");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  serve::Server server(s);
  const int port = server.bind();
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::thread waiter([&] {
    char c = 0;
    while (read(g_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    if (c == 's') {
      std::fprintf(stderr, "serve: signal received, draining (at most %g s)\n", s.drain_seconds);
      server.stop();
    }
  });
  std::printf("serve: listening on http://%s:%d/ (model %s%s%s)\n", s.host.c_str(), port, s.model.c_str(),
              s.index_dir.empty() ? "" : ", index ", s.index_dir.c_str());
  std::fflush(stdout);
  server.run();
  const char q = 'q';  // wakes the waiter if run() ended otherwise
  if (write(g_pipe[1], &q, 1) != 1) std::fprintf(stderr, "serve: cannot wake the signal watcher\n");
  waiter.join();
  std::fprintf(stderr, "serve: stopped\n");
  return 0;
}

OC_REGISTER_COMMAND("serve", "HTTP server: embeddings, classify, index search and a search page", run);

}  // namespace
}  // namespace oc::cli
