// openclip tokenize: text lines -> token id lines (OpenCLIP's SimpleTokenizer), or back with
// --decode. One output line per input line, in order; a bad line is reported on stderr with
// its number, written as an empty line, and makes the exit status 1 once all lines are done.
#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/check.h"
#include "core/options.h"
#include "text/tokenizer.h"

namespace oc::cli {
namespace {

constexpr size_t kChunkLines = 1 << 16;

// Reads '\n'-terminated lines (the last one may lack it) in chunks.
class LineReader {
 public:
  explicit LineReader(FILE* f) : f_(f) {}
  bool next_chunk(std::vector<std::string>& lines) {
    lines.clear();
    while (lines.size() < kChunkLines) {
      size_t nl;
      while ((nl = buf_.find('\n', pos_)) == std::string::npos && !eof_) fill();
      if (nl == std::string::npos) {
        if (pos_ < buf_.size()) lines.push_back(buf_.substr(pos_));
        pos_ = buf_.size();
        break;
      }
      lines.push_back(buf_.substr(pos_, nl - pos_));
      pos_ = nl + 1;
    }
    return !lines.empty();
  }

 private:
  void fill() {
    buf_.erase(0, pos_);
    pos_ = 0;
    char tmp[1 << 16];
    size_t n = std::fread(tmp, 1, sizeof tmp, f_);
    if (n == 0) {
      if (std::ferror(f_)) OC_USER_ERROR("reading input failed: {}", std::strerror(errno));
      eof_ = true;
    }
    buf_.append(tmp, n);
  }
  FILE* f_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
};

void append_int(std::string& out, int32_t v) {
  char b[16];
  auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, r.ptr);
}

// "49406 320 1929 49407 0 ..." -> ids; error text on a bad token.
std::string parse_ids(const std::string& line, std::vector<int32_t>& ids, int32_t vocab) {
  ids.clear();
  const char* p = line.data();
  const char* end = p + line.size();
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p == end) break;
    int32_t v = 0;
    auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc() || (r.ptr < end && *r.ptr != ' ' && *r.ptr != '\t' && *r.ptr != '\r'))
      return "not a token id: '" + std::string(p, std::min<size_t>(size_t(end - p), 20)) + "'";
    if (v < 0 || v >= vocab) return "token id " + std::to_string(v) + " outside [0, " + std::to_string(vocab) + ")";
    ids.push_back(v);
    p = r.ptr;
  }
  return "";
}

int run(const std::vector<std::string>& args) {
  Options opt("tokenize",
              "Tokenize UTF-8 text lines as OpenCLIP's SimpleTokenizer does: one line of "
              "context-length space-separated ids (start, text, end, zero padding) per input "
              "line. With --decode, read such id lines and print the text (start/end tokens and "
              "padding dropped, trailing spaces stripped, line breaks shown as spaces).",
              {{"vocab", OptType::String, "", "bpe_simple_vocab_16e6.txt.gz (default: $OPENCLIP_VOCAB, then the data folder)", ""},
               {"context-length", OptType::Int, "77", "ids per line (OpenCLIP's context_length)", ""},
               {"input", OptType::String, "-", "input file, - for stdin", ""},
               {"decode", OptType::Flag, "", "ids -> text instead of text -> ids", ""}});
  opt.parse(args);
  if (opt.help_requested()) return std::printf("%s", opt.help().c_str()), 0;
  const int64_t ctx = opt.get_int("context-length");
  if (ctx < 1 || ctx > (1 << 20)) OC_USER_ERROR("--context-length must be in [1, 1048576], got {}", ctx);
  Tokenizer tok = Tokenizer::load_default(opt.get("vocab"));

  const std::string input = opt.get("input");
  FILE* in = input == "-" ? stdin : std::fopen(input.c_str(), "rb");
  if (!in) OC_USER_ERROR("cannot open --input {}: {}", input, std::strerror(errno));
  LineReader reader(in);
  std::vector<std::string> lines;
  std::vector<std::string> errors;
  std::vector<int32_t> ids;
  std::string out;
  size_t line_base = 0, n_bad = 0;
  const bool decode = opt.flag("decode");
  while (reader.next_chunk(lines)) {
    const size_t n = lines.size();
    errors.assign(n, "");
    out.clear();
    if (decode) {
      std::vector<int32_t> row;
      for (size_t i = 0; i < n; i++) {
        std::string err = parse_ids(lines[i], row, tok.vocab_size());
        if (!err.empty()) {
          errors[i] = err;
          out.push_back('\n');
          continue;
        }
        std::string s = tok.decode(row);
        for (char& c : s)
          if (c == '\n' || c == '\r') c = ' ';
        while (!s.empty() && s.back() == ' ') s.pop_back();
        out += s;
        out.push_back('\n');
      }
    } else {
      ids.assign(n * size_t(ctx), 0);
#pragma omp parallel for schedule(dynamic, 256)
      for (int64_t i = 0; i < int64_t(n); i++) {
        Status st = tok.tokenize(lines[size_t(i)], std::span<int32_t>(ids.data() + size_t(i) * size_t(ctx), size_t(ctx)));
        if (!st.ok()) errors[size_t(i)] = st.error();
      }
      for (size_t i = 0; i < n; i++) {
        if (errors[i].empty()) {
          for (int64_t k = 0; k < ctx; k++) {
            if (k) out.push_back(' ');
            append_int(out, ids[i * size_t(ctx) + size_t(k)]);
          }
        }
        out.push_back('\n');
      }
    }
    for (size_t i = 0; i < n; i++) {
      if (errors[i].empty()) continue;
      n_bad++;
      std::fprintf(stderr, "openclip tokenize: %s line %zu: %s\n", input == "-" ? "stdin" : input.c_str(),
                   line_base + i + 1, errors[i].c_str());
    }
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size())
      OC_USER_ERROR("writing output failed: {}", std::strerror(errno));
    line_base += n;
  }
  if (in != stdin) std::fclose(in);
  std::fflush(stdout);
  if (n_bad) {
    std::fprintf(stderr, "openclip tokenize: %zu of %zu lines failed (written as empty lines)\n", n_bad, line_base);
    return 1;
  }
  return 0;
}

OC_REGISTER_COMMAND("tokenize", "text lines -> CLIP BPE token ids (and back with --decode)", run);

}  // namespace
}  // namespace oc::cli
