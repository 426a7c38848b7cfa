// Issue 42 #10: the unpickler's memory is bounded per byte of the pickle (a 10 MB pickle of
// one-byte opcodes took 2.96 GB, 20 MB ended in a bare std::bad_alloc): an error naming the
// file and the byte offset instead.
#include <gtest/gtest.h>

#include "io/pickle.h"

namespace oc::io {
namespace {

using namespace std::string_literals;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

TEST(PickleMemory, OneByteOpcodesAreBoundedPerFileByte) {
  // 2 MB of EMPTY_LIST: ~200 bytes of node each, 400 MB unbounded; the cap is 64 x 2 MB + 64 MiB.
  std::string pkl = "\x80\x02"s + std::string(2 << 20, ']') + ".";
  auto r = unpickle(bytes_of(pkl), "bomb.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("bomb.pt: pickle at byte "), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("over the cap of 64 x the pickle's 2097155 bytes + 64 MiB"), std::string::npos) << r.error();
  // A small pickle of the same opcodes is fine (the slack).
  std::string small = "\x80\x02"s + std::string(1000, ']') + ".";
  EXPECT_TRUE(unpickle(bytes_of(small), "small.pt").ok());
}

TEST(PickleMemory, SharedReferencesCopiedAtStopCountToo) {
  // A list of 1000 Nones, memoized, referenced 200,000 times (2 bytes each): 2 x 10^8 copies.
  std::string pkl = "\x80\x02]q\x00("s + std::string(1000, 'N') + "e](";
  for (int i = 0; i < 200000; i++) pkl += "h\x00"s;
  pkl += "e.";
  auto r = unpickle(bytes_of(pkl), "shared.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("shared.pt: pickle"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace oc::io
