// Brace expansion after the Python `braceexpand` package (used by webdataset.expand_urls),
// so a pattern names the same shards, in the same order, as it does for OpenCLIP.
#include "data/urls.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "data/stream.h"

namespace oc::data {
namespace {

// Index of the '}' matching the '{' at `open`, or npos. Backslash escapes a brace.
size_t match_brace(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::string::npos;
}

// Top-level comma-separated alternatives of a brace body (nested braces kept whole).
std::vector<std::string> split_top(const std::string& body) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\\' && i + 1 < body.size()) {
      out.back() += c;
      out.back() += body[++i];
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  return out;
}

bool parse_int(const std::string& s, long long* v) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  auto [end, ec] = std::from_chars(s.data() + (s[0] == '+' ? 1 : 0), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();  // out of range: not a number here
}

Status over_cap(uint64_t n) {
  return Err{fmt::format("the pattern expands to {} names or more, over the cap of {} (kMaxBraceExpansion)", n,
                         kMaxBraceExpansion)};
}

// "{a..b}" / "{a..b..c}": false when the body is not a range; an error over the cap.
Result<bool> expand_range(const std::string& body, std::vector<std::string>* out) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (;;) {
    size_t d = body.find("..", pos);
    if (d == std::string::npos) {
      parts.push_back(body.substr(pos));
      break;
    }
    parts.push_back(body.substr(pos, d - pos));
    pos = d + 2;
  }
  if (parts.size() != 2 && parts.size() != 3) return false;
  long long incr = 1;
  if (parts.size() == 3 && (!parse_int(parts[2], &incr))) return false;
  incr = std::max(1LL, incr < 0 ? -incr : incr);
  long long a, b;
  if (parse_int(parts[0], &a) && parse_int(parts[1], &b)) {
    auto leading_zero = [](const std::string& s) {
      return s != "0" && s != "-0" && (s.rfind("0", 0) == 0 || s.rfind("-0", 0) == 0);
    };
    size_t width = (leading_zero(parts[0]) || leading_zero(parts[1])) ? std::max(parts[0].size(), parts[1].size()) : 0;
    // Count first: {0..99999999999} must be refused, not generated.
    const unsigned long long span = a <= b ? (unsigned long long)b - (unsigned long long)a
                                           : (unsigned long long)a - (unsigned long long)b;
    const unsigned long long count = span / (unsigned long long)incr + 1;
    if (count > kMaxBraceExpansion) return Err{over_cap(count).error()};
    long long step = a <= b ? incr : -incr;
    for (long long v = a; a <= b ? v <= b : v >= b; v += step)
      out->push_back(v < 0 ? "-" + fmt::format("{:0{}d}", -v, width ? width - 1 : 0) : fmt::format("{:0{}d}", v, width));
    return true;
  }
  if (parts[0].size() == 1 && parts[1].size() == 1 && std::isalpha(static_cast<unsigned char>(parts[0][0])) &&
      std::isalpha(static_cast<unsigned char>(parts[1][0]))) {
    int x = parts[0][0], y = parts[1][0];
    int step = x <= y ? int(incr) : -int(incr);
    for (int v = x; x <= y ? v <= y : v >= y; v += step) out->push_back(std::string(1, char(v)));
    return true;
  }
  return false;
}

Status expand_into(const std::string& s, std::vector<std::string>* out) {
  // Find the first brace group that expands; text before it is a literal prefix.
  size_t search = 0;
  for (;;) {
    size_t open = std::string::npos;
    for (size_t i = search; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
        continue;
      }
      if (s[i] == '{') {
        open = i;
        break;
      }
      if (s[i] == '}') return Err{fmt::format("unbalanced braces in '{}'", s)};
    }
    if (open == std::string::npos) {
      std::string lit;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}' || s[i + 1] == '\\')) ++i;
        lit += s[i];
      }
      out->push_back(lit);
      return Status::success();
    }
    size_t close = match_brace(s, open);
    if (close == std::string::npos) return Err{fmt::format("unbalanced braces in '{}'", s)};
    std::string body = s.substr(open + 1, close - open - 1);
    std::vector<std::string> alts;
    auto range = expand_range(body, &alts);
    if (!range) return Err{range.error()};
    if (!*range) {
      auto parts = split_top(body);
      if (parts.size() < 2) {  // "{x}" is literal text: keep looking after it
        search = close + 1;
        continue;
      }
      alts = std::move(parts);
    }
    std::string prefix = s.substr(0, open), rest = s.substr(close + 1);
    std::vector<std::string> tails;
    if (auto st = expand_into(rest, &tails); !st) return st;
    for (auto& alt : alts) {
      std::vector<std::string> heads;
      if (auto st = expand_into(prefix + alt, &heads); !st) return st;
      if (uint64_t(out->size()) + uint64_t(heads.size()) * tails.size() > kMaxBraceExpansion)
        return over_cap(uint64_t(out->size()) + uint64_t(heads.size()) * tails.size());
      for (auto& h : heads)
        for (auto& t : tails) out->push_back(h + t);
    }
    return Status::success();
  }
}

std::vector<std::string> split_sources(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    size_t d = s.find("::", pos);
    out.push_back(s.substr(pos, d == std::string::npos ? std::string::npos : d - pos));
    if (d == std::string::npos) break;
    pos = d + 2;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> expand_braces(const std::string& pattern) {
  std::vector<std::string> out;
  if (auto st = expand_into(pattern, &out); !st) return Err{st.error()};
  return out;
}

Result<ShardList> expand_shards(const std::string& pattern, const std::string& factors) {
  ShardList list;
  auto sources = split_sources(pattern);
  std::vector<double> w;
  if (!factors.empty()) {
    for (auto& f : split_sources(factors)) {
      try {
        size_t used = 0;
        w.push_back(std::stod(f, &used));
        if (used != f.size()) throw std::invalid_argument(f);
      } catch (const std::exception&) {
        return Err{fmt::format("upsampling factor '{}' is not a number", f)};
      }
    }
    if (w.size() != sources.size())
      return Err{fmt::format("{} upsampling factors for {} sources: give one per `::`-separated source", w.size(),
                             sources.size())};
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    auto e = expand_braces(sources[i]);
    if (!e) return Err{e.error()};
    for (auto& u : *e) {
      list.urls.push_back(u);
      if (!w.empty()) list.weights.push_back(w[i]);
    }
  }
  return list;
}

std::string url_dirname(const std::string& url) {
  size_t s = url.rfind('/');
  return s == std::string::npos ? "" : url.substr(0, s);
}
std::string url_basename(const std::string& url) {
  size_t s = url.rfind('/');
  return s == std::string::npos ? url : url.substr(s + 1);
}
std::string url_join(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

Result<int64_t> dataset_size(const std::vector<std::string>& urls) {
  struct DirInfo {
    bool loaded = false, has_sizes = false, counted = false;
    nlohmann::json sizes;
    int64_t len = -1;
  };
  std::map<std::string, DirInfo> dirs;
  int64_t total = 0;
  for (auto& u : urls) {
    std::string dir = url_dirname(u);
    DirInfo& d = dirs[dir];
    if (!d.loaded) {
      d.loaded = true;
      if (auto txt = read_small(url_join(dir, "sizes.json")); txt) {
        try {
          d.sizes = nlohmann::json::parse(*txt);
          d.has_sizes = d.sizes.is_object();
        } catch (const std::exception& e) {
          return Err{fmt::format("{}: not valid JSON: {}", url_join(dir, "sizes.json"), e.what())};
        }
      } else if (auto len = read_small(url_join(dir, "__len__")); len) {
        try {
          d.len = std::stoll(*len);
        } catch (const std::exception&) {
          return Err{fmt::format("{}: not a number", url_join(dir, "__len__"))};
        }
      }
    }
    if (d.has_sizes) {
      auto it = d.sizes.find(url_basename(u));
      if (it == d.sizes.end())
        return Err{fmt::format("{} lists no size for shard {}; pass --train-num-samples",
                               url_join(dir, "sizes.json"), url_basename(u))};
      total += it->is_string() ? std::stoll(it->get<std::string>()) : it->get<int64_t>();
    } else if (d.len >= 0) {
      if (!d.counted) total += d.len;
      d.counted = true;
    } else {
      return Err{fmt::format("no sizes.json or __len__ in '{}' to count the samples of {}; pass --train-num-samples",
                             dir.empty() ? "." : dir, u)};
    }
  }
  return total;
}

}  // namespace oc::data
