// Downloads through the Hugging Face hub protocol (as huggingface_hub.hf_hub_download) into
// its cache (hub/cache.h), and OpenCLIP's URL downloads (download_pretrained_from_url).
//  - HEAD <endpoint>/<repo>/resolve/<revision>/<file> gives the commit (X-Repo-Commit), the
//    etag (X-Linked-Etag, else ETag) and the size (X-Linked-Size, else Content-Length); a
//    redirect to the same host is followed (a renamed repository), one to another host is
//    where the file is downloaded from (the CDN);
//  - the body goes to blobs/<etag>.incomplete, resumed with a Range request after a dropped
//    connection (and in a later run), at most the announced size; a transient failure (a
//    transport error, 429, 5xx) is retried with exponential backoff;
//  - the file is checked (size; SHA-256 for an LFS etag of 64 hex digits, git's blob SHA-1 for
//    one of 40), then renamed into blobs/ and linked from snapshots/<commit>/; a file that
//    fails a check is deleted, so blobs/ and snapshots/ hold only verified files;
//  - redirects: the endpoint's host, and over https its subdomains (cdn-lfs.huggingface.co) and
//    for huggingface.co the hf.co CDN hosts; any other host is refused. The token (HF_TOKEN)
//    is sent to the endpoint's host only.
// Environment as huggingface_hub: HF_ENDPOINT, HF_HUB_CACHE / HF_HOME, HF_TOKEN (else
// $HF_HOME/token), HF_HUB_OFFLINE=1 (the cache only: no request is made).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/check.h"

namespace oc::hub {

struct HubOptions {
  std::string endpoint = "https://huggingface.co";
  std::string cache;  // the hub cache root
  std::string token;
  bool offline = false;
  int retries = 5;       // extra attempts after a transient failure
  double backoff_s = 1;  // first wait; doubles up to 30 s
  double connect_timeout_s = 10;
  double stall_timeout_s = 30;
  int64_t max_bytes = int64_t(64) << 30;  // a larger announced size is refused
  bool progress = true;                   // a bar on a TTY (stderr), plain lines otherwise
};

// From the environment; cache_dir (--cache-dir) replaces the cache root when given.
HubOptions hub_options_from_env(const std::string& cache_dir = "");

// A file the repository (or the URL) does not have: callers try the next candidate name.
class NotFound : public oc::Error {
 public:
  using oc::Error::Error;
};

// The cached file (snapshots/<commit>/<filename>), downloaded first when needed. Online, a
// HEAD request checks the revision (as huggingface_hub); when the server cannot be reached
// the cached file is used. Throws NotFound (404) or oc::Error.
std::string hf_hub_download(const std::string& repo_id, const std::string& filename, const std::string& revision,
                            const HubOptions& o);
// The cached file of `revision` or "" (no request; huggingface_hub's try_to_load_from_cache).
std::string cached_file(const std::string& repo_id, const std::string& filename, const std::string& revision,
                        const HubOptions& o);

// OpenCLIP's download_pretrained_from_url: <dir>/<basename of url>, kept when present and its
// SHA-256 starts with sha256_prefix ("" = not checked); else downloaded (to .incomplete,
// checked, renamed). With a checksum, https redirects to other hosts are followed (GitHub's
// release assets); without one only the URL's own host.
std::string download_url(const std::string& url, const std::string& dir, const std::string& sha256_prefix,
                         const HubOptions& o);

}  // namespace oc::hub
