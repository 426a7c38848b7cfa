// Shared helpers of the tokenizer tests: the loaded tokenizer, the Python reference and files.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "text/tokenizer.h"

namespace oc::test {

inline const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::load_default();  // throws with where-to-get-it if missing
  return t;
}

inline const char* kPython = "/usr/bin/python3";

// True when Debian's python3 with `regex` is there (the reference needs nothing else).
inline bool have_python_regex() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import regex' >/dev/null 2>&1") == 0;
  return ok;
}

inline std::string ref_script() { return std::string(OPENCLIP_TEST_DIR) + "/reference/tokenizer_ref.py"; }

// In this process's own folder (fresh_dir): ctest runs each test in its own process, two at
// a time, and a file another process is rewriting (the same vocabulary, say) would be read
// half-written.
inline std::string temp_path(const std::string& name) {
  static const std::string dir = fresh_dir("oc_text");
  return dir + "/" + name;
}

// The rows of a JSON-lines file (the Python references' output).
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_all(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace oc::test
