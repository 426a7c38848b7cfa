#include "data/webdataset.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/check.h"

namespace oc::data {

bool split_key(std::string_view name, std::string* key, std::string* ext) {
  // The regex's greedy `(?:.*/|)` tries the last '/' first: the key ends at the basename's
  // first dot. A basename starting with '.' falls back to the previous segment, which the
  // `[^.]+` run may cross (including the '/') if it has no dot.
  size_t ls = name.rfind('/');
  size_t b = ls == std::string_view::npos ? 0 : ls + 1;
  size_t dot = name.find('.', b);
  if (dot == std::string_view::npos) return false;
  if (dot == b) {
    if (ls == std::string_view::npos) return false;
    size_t prev = name.rfind('/', ls == 0 ? std::string_view::npos : ls - 1);
    size_t start = (ls == 0 || prev == std::string_view::npos) ? 0 : prev + 1;
    if (name.substr(start, b - start).find('.') != std::string_view::npos) return false;
  }
  *key = std::string(name.substr(0, dot));
  *ext = std::string(name.substr(dot + 1));
  return true;
}

bool is_meta_name(std::string_view name) {
  return name.find('/') == std::string_view::npos && name.size() >= 2 && name.substr(0, 2) == "__" &&
         name.substr(name.size() - 2) == "__";
}

const std::vector<uint8_t>* WdsSample::find(std::string_view ext) const {
  for (auto& [e, b] : fields)
    if (e == ext) return &b;
  return nullptr;
}

bool WdsSample::has(std::string_view ext) const { return std::find(exts.begin(), exts.end(), ext) != exts.end(); }

Status WdsSample::materialize() {
  if (lazy.empty()) return Status::success();
  const std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Err{fmt::format("{}: cannot reopen: {}", url, std::strerror(errno))};
  Status st;
  for (auto& l : lazy) {
    std::vector<uint8_t> b(static_cast<size_t>(l.size));
    size_t done = 0;
    while (done < b.size()) {
      ssize_t r = ::pread(fd, b.data() + done, b.size() - done, off_t(l.offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        st = Err{fmt::format("{}: cannot read {} bytes of '{}.{}' at byte {} again", url, l.size, key, l.ext, l.offset)};
        break;
      }
      done += size_t(r);
    }
    if (!st) break;
    fields.emplace_back(l.ext, std::move(b));
  }
  ::close(fd);
  lazy.clear();
  return st;
}

namespace {
bool is_image_ext(const std::string& e) { return e == "jpg" || e == "png" || e == "jpeg" || e == "webp"; }
}  // namespace

bool keep_for_training(const std::string& ext) {
  return ext == "jpg" || ext == "png" || ext == "jpeg" || ext == "webp" || ext == "txt" || ext == "cls";
}

TarSampleStream::TarSampleStream(UrlFn next_url, DataStats* stats, KeepFn keep)
    : next_url_(std::move(next_url)), stats_(stats), keep_(std::move(keep)) {}

bool TarSampleStream::open_next() {
  if (reader_) {
    // The shard just finished: a long run of shards with nothing in them would make an
    // endless (resampled) stream spin forever, so it ends the run with an error instead.
    barren_shards_ = yielded_since_open_ ? 0 : barren_shards_ + 1;
    reader_.reset();
    if (barren_shards_ >= 1000)
      OC_USER_ERROR("data: the last {} shards opened gave no tar members (last: {}); see the warnings above",
                    barren_shards_, url_);
  }
  if (urls_done_) return false;
  auto u = next_url_();
  if (!u) {
    urls_done_ = true;
    return false;
  }
  url_ = *u;
  yielded_since_open_ = false;
  auto s = open_stream(url_);
  if (!s) {
    stats_->skip(Skip::ShardMissing, s.error());
    barren_shards_++;
    return true;
  }
  ++shards_opened_;
  stats_->add_shard();
  reader_ = std::make_unique<TarReader>(std::move(*s), url_);
  return true;
}

std::optional<WdsSample> TarSampleStream::next() {
  for (;;) {
    if (!reader_) {
      if (!open_next()) {
        if (!cur_) return std::nullopt;
        std::optional<WdsSample> out = std::move(cur_);
        cur_.reset();
        return out;
      }
      continue;
    }
    TarMember m;
    auto r = reader_->next(&m);
    if (!r) {
      // An HTTP 404 or a connection failure surfaces on the first read: a missing shard.
      const std::string& e = r.error();
      Skip why = e.ends_with("empty file") ? Skip::ShardEmpty
                 : reader_->offset() == 0 && e.find("not a tar file") == std::string::npos ? Skip::ShardMissing
                                                                                          : Skip::ShardError;
      stats_->skip(why, e);
      open_next();
      continue;
    }
    if (!*r) {
      open_next();
      continue;
    }
    std::string key, ext;
    if (is_meta_name(m.name) || !split_key(m.name, &key, &ext)) continue;
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    // Read (or skip) the payload before grouping: a member whose data is cut never reaches
    // the grouper in webdataset either.
    std::vector<uint8_t> bytes;
    bool keep = keep_(ext);
    const bool lazy = keep && lazy_ && is_image_ext(ext) && !is_http_url(url_) && !is_pipe_url(url_);
    if (lazy) {
      if (auto st = reader_->skip_data(); !st) {
        stats_->skip(Skip::ShardError, st.error());
        open_next();
        continue;
      }
    } else if (keep) {
      auto d = reader_->read_data();
      if (!d) {
        stats_->skip(Skip::ShardError, d.error());
        open_next();
        continue;
      }
      bytes = std::move(*d);
    } else if (auto st = reader_->skip_data(); !st) {
      stats_->skip(Skip::ShardError, st.error());
      open_next();
      continue;
    }
    yielded_since_open_ = true;
    std::optional<WdsSample> done;
    if (!cur_ || key != cur_->key || cur_->has(ext)) {
      done = std::move(cur_);
      cur_.emplace();
      cur_->key = key;
      cur_->url = url_;
    }
    cur_->exts.push_back(ext);
    if (lazy) cur_->lazy.push_back({ext, m.data_offset, m.size});
    else if (keep) cur_->fields.emplace_back(ext, std::move(bytes));
    if (done) return done;
  }
}

std::optional<Selected> select_fields(const WdsSample& s, Skip* why) {
  Selected out;
  out.caption = s.find("txt");
  for (const char* e : {"jpg", "png", "jpeg", "webp"}) {
    if ((out.image = s.find(e))) {
      out.image_ext = e;
      break;
    }
  }
  if (!out.caption || !out.image) {
    *why = !out.image ? Skip::NoImage : Skip::NoCaption;
    return std::nullopt;
  }
  out.cls = s.find("cls");
  return out;
}

std::optional<int64_t> parse_label(std::string_view t) {
  size_t b = 0, e = t.size();
  while (b < e && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(t[e - 1]))) --e;
  if (b == e) return std::nullopt;
  bool neg = t[b] == '-';
  if (neg || t[b] == '+') ++b;
  if (b == e || e - b > 18) return std::nullopt;
  int64_t v = 0;
  for (size_t i = b; i < e; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return std::nullopt;
    v = v * 10 + (t[i] - '0');
  }
  return neg ? -v : v;
}

}  // namespace oc::data
