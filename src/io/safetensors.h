// safetensors files (huggingface/safetensors): an 8-byte little-endian header length, a
// JSON header, then the tensors' bytes back to back. The reader performs every check of
// the reference implementation (formats.md section 2) and rejects duplicate JSON keys;
// each tensor is read once, straight into its HostTensor. The writer produces what the
// reference serializer does: tensors sorted by dtype alignment then name, the header padded
// with spaces to 8 bytes, `__metadata__` first, written atomically.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"

namespace oc::io {

struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;  // as written ("F32", "U16", "F8_E4M3", ...)
  bool supported = false;  // dtype maps to an oc::DType (then `dtype` is set)
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // relative to data_start
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;  // sorted by data offset (file order)
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + header length
};

// Validates a header given its JSON bytes and the file's total size. `where` names the
// source in error messages; offsets in messages are file offsets.
Result<SafetensorsHeader> parse_safetensors_header(std::span<const uint8_t> json, uint64_t file_size,
                                                   const std::string& where);
Result<SafetensorsHeader> read_safetensors_header(const std::string& path);

struct Safetensors {
  std::vector<std::pair<std::string, HostTensor>> tensors;  // file order
  std::map<std::string, std::string> metadata;
};
Result<Safetensors> read_safetensors(const std::string& path);

// Copies a view's nbytes() to host memory: for views over memory the host cannot read
// (a device backend's), called for one tensor at a time as the file is written.
using TensorReader = std::function<void(const TensorView& v, void* host_dst)>;

// Throws oc::Error on a duplicate or reserved name, a null view with data, or I/O failure.
// Without `read` the views are host memory, written as they are.
void write_safetensors(const std::string& path, std::span<const std::pair<std::string, TensorView>> tensors,
                       const std::map<std::string, std::string>& metadata = {}, const TensorReader& read = {});
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, HostTensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The header bytes write_safetensors would produce (length prefix + padded JSON).
std::vector<uint8_t> safetensors_header_bytes(std::span<const std::pair<std::string, TensorView>> tensors,
                                              const std::map<std::string, std::string>& metadata,
                                              std::vector<size_t>* order = nullptr);

}  // namespace oc::io
