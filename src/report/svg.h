// A small SVG chart writer for the HTML report: line charts (axes, "nice" ticks,
// gridlines, legend), horizontal bar charts and heat maps, as inline <svg> strings. No
// JavaScript is needed to render them; the report's optional hover script reads the
// data-* attributes the line chart puts on its root element.
//
// Non-finite values are skipped (and counted, so the page can say so); an empty chart
// draws its frame and "no data"; a single point or a flat series gets a padded domain.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oc::report {

struct Series {
  std::string name;
  std::string color = "#2563eb";
  std::vector<double> x, y;  // same length
  bool markers = false;      // a circle per point (always drawn for a single point)
  double stroke_width = 1.75;
  double opacity = 1.0;
};

struct LineChart {
  std::string x_label, y_label;
  std::vector<Series> series;
  int width = 560, height = 260;
  std::optional<double> y_min, y_max;  // fixed y domain (e.g. 0..1 for accuracies)
  bool y_percent = false;               // tick labels as percentages of 1
  bool x_integer = false;               // x ticks on whole numbers only (epochs)
};

struct Chart {
  std::string svg;
  size_t points = 0;   // finite points drawn (before any per-pixel reduction)
  size_t skipped = 0;  // non-finite values left out
};

Chart line_chart(const LineChart& c);

struct BarChart {
  std::vector<std::string> labels;
  std::vector<double> values;
  double max_value = 1.0;
  bool percent = true;  // value labels as percentages of 1
  int width = 560, bar_height = 20;
  std::string color = "#2563eb";
};

// Horizontal bars, one row per label, value written at the end of each bar.
Chart bar_chart(const BarChart& c);

struct HeatMap {
  std::vector<std::string> row_labels, col_labels;
  std::vector<int64_t> counts;  // rows x cols, row-major
  std::string row_title = "true class", col_title = "predicted class";
  int max_size = 620;  // the cell grid's width at most (px)
};

// Cells coloured by the row-normalised fraction, with the count written in each cell when
// the cells are large enough to hold it; every cell has a <title> (browser tooltip).
Chart heat_map(const HeatMap& h);

// Round tick values covering [lo, hi] (about `target` of them): steps of 1, 2, 2.5 or 5 x 10^k.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace oc::report
