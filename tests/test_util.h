// Helpers for tests that run the openclip binary or Python references.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace oc::test {

struct Run {
  int status = -1;  // exit status, or 128 + signal
  std::string out;  // stdout and stderr together
};

// Runs `cmd` through the shell, capturing both streams.
inline Run run(const std::string& cmd) {
  Run r;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>&1").c_str(), "r"), pclose);
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p.get())) > 0) r.out.append(buf.data(), n);
  int st = pclose(p.release());
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : (WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1);
  return r;
}

// Runs `cmd` (which must exit 0 and print one flat JSON list of numbers or strings without
// commas or quotes inside) and returns the items as strings.
inline std::vector<std::string> run_flat_json_list(const std::string& cmd) {
  Run r = run(cmd);
  EXPECT_EQ(r.status, 0) << cmd << "\n" << r.out;
  std::vector<std::string> v;
  std::string cur;
  for (char c : r.out) {
    if (c == '[' || c == ' ' || c == '"' || c == '\n') continue;
    if (c == ',' || c == ']') {
      if (!cur.empty()) v.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return v;
}

// The CLI under test: the build's, or OPENCLIP_TEST_BINARY (a carried bundle: scripts/gpu-check.sh).
inline std::string openclip() {
  const char* b = std::getenv("OPENCLIP_TEST_BINARY");
  return b && *b ? b : OPENCLIP_BINARY;
}
inline bool have_torch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }
// OpenCLIP 2.24.0 itself: the venv scripts/setup_pyref.sh makes (.pyref/, on Debian's torch).
inline std::string pyref_python() { return OPENCLIP_SOURCE_DIR "/.pyref/bin/python"; }
inline bool have_open_clip() {  // find_spec: without importing (torch takes seconds to load)
  return std::system((pyref_python() + " -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec(\"open_clip\") "
                                       "and u.find_spec(\"training\")))' >/dev/null 2>&1")
                         .c_str()) == 0;
}
#define OC_NEED_OPEN_CLIP() \
  if (!oc::test::have_open_clip()) GTEST_SKIP() << "needs OpenCLIP 2.24.0 in .pyref/ (scripts/setup_pyref.sh)"
// An empty folder for this test process: the pid keeps two suites running at once on one
// machine (two checkouts, CI beside a developer) out of each other's folders. Removed when the
// process that made it exits normally (a suite run writes ~2.5 GB of checkpoints and logs
// this way, which piled up under /tmp until a disk was full); OPENCLIP_KEEP_TEST_DIRS=1 keeps
// them for debugging. A forked child (death tests) never removes its parent's folders.
inline void remove_fresh_dirs_at_exit(const std::string& d) {
  struct Dirs {
    pid_t owner = ::getpid();
    std::vector<std::string> paths;
  };
  static Dirs* dirs = [] {
    auto* p = new Dirs;  // leaked: read by the atexit handler after static destruction
    std::atexit([] {
      if (::getpid() != dirs->owner || std::getenv("OPENCLIP_KEEP_TEST_DIRS")) return;
      for (const std::string& path : dirs->paths) std::system(("rm -rf '" + path + "'").c_str());
    });
    return p;
  }();
  for (const std::string& p : dirs->paths)
    if (p == d) return;
  dirs->paths.push_back(d);
}

inline std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
  std::system(("rm -rf '" + d + "' && mkdir -p '" + d + "'").c_str());
  remove_fresh_dirs_at_exit(d);
  return d;
}

}  // namespace oc::test
