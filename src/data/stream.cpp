// Byte sources: POSIX file descriptors, popen() pipes and libcurl's multi interface used as
// a pull stream (the pattern of curl's fopen.c example: perform until bytes are buffered).
#include "data/stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#ifdef OPENCLIP_HAVE_CURL
#include <curl/curl.h>
#endif

namespace oc::data {

Result<uint64_t> ByteStream::skip(uint64_t n) {
  uint8_t tmp[64 << 10];
  uint64_t done = 0;
  while (done < n) {
    auto r = read(tmp, size_t(std::min<uint64_t>(sizeof tmp, n - done)));
    if (!r) return Err{r.error()};
    if (*r == 0) break;
    done += *r;
  }
  return done;
}

bool is_http_url(const std::string& url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}
bool is_pipe_url(const std::string& url) { return url.rfind("pipe:", 0) == 0; }

namespace {

class FileStream final : public ByteStream {
 public:
  FileStream(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  ~FileStream() override { ::close(fd_); }
  Result<size_t> read(uint8_t* dst, size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) {
        pos_ += uint64_t(r);
        return size_t(r);
      }
      if (errno == EINTR) continue;
      return Err{fmt::format("{}: read failed at byte {}: {}", path_, pos_, std::strerror(errno))};
    }
  }
  Result<uint64_t> skip(uint64_t n) override {
    // Seek, but never past the end: a truncated shard must still read as truncated.
    uint64_t step = std::min<uint64_t>(n, size_ > pos_ ? size_ - pos_ : 0);
    if (::lseek(fd_, off_t(step), SEEK_CUR) < 0)
      return Err{fmt::format("{}: seek failed at byte {}: {}", path_, pos_, std::strerror(errno))};
    pos_ += step;
    return step;
  }

 private:
  int fd_;
  std::string path_;
  uint64_t size_, pos_ = 0;
};

class PipeStream final : public ByteStream {
 public:
  PipeStream(std::FILE* f, std::string cmd) : f_(f), cmd_(std::move(cmd)) {}
  ~PipeStream() override {
    if (f_) ::pclose(f_);
  }
  Result<size_t> read(uint8_t* dst, size_t n) override {
    if (!f_) return size_t(0);
    size_t r = std::fread(dst, 1, n, f_);
    if (r > 0) return r;
    if (std::ferror(f_)) return Err{fmt::format("pipe:{}: read failed: {}", cmd_, std::strerror(errno))};
    int st = ::pclose(f_);
    f_ = nullptr;
    if (st != 0)
      return Err{fmt::format("pipe:{}: command exited with status {}", cmd_,
                             WIFEXITED(st) ? WEXITSTATUS(st) : st)};
    return size_t(0);
  }

 private:
  std::FILE* f_;
  std::string cmd_;
};

#ifdef OPENCLIP_HAVE_CURL
void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

class HttpStream final : public ByteStream {
 public:
  explicit HttpStream(std::string url) : url_(std::move(url)) {
    curl_init_once();
    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
    errbuf_[0] = 0;
    curl_easy_setopt(easy_, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &HttpStream::on_data);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy_, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy_, CURLOPT_FAILONERROR, 1L);  // 404 is an error, not a page to parse
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, errbuf_);
    curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT, 30L);
    // A stalled server (under 1 byte/s for 60 s) fails the shard instead of hanging the loader.
    curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);  // worker threads: no SIGALRM
    curl_multi_add_handle(multi_, easy_);
  }
  ~HttpStream() override {
    curl_multi_remove_handle(multi_, easy_);
    curl_easy_cleanup(easy_);
    curl_multi_cleanup(multi_);
  }
  Result<size_t> read(uint8_t* dst, size_t n) override {
    while (pos_ == buf_.size() && !done_) {
      buf_.clear();
      pos_ = 0;
      if (auto st = pump(); !st) return Err{st.error()};
    }
    size_t k = std::min(n, buf_.size() - pos_);
    std::memcpy(dst, buf_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  static size_t on_data(char* p, size_t sz, size_t nm, void* self) {
    auto* h = static_cast<HttpStream*>(self);
    h->buf_.insert(h->buf_.end(), reinterpret_cast<uint8_t*>(p), reinterpret_cast<uint8_t*>(p) + sz * nm);
    return sz * nm;
  }
  Status pump() {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi_, &running);
    if (mc != CURLM_OK) return Err{fmt::format("{}: {}", url_, curl_multi_strerror(mc))};
    if (running == 0) {
      done_ = true;
      int left = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
        if (m->msg == CURLMSG_DONE && m->data.result != CURLE_OK)
          return Err{fmt::format("{}: {}{}{}", url_, curl_easy_strerror(m->data.result), errbuf_[0] ? ": " : "",
                                 errbuf_)};
      }
      return Status::success();
    }
    if (buf_.empty()) curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    return Status::success();
  }
  std::string url_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
  char errbuf_[CURL_ERROR_SIZE];
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
  bool done_ = false;
};
#endif

}  // namespace

Result<std::unique_ptr<ByteStream>> open_stream(const std::string& url) {
  if (is_http_url(url)) {
#ifdef OPENCLIP_HAVE_CURL
    return std::unique_ptr<ByteStream>(std::make_unique<HttpStream>(url));
#else
    return Err{fmt::format("{}: this build has no libcurl (install libcurl4-openssl-dev and rebuild)", url)};
#endif
  }
  if (is_pipe_url(url)) {
    std::string cmd = url.substr(5);
    std::FILE* f = ::popen(cmd.c_str(), "r");
    if (!f) return Err{fmt::format("{}: cannot start command: {}", url, std::strerror(errno))};
    return std::unique_ptr<ByteStream>(std::make_unique<PipeStream>(f, cmd));
  }
  std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Err{fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Err{fmt::format("{}: not a regular file", path)};
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ByteStream>(std::make_unique<FileStream>(fd, path, uint64_t(st.st_size)));
}

Result<std::string> read_small(const std::string& url, size_t max_bytes) {
  auto s = open_stream(url);
  if (!s) return Err{s.error()};
  std::string out;
  char buf[16 << 10];
  for (;;) {
    auto r = (*s)->read(reinterpret_cast<uint8_t*>(buf), sizeof buf);
    if (!r) return Err{r.error()};
    if (*r == 0) break;
    out.append(buf, *r);
    if (out.size() > max_bytes) return Err{fmt::format("{}: larger than {} bytes", url, max_bytes)};
  }
  return out;
}

BufferedReader::BufferedReader(std::unique_ptr<ByteStream> s, size_t buffer_bytes)
    : s_(std::move(s)), buf_(buffer_bytes) {}

Status BufferedReader::fill() {
  pos_ = end_ = 0;
  while (end_ == 0 && !eof_) {
    auto r = s_->read(buf_.data(), buf_.size());
    if (!r) return Err{r.error()};
    if (*r == 0) eof_ = true;
    end_ = *r;
  }
  return Status::success();
}

Result<size_t> BufferedReader::read(uint8_t* dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    if (pos_ == end_) {
      if (eof_) break;
      // Large reads bypass the buffer.
      if (n - done >= buf_.size()) {
        auto r = s_->read(dst + done, n - done);
        if (!r) return Err{r.error()};
        if (*r == 0) {
          eof_ = true;
          break;
        }
        done += *r;
        offset_ += *r;
        continue;
      }
      if (auto st = fill(); !st) return Err{st.error()};
      if (pos_ == end_) break;
    }
    size_t k = std::min(n - done, end_ - pos_);
    std::memcpy(dst + done, buf_.data() + pos_, k);
    pos_ += k;
    done += k;
    offset_ += k;
  }
  return done;
}

Result<uint64_t> BufferedReader::skip(uint64_t n) {
  uint64_t done = std::min<uint64_t>(n, end_ - pos_);
  pos_ += size_t(done);
  offset_ += done;
  if (done < n && !eof_) {
    auto r = s_->skip(n - done);
    if (!r) return Err{r.error()};
    done += *r;
    offset_ += *r;
    if (done < n) eof_ = true;
  }
  return done;
}

}  // namespace oc::data
