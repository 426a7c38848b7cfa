// Files that must stay inside their folders (issue 40, item 1; issue 42, item 6): the walk
// sees each real folder once (a symlink loop is walked once, not 2^depth times), follows no
// link out of the root, and check_fd_beneath judges the file the kernel opened, not the
// path's text. And the folder lock (issue 40, item 2) never writes through a link.
#include "core/real_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/check.h"
#include "core/folder_lock.h"
#include "core/fs.h"
#include "test_util.h"

namespace oc {
namespace {

bool png_name(std::string_view n) { return n.size() > 4 && n.substr(n.size() - 4) == ".png"; }

TEST(RealPath, WalkSeesEachFolderOnceAndNoLinkOutOfTheRoot) {
  const std::string d = test::fresh_dir("real_path_walk");
  fs::make_dirs(d + "/top/a/b");
  fs::make_dirs(d + "/outside");
  for (const char* p : {"/top/x.png", "/top/a/y.png", "/top/a/b/z.png", "/outside/secret.png"})
    fs::write_atomic(d + p, std::string("png"));
  // Two loops (each `sub/x -> ..`: 2^40 paths for the old walk at depth 40), a link to a
  // file outside, a link to a folder outside, a link to a file inside, a FIFO.
  ASSERT_EQ(::symlink("..", (d + "/top/a/up").c_str()), 0);
  ASSERT_EQ(::symlink("..", (d + "/top/a/b/up").c_str()), 0);
  ASSERT_EQ(::symlink((d + "/outside/secret.png").c_str(), (d + "/top/leak.png").c_str()), 0);
  ASSERT_EQ(::symlink((d + "/outside").c_str(), (d + "/top/out").c_str()), 0);
  ASSERT_EQ(::symlink("a/y.png", (d + "/top/alias.png").c_str()), 0);
  ASSERT_EQ(::mkfifo((d + "/top/fifo.png").c_str(), 0600), 0);
  fs::WalkCounts c;
  auto files = fs::walk_files(d + "/top", png_name, &c);
  std::vector<std::string> want = {d + "/top/a/b/z.png", d + "/top/a/y.png", d + "/top/alias.png",
                                   d + "/top/x.png"};
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, want);
  EXPECT_EQ(c.links_outside, 2);  // leak.png and out
  EXPECT_EQ(c.repeats, 2);        // the two `up` links lead to folders already walked
  EXPECT_EQ(c.special, 1);        // the FIFO
  EXPECT_NE(c.first_outside.find("outside"), std::string::npos) << c.first_outside;
}

TEST(RealPath, OpenFileIsJudgedByWhatTheKernelOpened) {
  const std::string d = test::fresh_dir("real_path_fd");
  fs::make_dirs(d + "/top");
  fs::write_atomic(d + "/top/in.png", std::string("png"));
  fs::write_atomic(d + "/secret", std::string("secret"));
  ASSERT_EQ(::symlink((d + "/secret").c_str(), (d + "/top/swapped.png").c_str()), 0);
  ASSERT_EQ(::symlink("in.png", (d + "/top/alias.png").c_str()), 0);
  auto check = [&](const std::string& p, const std::vector<std::string>& roots) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << p;
    Status s = fs::check_fd_beneath(fd, p, roots);
    ::close(fd);
    return s;
  };
  EXPECT_TRUE(check(d + "/top/in.png", {d + "/top"}).ok());
  EXPECT_TRUE(check(d + "/top/alias.png", {d + "/top"}).ok());
  Status s = check(d + "/top/swapped.png", {d + "/top"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("resolves to " + fs::real_path_or_self(d + "/secret") + ", outside"), std::string::npos)
      << s.error();
  // A root that is itself reached through a link is resolved too; a prefix is not a parent.
  ASSERT_EQ(::symlink((d + "/top").c_str(), (d + "/top-link").c_str()), 0);
  EXPECT_TRUE(check(d + "/top-link/in.png", {d + "/top-link"}).ok());
  EXPECT_FALSE(check(d + "/top/in.png", {d + "/to"}).ok());
}

// The lock's refusals, and what was planted stays as it was.
TEST(FolderLockLinks, ALockThatIsALinkOrNotOursIsRefusedAndNothingIsWritten) {
  const std::string d = test::fresh_dir("folder_lock_links");
  fs::make_dirs(d + "/run");
  const std::string lock = d + "/run/.lock";
  fs::write_atomic(d + "/victim", std::string("precious"));
  auto refused = [&](const std::string& needle) {
    try {
      FolderLock l(d + "/run");
      ADD_FAILURE() << "the lock was taken (" << needle << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  ASSERT_EQ(::symlink((d + "/victim").c_str(), lock.c_str()), 0);
  refused("is a symbolic link; refusing to follow it");
  EXPECT_EQ(fs::read_text(d + "/victim").value(), "precious");
  ::unlink(lock.c_str());
  ASSERT_EQ(::symlink((d + "/created-by-link").c_str(), lock.c_str()), 0);  // dangling
  refused("is a symbolic link");
  EXPECT_FALSE(fs::exists(d + "/created-by-link"));
  ::unlink(lock.c_str());
  ASSERT_EQ(::link((d + "/victim").c_str(), lock.c_str()), 0);  // a hard link to another file
  refused("has other names (hard links)");
  EXPECT_EQ(fs::read_text(d + "/victim").value(), "precious");
  ::unlink(lock.c_str());
  fs::write_atomic(lock, std::string("not a lock note"));
  refused("does not hold a lock note");
  EXPECT_EQ(fs::read_text(lock).value(), "not a lock note");
  ::unlink(lock.c_str());
  ASSERT_EQ(::mkfifo(lock.c_str(), 0600), 0);  // refused at once, no wait for a writer
  refused("is not a regular file");
  ::unlink(lock.c_str());
  {  // a fresh folder, then its own note again: taken both times
    FolderLock first(d + "/run");
    EXPECT_EQ(fs::read_text(lock).value().rfind("pid ", 0), 0u);
  }
  FolderLock again(d + "/run");
  EXPECT_EQ(fs::read_text(lock).value().rfind("pid " + std::to_string(::getpid()), 0), 0u);
}

}  // namespace
}  // namespace oc
