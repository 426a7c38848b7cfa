#include "text/spm_model.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "core/check.h"
#include "text/precompiled_charsmap.h"
#include "text/unicode.h"

namespace oc::text {
namespace {

// One protobuf field: number, wire type, and where its value lies.
struct Field {
  uint32_t number, wire;
  uint64_t varint = 0;       // wire 0
  std::string_view payload;  // wire 1, 2, 5
};

class ProtoReader {
 public:
  ProtoReader(std::string_view buf, size_t base, const std::string& source) : buf_(buf), base_(base), source_(source) {}
  bool done() const { return pos_ >= buf_.size(); }
  size_t offset() const { return base_ + pos_; }

  Field next() {
    size_t at = offset();
    uint64_t key = varint(at);
    Field f{uint32_t(key >> 3), uint32_t(key & 7)};
    if (f.number == 0 || (f.wire != 0 && f.wire != 1 && f.wire != 2 && f.wire != 5))
      OC_USER_ERROR("{}: not a SentencePiece model: invalid protobuf field key 0x{:x} at byte offset {}", source_, key,
                    at);
    uint64_t len = f.wire == 0 ? 0 : f.wire == 1 ? 8 : f.wire == 5 ? 4 : varint(at);
    if (f.wire == 0) {
      f.varint = varint(at);
      return f;
    }
    if (len > buf_.size() - pos_)
      OC_USER_ERROR(
          "{}: truncated SentencePiece model: field {} at byte offset {} needs {} bytes, the file ends after {}",
          source_, f.number, at, len, buf_.size() - pos_);
    f.payload = buf_.substr(pos_, len);
    pos_ += len;
    return f;
  }

 private:
  uint64_t varint(size_t at) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= buf_.size())
        OC_USER_ERROR("{}: truncated SentencePiece model: the field at byte offset {} ends at the end of the file",
                      source_, at);
      uint8_t b = uint8_t(buf_[pos_++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (b < 0x80) return v;
    }
    OC_USER_ERROR("{}: not a SentencePiece model: malformed varint at byte offset {}", source_, at);
  }

  std::string_view buf_;
  size_t base_, pos_ = 0;
  const std::string& source_;
};

// The longest piece accepted. sentencepiece's trainer caps a piece at 16 characters by default
// and 512 at most (max_sentencepiece_length), 4 bytes each at most: 2048 bytes. T5's longest
// is 16 characters; the library crashed on a 1 MB piece.
constexpr size_t kMaxPieceBytes = 2048;

// What libsentencepiece indexes without checking, checked here first: a piece's text
// (SentencePiece field 1: at most kMaxPieceBytes of UTF-8, not empty) and the normalizer's and
// denormalizer's precompiled_charsmap (NormalizerSpec field 2), walked as its trie walk reads it.
void check_model_field(const Field& g, uint32_t parent, size_t at, const std::string& source) {
  if (parent == 1 && g.number == 1) {
    if (g.wire != 2) OC_USER_ERROR("{}: the piece at byte offset {} is not a string", source, at);
    if (g.payload.empty() || g.payload.size() > kMaxPieceBytes)
      OC_USER_ERROR("{}: the piece at byte offset {} has {} bytes (a piece has 1 to {})", source, at, g.payload.size(),
                    kMaxPieceBytes);
    if (size_t bad = text::utf8_invalid_offset(g.payload); bad != std::string_view::npos)
      OC_USER_ERROR("{}: the piece at byte offset {}: {}", source, at, text::utf8_error_message(g.payload, bad));
    // The library's Darts-clone trie takes NUL-terminated keys and aborts the process on one
    // that starts with NUL (found by fuzz_spiece).
    if (size_t nul = g.payload.find('\0'); nul != std::string_view::npos)
      OC_USER_ERROR("{}: the piece at byte offset {} holds a NUL byte at its byte {}", source, at, nul);
  }
  if ((parent == 3 || parent == 5) && g.number == 2) {
    if (g.wire != 2) OC_USER_ERROR("{}: precompiled_charsmap at byte offset {} is not bytes", source, at);
    if (!g.payload.empty())
      check_charsmap_blob(g.payload, fmt::format("{} ({} at byte offset {})", source,
                                                 parent == 3 ? "normalizer_spec" : "denormalizer_spec", at));
  }
}

// ModelProto: 1 pieces (repeated SentencePiece), 2 trainer_spec (3: model_type, 1 = UNIGRAM,
// the default), 3 normalizer_spec, 4 self_test_data, 5 denormalizer_spec.
void check_model_proto(std::string_view bytes, const std::string& source) {
  ProtoReader top(bytes, 0, source);
  size_t pieces = 0;
  uint64_t model_type = 1;
  while (!top.done()) {
    size_t at = top.offset();
    Field f = top.next();
    if (f.number > 5) continue;  // extensions (200 and up) and unknown fields: framing checked
    if (f.wire != 2)
      OC_USER_ERROR("{}: not a SentencePiece model: field {} has wire type {} at byte offset {}", source, f.number,
                    f.wire, at);
    size_t base = top.offset() - f.payload.size();
    ProtoReader inner(f.payload, base, source);
    while (!inner.done()) {  // every nested message must be well-framed too
      size_t g_at = inner.offset();
      Field g = inner.next();
      check_model_field(g, f.number, g_at, source);
      if (f.number == 2 && g.number == 3 && g.wire == 0) model_type = g.varint;
    }
    pieces += f.number == 1;
  }
  if (pieces == 0) OC_USER_ERROR("{}: not a SentencePiece model: no pieces ({} bytes)", source, bytes.size());
  static const char* kTypes[] = {"?", "unigram", "BPE", "word", "char"};
  if (model_type != 1)
    OC_USER_ERROR("{}: a SentencePiece {} model; only unigram models (T5, SigLIP) are supported", source,
                  model_type < 5 ? kTypes[model_type] : "unknown-type");
}

}  // namespace

struct SpmModel::Impl {
  sentencepiece::SentencePieceProcessor sp;
  std::vector<std::string> pieces;
};

SpmModel::SpmModel(std::string_view bytes, const std::string& source) : impl_(std::make_unique<Impl>()) {
  check_model_proto(bytes, source);
  auto st = impl_->sp.LoadFromSerializedProto(bytes);
  if (!st.ok()) OC_USER_ERROR("{}: libsentencepiece refuses the model: {}", source, st.ToString());
  for (int i = 0; i < impl_->sp.GetPieceSize(); i++) impl_->pieces.push_back(impl_->sp.IdToPiece(i));
  if (impl_->sp.unk_id() < 0) OC_USER_ERROR("{}: the SentencePiece model has no unknown piece", source);
}

SpmModel::SpmModel(SpmModel&&) noexcept = default;
SpmModel& SpmModel::operator=(SpmModel&&) noexcept = default;
SpmModel::~SpmModel() = default;

int32_t SpmModel::vocab_size() const { return impl_->sp.GetPieceSize(); }
int32_t SpmModel::unk_id() const { return impl_->sp.unk_id(); }
int32_t SpmModel::eos_id() const { return impl_->sp.eos_id(); }
int32_t SpmModel::pad_id() const { return impl_->sp.pad_id(); }
const std::string& SpmModel::piece(int32_t id) const { return impl_->pieces.at(size_t(id)); }
bool SpmModel::is_control(int32_t id) const { return impl_->sp.IsControl(id); }

void SpmModel::encode(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<int> out;
  auto st = impl_->sp.Encode(text, &out);
  OC_CHECK(st.ok(), "sentencepiece Encode failed: {}", st.ToString());
  ids.assign(out.begin(), out.end());
}

}  // namespace oc::text
