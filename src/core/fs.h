// Files: whole-file reads for small files, and atomic writes (temporary file in the same
// folder, fsync, rename, fsync of the folder) so a crash or a full disk never leaves a
// half-written checkpoint or config in place of a good one.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/limits.h"
#include "core/result.h"

namespace oc::fs {

bool exists(const std::string& path);
bool is_dir(const std::string& path);
int64_t file_size(const std::string& path);  // -1 when missing
// Creates the folder and its parents; throws oc::Error naming the path and errno text.
void make_dirs(const std::string& path);
std::string dirname(const std::string& path);
std::string basename(const std::string& path);
std::string join(const std::string& a, const std::string& b);

// Whole-file reads. Only regular files unless `allow_pipe` (FIFOs, character devices such
// as /dev/stdin, for commands that legitimately read a pipe); at most `cap` (default
// kReadFileCap, core/limits.h) are read, a longer file or stream is an error naming the
// path and the cap. /dev/zero as an image path is refused at once instead of filling memory.
struct ReadOptions {
  bool allow_pipe = false;
  Cap cap = kReadFileCap;
};
Result<std::vector<uint8_t>> read_file(const std::string& path, const ReadOptions& opt = {});
Result<std::string> read_text(const std::string& path, const ReadOptions& opt = {});

// Writes `path` atomically: `path.tmp-<pid>` is written through `writer`, flushed,
// fsynced and renamed over `path`. On any failure (writer throws, ENOSPC, EIO) the
// temporary file is removed, `path` is untouched, and oc::Error says what failed.
// `writer` gets a callback that appends bytes.
using Sink = std::function<void(std::span<const uint8_t>)>;
void write_atomic(const std::string& path, const std::function<void(const Sink&)>& writer);
void write_atomic(const std::string& path, std::span<const uint8_t> bytes);
void write_atomic(const std::string& path, const std::string& text);

}  // namespace oc::fs
