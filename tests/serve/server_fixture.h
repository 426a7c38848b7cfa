// A real `openclip serve` process on 127.0.0.1 (port 0: the kernel picks one) for the server
// tests, plus test-tiny weights and small PNGs. The process gets SIGTERM when the fixture ends.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/fs.h"
#include "test_util.h"
#include "tiny_model_files.h"

namespace oc::test {

using Files = TinyModelFiles;

inline Files make_files(const std::string& name, int n_images = 6) {
  Files f = make_tiny_model_files(name);
  Rng rng(5);
  fs::make_dirs(f.dir + "/img");
  for (int i = 0; i < n_images; ++i) {
    f.images.push_back(f.dir + "/img/im" + std::to_string(10 + i) + ".png");
    fs::write_atomic(f.images.back(), random_png(rng, 24 + 3 * i, 30));
  }
  return f;
}

class ServerProc {
 public:
  // args: everything after `openclip serve`. Waits until the server prints its port.
  ServerProc(const std::string& args, const std::string& log) : log_(log) {
    std::remove(log.c_str());
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1), dup2(fd, 2);
      execl("/bin/sh", "sh", "-c", ("exec " + openclip() + " serve --model test-tiny --port 0 " + args).c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 1200 && port_ == 0 && alive(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto text = fs::read_text(log);
      if (!text) continue;
      auto p = text.value().find("listening on http://127.0.0.1:");
      if (p != std::string::npos) port_ = std::atoi(text.value().c_str() + p + 30);
    }
  }
  ~ServerProc() { stop(); }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const {
    auto t = fs::read_text(log_);
    return t ? t.value() : std::string();
  }
  bool alive() {
    if (exited_) return false;
    int st;
    if (waitpid(pid_, &st, WNOHANG) == pid_) exited_ = true, status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return !exited_;
  }
  void signal(int sig) { kill(pid_, sig); }
  // SIGTERM, then the exit status (SIGKILL after 30 s).
  int stop() {
    if (!alive()) return status_;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 600 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (alive()) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0), exited_ = true, status_ = 137;
    return status_;
  }
  int exit_status() { return alive() ? -1 : status_; }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0, status_ = -1;
  bool exited_ = false;
};

// `openclip index build` of f's images into f.dir/idx: the folder, or "" (with the build's
// output as a test failure) when the build failed.
inline std::string build_index(const Files& f) {
  auto b = run(openclip() + " index build --model test-tiny --pretrained " + f.weights + " --images " + f.dir +
               "/img --out " + f.dir + "/idx");
  EXPECT_EQ(b.status, 0) << b.out;
  return b.status == 0 ? f.dir + "/idx" : "";
}

// /metrics once every line of `wants` is in it. A request is counted by the server's logger,
// which runs after the response has been written, so a client can read /metrics before its
// last request's count lands: poll (a few ms normally; 30 s covers a loaded machine). The
// body of the last poll comes back either way, for the caller's EXPECTs to show.
inline std::string metrics_with(int port, const std::vector<std::string>& wants) {
  httplib::Client c("127.0.0.1", port);
  std::string body;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);;) {
    auto m = c.Get("/metrics");
    body = m && m->status == 200 ? m->body : std::string();
    bool all = !body.empty();
    for (auto& w : wants) all = all && body.find(w) != std::string::npos;
    if (all || std::chrono::steady_clock::now() > until) return body;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace oc::test
