// Bitwise comparison of the weights of two checkpoints (or weight files): same names in the
// same order, same bytes. `what` says which runs were compared, for the failure message.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "model/weights.h"

namespace oc::test {

inline void expect_same_weights(const std::string& a_path, const std::string& b_path, const std::string& what) {
  NamedTensors a = read_state_dict(a_path), b = read_state_dict(b_path);
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first) << what;
    EXPECT_EQ(a[i].second.bytes, b[i].second.bytes) << a[i].first << " differs " << what;
  }
}

}  // namespace oc::test
