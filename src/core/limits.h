// Bounds for sizes that files claim. Every reader that allocates from a count in a file
// (tensor shapes, IDX dimensions, thrift container lengths, whole-file reads) asks here
// first: "does what the file claims fit in the bytes it holds?" and "is it under the cap?".
// The caps are documented in docs/RELIABILITY.md ("Hostile input"); their messages name them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace oc {

// A named limit in bytes. `name` is what error messages and docs call it.
struct Cap {
  std::string_view name;
  uint64_t bytes;
};

// fs::read_file: the largest file read whole into memory (captions, configs, images,
// vocabularies and CSVs are far smaller; checkpoints are read with pread, not this).
inline constexpr Cap kReadFileCap{"the 4 GiB whole-file read cap", uint64_t(4) << 30};
// .pt loading: bytes materialised beyond the bytes the checkpoint stores (views that
// repeat a storage, expanded stride-0 tensors), summed over the file.
inline constexpr Cap kPtExpansionCap{"the 256 MiB cap on tensor data a .pt file may expand to beyond its storages",
                                     uint64_t(256) << 20};
// Fashion-MNIST IDX files: the decoded array.
inline constexpr Cap kIdxCap{"the 8 GiB IDX array cap", uint64_t(8) << 30};

// `count` items of `unit` bytes each, claimed by `what` in `where`, must fit in the
// `present` bytes that are really there. Returns count * unit, or an error such as
// "x.idx: header claims 300 x 16777216 bytes = 5033164800 bytes but only 100 are present".
// Overflow of count * unit is an error too.
Result<uint64_t> claimed_bytes(std::string_view where, std::string_view what, uint64_t count, uint64_t unit,
                               uint64_t present);
// `bytes` (claimed by `what` in `where`) must not exceed `cap`; the error names the cap.
Status within_cap(std::string_view where, std::string_view what, uint64_t bytes, const Cap& cap);

// A JSON library message without its "[json.exception.out_of_range.406] " prefix, for
// errors that name the file themselves ("x.safetensors: ... number overflow parsing '1e999'").
std::string json_error_text(const char* what);

}  // namespace oc
