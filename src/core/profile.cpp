#include "core/profile.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace oc::profile {
namespace {
bool g_on = false;
std::mutex g_mu;
std::map<std::string, std::pair<double, long>> g_table;
std::function<void()> g_sync;
}  // namespace

void set_sync(std::function<void()> sync) { g_sync = std::move(sync); }
void sync_point() {
  if (g_sync) g_sync();
}

void set_enabled(bool on) { g_on = on; }
bool enabled() { return g_on; }
void reset() {
  std::lock_guard l(g_mu);
  g_table.clear();
}
void add(const char* name, double s) {
  std::lock_guard l(g_mu);
  auto& e = g_table[name];
  e.first += s;
  e.second += 1;
}
std::vector<Entry> report() {
  std::lock_guard l(g_mu);
  std::vector<Entry> r;
  for (auto& [n, v] : g_table) r.push_back({n, v.first, v.second});
  std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.seconds > b.seconds; });
  return r;
}

}  // namespace oc::profile
