// Headless Chromium for the search-page tests: find it, render a URL, count in the DOM.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "server_fixture.h"

namespace oc::test {

inline std::string chromium() {
  if (const char* env = std::getenv("OPENCLIP_CHROMIUM"); env && *env) return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(p)) return p;
  return "";
}

// The DOM after the page's scripts ran; a fresh profile per call, no sandbox (tests may run
// as root), virtual time so the fetches finish before the dump.
inline std::string dump_dom(const std::string& work, const std::string& url) {
  auto r = run("timeout 120 '" + chromium() + "' --headless --no-sandbox --disable-gpu --no-first-run "
               "--disable-extensions --disable-dev-shm-usage --user-data-dir='" + work + "/profile' "
               "--virtual-time-budget=15000 --dump-dom '" + url + "' 2>'" + work + "/chromium.log'");
  EXPECT_EQ(r.status, 0) << r.out;
  return r.out;
}

inline size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace oc::test
