// fs::read_file refuses what is not a regular file (a CSV row naming /dev/zero must not
// fill memory), reads pipes only when asked, and stops at a cap that its message names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "core/fs.h"
#include "core/limits.h"

namespace oc {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "oc_read_file_" + std::to_string(::getpid()) + "_" + name;
}

TEST(ReadFile, DeviceFilesAreRefusedAtOnce) {
  for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
    auto r = fs::read_file(dev);
    ASSERT_FALSE(r.ok()) << dev;
    EXPECT_NE(r.error().find(dev), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("not a regular file (a character device)"), std::string::npos) << r.error();
  }
  auto dir = fs::read_file("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().find("is a folder"), std::string::npos) << dir.error();
}

TEST(ReadFile, PipesOnlyWhenAsked) {
  const std::string fifo = temp_path("fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused without the flag, and without blocking in open() although no writer exists.
  auto refused = fs::read_file(fifo);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("FIFO"), std::string::npos) << refused.error();
  std::thread writer([&] {
    FILE* f = std::fopen(fifo.c_str(), "w");
    if (!f) return;
    std::fputs("a,b\n1,2\n", f);
    std::fclose(f);
  });
  // With the flag, open() waits for the writer as for any pipe.
  auto r = fs::read_text(fifo, {.allow_pipe = true});
  ASSERT_TRUE(r.ok()) << r.error();
  const std::string got = *r;
  writer.join();
  EXPECT_EQ(got, "a,b\n1,2\n");
  ::unlink(fifo.c_str());
  // /dev/zero through the pipe flag still ends at the cap, with the cap named.
  auto zero = fs::read_file("/dev/zero", {.allow_pipe = true, .cap = Cap{"the 1 MiB test cap", 1 << 20}});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("the 1 MiB test cap"), std::string::npos) << zero.error();
}

TEST(ReadFile, RegularFilesOverTheCapAreRefusedBeforeReading) {
  const std::string p = temp_path("big");
  fs::write_atomic(p, std::string(100, 'x'));
  auto r = fs::read_file(p, {.cap = Cap{"the 64-byte test cap", 64}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(p), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("the 64-byte test cap"), std::string::npos) << r.error();
  auto ok = fs::read_file(p);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->size(), 100u);
  ::unlink(p.c_str());
}

}  // namespace
}  // namespace oc
