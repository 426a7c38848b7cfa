// CSV/TSV reading as pandas.read_csv: quoting, CRLF, BOM, blank lines, the missing-column
// message that catches the comma-CSV-with-default-TAB mistake.
#include "data/csv.h"

#include <gtest/gtest.h>

#include "data/helpers.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;
using V = std::vector<std::string>;

std::vector<V> rows_of(const std::string& text, char sep) {
  std::string d = temp_dir("csvrows");
  write_text(d + "/f.csv", text);
  auto s = open_stream(d + "/f.csv");
  EXPECT_TRUE(s.ok());
  CsvReader r(std::move(*s), d + "/f.csv", sep);
  std::vector<V> out;
  V row;
  for (;;) {
    auto n = r.next(&row);
    EXPECT_TRUE(n.ok()) << n.error();
    if (!n.ok() || !*n) break;
    out.push_back(row);
  }
  return out;
}

TEST(Csv, Rfc4180Quoting) {
  auto r = rows_of("filepath,title\n\"a,b.jpg\",\"say \"\"hi\"\"\"\nc.jpg,\"two\nlines\"\r\nd.jpg,plain\n", ',');
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[1], (V{"a,b.jpg", "say \"hi\""}));
  EXPECT_EQ(r[2], (V{"c.jpg", "two\nlines"}));
  EXPECT_EQ(r[3], (V{"d.jpg", "plain"}));
}

TEST(Csv, TabsBomBlankLinesTrailingSeparator) {
  auto r = rows_of("\xEF\xBB\xBF" "filepath\ttitle\n\na.jpg\tx y\n\r\nb.jpg\t\nc.jpg\tlast", '\t');
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], (V{"filepath", "title"}));
  EXPECT_EQ(r[1], (V{"a.jpg", "x y"}));
  EXPECT_EQ(r[2], (V{"b.jpg", ""}));
  EXPECT_EQ(r[3], (V{"c.jpg", "last"}));  // no final newline
}

TEST(Csv, UnclosedQuoteIsAnErrorWithTheLine) {
  std::string d = temp_dir("csvbad");
  write_text(d + "/f.csv", "a,b\nx,\"never closed\n");
  auto s = open_stream(d + "/f.csv");
  CsvReader r(std::move(*s), d + "/f.csv", ',');
  V row;
  ASSERT_TRUE(r.next(&row).ok());
  auto n = r.next(&row);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().find("line 2"), std::string::npos) << n.error();
}

TEST(Csv, MissingColumnNamesColumnsAndSeparator) {
  std::string d = temp_dir("csvcols");
  write_text(d + "/f.csv", "filepath,title\na.jpg,x\n");
  auto c = read_csv_columns(d + "/f.csv", '\t', {"filepath", "title"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("no column 'filepath'"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("columns found: 'filepath,title'"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("TAB"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("--csv-separator ','"), std::string::npos) << c.error();
  auto ok = read_csv_columns(d + "/f.csv", ',', {"filepath", "title"}, {"label"});
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->rows, 1);
  EXPECT_EQ(ok->cols[0], (V{"a.jpg"}));
  EXPECT_EQ(ok->cols[2], (V{""}));  // optional column absent: empty values
}

TEST(Csv, SeparatorsAndWriting) {
  EXPECT_EQ(*parse_separator("\\t"), '\t');
  EXPECT_EQ(*parse_separator("\t"), '\t');
  EXPECT_EQ(*parse_separator(","), ',');
  EXPECT_FALSE(parse_separator("ab").ok());
  EXPECT_EQ(csv_row({"a", "b,c", "say \"x\"", "l\nm"}, ','), "a,\"b,c\",\"say \"\"x\"\"\",\"l\nm\"\n");
  EXPECT_EQ(csv_row({"a", "b,c"}, '\t'), "a\tb,c\n");
  // Round trip through the reader.
  auto r = rows_of(csv_row({"h1", "h2"}, ',') + csv_row({"x,\"y\"", "z\nw"}, ','), ',');
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1], (V{"x,\"y\"", "z\nw"}));
}

}  // namespace
}  // namespace oc::data
