// core/progress.h: the bar on a terminal, plain lines in logs, rate and ETA over the run.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace oc {
namespace {

struct Capture {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  std::string text() {
    std::fflush(f);
    return std::string(buf, size);
  }
  ~Capture() {
    std::fclose(f);
    std::free(buf);
  }
};

TEST(Progress, StatusHasCountPercentRateAndEta) {
  Progress p("embed", 5000, "images", {.out = stderr, .tty = 0, .clock = [] { return 0.0; }});
  EXPECT_EQ(p.status(1200, 4.0), "1200/5000 images 24% 300.0 images/s ETA 13s");  // 12.7 s, rounded
  EXPECT_EQ(p.status(5000, 10.0), "5000/5000 images 100% 500.0 images/s");
  EXPECT_EQ(p.status(0, 0.0), "0/5000 images 0%");
  Progress unknown("download", 0, "bytes", {.out = stderr, .tty = 0, .clock = [] { return 0.0; }});
  EXPECT_EQ(unknown.status(10, 2.0), "10 bytes 5.0 bytes/s");
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(0.4), "0s");
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(-5), "0s");
}

TEST(Progress, LogLinesOnlyEveryIntervalAndNoneForShortRuns) {
  double t = 0;
  Capture c;
  {
    Progress p("eval", 100, "images", {.out = c.f, .tty = 0, .log_every_s = 30, .clock = [&] { return t; }});
    for (int i = 1; i <= 100; ++i) t = i * 0.1, p.update(i);  // 10 s in all: shorter than one interval
  }
  EXPECT_EQ(c.text(), "");
  Capture d;
  t = 0;
  {
    Progress p("eval", 100, "images", {.out = d.f, .tty = 0, .log_every_s = 30, .clock = [&] { return t; }});
    for (int i = 1; i <= 100; ++i) t = i * 1.0, p.update(i);  // 100 s: lines at 30, 60 and 90 s, then the last
  }
  EXPECT_EQ(d.text(),
            "eval: 30/100 images 30% 1.0 images/s ETA 1m10s\n"
            "eval: 60/100 images 60% 1.0 images/s ETA 40s\n"
            "eval: 90/100 images 90% 1.0 images/s ETA 10s\n"
            "eval: 100/100 images 100% 1.0 images/s (done)\n");
}

TEST(Progress, TerminalBarRedrawnInPlaceThenEndsTheLine) {
  double t = 0;
  Capture c;
  {
    Progress p("index", 4, "images", {.out = c.f, .tty = 1, .clock = [&] { return t; }});
    t = 1, p.update(1);
    t = 1.1, p.update(2);  // within the redraw interval: not drawn
    t = 2, p.update(4);
    p.finish();
    p.finish();
  }
  EXPECT_EQ(c.text(),
            "\rindex [#######.......................] 1/4 images 25% 1.0 images/s ETA 3s\033[K"
            "\rindex [##############################] 4/4 images 100% 2.0 images/s\033[K"
            "\rindex [##############################] 4/4 images 100% 2.0 images/s\033[K\n");
}

}  // namespace
}  // namespace oc
