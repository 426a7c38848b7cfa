// NumPy .npy files (format version 1.0): a float32 or int64 array, little-endian, C order.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"

namespace oc::io {

// Writes atomically. dtype F32, F64, I64 or I32.
void write_npy(const std::string& path, const TensorView& t);

}  // namespace oc::io
