// Shared helpers for the data tests: the Python reference fixtures (made once per process
// by tests/reference/data_ref.py with /usr/bin/python3) and small file utilities.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace oc::data::testing {

inline const char* kPython = "/usr/bin/python3";

inline bool have_python() { return ::access(kPython, X_OK) == 0; }

// Folders made by temp_dir(), removed when the test process exits.
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    for (auto& d : dirs) (void)!std::system(("rm -rf '" + d + "'").c_str());
  }
};
inline TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}

inline std::string temp_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "oc_data_" + std::to_string(::getpid()) + "_" + name;
  std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "cannot make " << d;
  temp_dirs().dirs.push_back(d);
  return d;
}

inline std::string read_text(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

// Runs a command and returns its stdout (empty + test failure when it fails).
inline std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  if (st != 0) ADD_FAILURE() << "command failed (" << st << "): " << cmd;
  return out;
}

// The reference fixtures of data_ref.py, made once; "" when Python is missing.
inline const std::string& fixture_dir() {
  static std::string dir;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!have_python()) return;
    std::string d = temp_dir("fixtures");
    std::string cmd = std::string(kPython) + " " OPENCLIP_TEST_DIR "/reference/data_ref.py make '" + d + "'";
    if (std::system(cmd.c_str()) == 0) dir = d;
  });
  return dir;
}

inline nlohmann::json expected() { return nlohmann::json::parse(read_text(fixture_dir() + "/expected.json")); }

#define OC_NEED_FIXTURES()                                                        \
  do {                                                                            \
    if (!::oc::data::testing::have_python()) GTEST_SKIP() << "no /usr/bin/python3"; \
    ASSERT_FALSE(::oc::data::testing::fixture_dir().empty()) << "data_ref.py make failed"; \
  } while (0)

}  // namespace oc::data::testing
