// The report's SVG charts: line chart, horizontal bars, heat map (see svg.h).
#include "report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/check.h"
#include "report/html.h"

namespace oc::report {

namespace {

// Text metrics without a font engine: an average advance of 0.6 em covers system-ui
// digits and lower-case letters well enough to keep labels from overlapping.
constexpr double kFont = 11.0;
double text_width(std::string_view s, double font = kFont) { return double(s.size()) * font * 0.6; }

std::string truncate(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t n = max_chars - 1;
  while (n > 0 && (uint8_t(s[n]) & 0xC0) == 0x80) --n;  // do not split a UTF-8 sequence
  return s.substr(0, n) + "\u2026";
}

std::string tick_label(double v, bool percent) {
  if (percent) {
    const double p = v * 100.0;
    return format_number(std::fabs(p - std::round(p)) < 1e-9 ? std::round(p) : p, 3) + "%";
  }
  return format_number(v, 4);
}

// "2.50e-04" -> "2.5e-4": the mantissa without trailing zeros, the exponent without padding.
std::string tidy_exponent(const std::string& l) {
  const size_t e = l.find('e');
  if (e == std::string::npos) return l;
  std::string m = l.substr(0, e), x = l.substr(e + 1);
  if (m.find('.') != std::string::npos) {
    while (m.back() == '0') m.pop_back();
    if (m.back() == '.') m.pop_back();
  }
  const bool neg = !x.empty() && x[0] == '-';
  if (!x.empty() && (x[0] == '-' || x[0] == '+')) x.erase(0, 1);
  while (x.size() > 1 && x[0] == '0') x.erase(0, 1);
  return m + "e" + (neg ? "-" : "") + x;
}

// One notation for all ticks of an axis, with as few digits as tell them apart: fixed
// decimals normally, exponent form ("2e-4") when every tick is tiny or huge (learning rates).
std::vector<std::string> tick_labels(const std::vector<double>& ticks, bool percent) {
  std::vector<std::string> out;
  if (percent) {
    for (double t : ticks) out.push_back(tick_label(t, true));
    return out;
  }
  double max_abs = 0;
  for (double t : ticks) max_abs = std::max(max_abs, std::fabs(t));
  const bool exp_form = max_abs > 0 && (max_abs < 1e-2 || max_abs >= 1e7);
  char buf[64];
  for (int d = 0; d <= 8; ++d) {
    out.clear();
    bool exact = true;
    for (double t : ticks) {
      std::snprintf(buf, sizeof buf, exp_form ? "%.*e" : "%.*f", d, t);
      exact &= std::fabs(std::strtod(buf, nullptr) - t) <= 1e-9 * std::max(max_abs, 1e-300);
      std::string l = buf;
      if (exp_form) l = t == 0 ? "0" : tidy_exponent(l);
      if (l == "-0") l = "0";
      out.push_back(l);
    }
    if (exact) break;
  }
  return out;
}

double tick_step(double lo, double hi, int target) {
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  const double m = n < 1.5 ? 1 : n < 2.25 ? 2 : n < 3.5 ? 2.5 : n < 7.5 ? 5 : 10;
  return m * mag;
}

std::vector<double> ticks_with_step(double lo, double hi, double step) {
  std::vector<double> t;
  const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
  for (double i = first; i <= last && t.size() < 64; i += 1) t.push_back(i * step + 0.0);  // + 0.0: no "-0"
  return t;
}

struct Pt {
  double x, y;
};

// Keeps, for each pixel column, the first, lowest, highest and last point in x order: the
// polyline looks the same as with every point (spikes included) at a bounded size.
std::vector<Pt> reduce_per_column(const std::vector<Pt>& pts, double x0, double x1, int columns) {
  if (pts.size() <= size_t(columns) * 4) return pts;
  std::vector<Pt> out;
  size_t i = 0;
  while (i < pts.size()) {
    const int col = int((pts[i].x - x0) / (x1 - x0) * columns);
    size_t j = i, lo = i, hi = i;
    while (j < pts.size() && int((pts[j].x - x0) / (x1 - x0) * columns) == col) {
      if (pts[j].y < pts[lo].y) lo = j;
      if (pts[j].y > pts[hi].y) hi = j;
      ++j;
    }
    size_t keep[4] = {i, std::min(lo, hi), std::max(lo, hi), j - 1};
    for (int k = 0; k < 4; ++k)
      if (k == 0 || keep[k] != keep[k - 1]) out.push_back(pts[keep[k]]);
    i = j;
  }
  return out;
}

// A line chart's data extent and, from it, its domains and ticks.
struct LineDomain {
  double xmin, xmax, ymin, ymax;  // the data's (x widened when it is one value)
  double y0 = 0, y1 = 0;          // y's domain: padded, widened to whole ticks
  std::vector<double> xt, yt;
};

// Finite points per series, sorted by x (steps arrive sorted; this keeps it true). Counts the
// points drawn and skipped in `out`; the extent goes to d (0..1 when nothing is finite).
std::vector<std::vector<Pt>> finite_points(const LineChart& c, Chart& out, LineDomain& d) {
  std::vector<std::vector<Pt>> pts(c.series.size());
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  for (size_t s = 0; s < c.series.size(); ++s) {
    const Series& se = c.series[s];
    OC_CHECK(se.x.size() == se.y.size(), "series '{}': {} x values, {} y values", se.name, se.x.size(), se.y.size());
    for (size_t i = 0; i < se.x.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) {
        ++out.skipped;
        continue;
      }
      pts[s].push_back({se.x[i], se.y[i]});
      xmin = std::min(xmin, se.x[i]), xmax = std::max(xmax, se.x[i]);
      ymin = std::min(ymin, se.y[i]), ymax = std::max(ymax, se.y[i]);
    }
    std::stable_sort(pts[s].begin(), pts[s].end(), [](const Pt& a, const Pt& b) { return a.x < b.x; });
    out.points += pts[s].size();
  }
  if (out.points == 0) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  d.xmin = xmin, d.xmax = xmax, d.ymin = ymin, d.ymax = ymax;
  return pts;
}

// Domains: x spans the data; y is padded 5% and widened to whole ticks.
void set_domains(const LineChart& c, LineDomain& d) {
  double &xmin = d.xmin, &xmax = d.xmax, &y0 = d.y0, &y1 = d.y1;
  const double ymin = d.ymin;
  if (xmax == xmin) {
    const double dx = c.x_integer ? 1.0 : std::max(std::fabs(xmin) * 0.05, 1.0);
    xmin -= dx, xmax += dx;
  }
  y0 = ymin, y1 = d.ymax;
  if (y1 == y0) {
    const double dy = std::max(std::fabs(y0) * 0.1, 1e-3);
    y0 -= dy, y1 += dy;
  } else {
    const double pad = (y1 - y0) * 0.05;
    if (!c.y_min) y0 -= pad;
    if (!c.y_max) y1 += pad;
  }
  if (c.y_min) y0 = std::min(y0, *c.y_min);
  if (c.y_max) y1 = std::max(y1, *c.y_max);
  if (y0 < 0 && ymin >= 0) y0 = 0;  // padding must not cross zero (a learning rate, a loss)
  const double ystep = tick_step(y0, y1, 5);
  if (!c.y_min) y0 = std::floor(y0 / ystep + 1e-9) * ystep;
  if (y0 < 0 && ymin >= 0) y0 = 0;
  if (!c.y_max) y1 = std::ceil(y1 / ystep - 1e-9) * ystep;
  d.yt = ticks_with_step(y0, y1, ystep);
  double xstep = tick_step(xmin, xmax, std::max(2, c.width / 110));
  if (c.x_integer) xstep = std::max(1.0, std::ceil(xstep));
  d.xt = ticks_with_step(xmin, xmax, xstep);
}

// The plot area (left, top, width, height) and the data-to-pixel maps.
struct PlotArea {
  double L, T, W, H;
  const LineDomain& d;
  double px(double x) const { return L + (x - d.xmin) / (d.xmax - d.xmin) * W; }
  double py(double y) const { return T + H - (y - d.y0) / (d.y1 - d.y0) * H; }
};

// Gridlines with their tick labels, the axes and their titles, and "no data" when empty.
void draw_axes(std::string& s, const LineChart& c, const PlotArea& a, const std::vector<std::string>& ylabels,
               const std::vector<std::string>& xlabels, bool empty) {
  const double L = a.L, T = a.T, W = a.W, H = a.H;
  for (size_t i = 0; i < a.d.yt.size(); ++i) {
    const double y = a.py(a.d.yt[i]);
    s += fmt::format("<line class=\"gridline\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", L, y, L + W, y);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", L - 6, y + 3.5,
                     escape(ylabels[i]));
  }
  for (size_t i = 0; i < a.d.xt.size(); ++i) {
    const double x = a.px(a.d.xt[i]);
    s += fmt::format("<line class=\"gridline x\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", x, T, x, T + H);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, T + H + 15,
                     escape(xlabels[i]));
  }
  s += fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", L, T, L, T + H);
  s += fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", L, T + H, L + W, T + H);
  if (!c.x_label.empty())
    s += fmt::format("<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", L + W / 2,
                     double(c.height) - 6, escape(c.x_label));
  if (!c.y_label.empty())
    s += fmt::format(
        "<text class=\"axis-label\" x=\"0\" y=\"0\" text-anchor=\"middle\" transform=\"translate(13 {:.1f}) rotate(-90)\">{}</text>\n",
        T + H / 2, escape(c.y_label));
  if (empty)
    s += fmt::format("<text class=\"no-data\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no data</text>\n", L + W / 2,
                     T + H / 2);
}

// Series: one polyline each (exact values in data-v for the hover script), markers when asked.
void draw_series(std::string& s, const LineChart& c, const PlotArea& a, const std::vector<std::vector<Pt>>& pts) {
  for (size_t k = 0; k < c.series.size(); ++k) {
    const Series& se = c.series[k];
    const std::vector<Pt> drawn = reduce_per_column(pts[k], a.d.xmin, a.d.xmax, int(a.W));
    if (drawn.empty()) continue;
    std::string points, values;
    for (const Pt& p : drawn) {
      points += fmt::format("{:.1f},{:.1f} ", a.px(p.x), a.py(p.y));
      values += fmt::format("{:.9g} {:.9g} ", p.x, p.y);
    }
    points.pop_back(), values.pop_back();
    s += fmt::format(
        "<polyline class=\"series\" data-name=\"{}\" data-v=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
        "stroke-opacity=\"{}\" stroke-linejoin=\"round\" stroke-linecap=\"round\" points=\"{}\"/>\n",
        escape(se.name), values, escape(se.color), se.stroke_width, se.opacity, points);
    if ((se.markers || drawn.size() == 1) && drawn.size() <= 400)
      for (const Pt& p : drawn)
        s += fmt::format(
            "<circle class=\"marker\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\"><title>{}: {} at "
            "{}</title></circle>\n",
            a.px(p.x), a.py(p.y), escape(se.color), escape(se.name), escape(tick_label(p.y, c.y_percent)),
            escape(format_number(p.x, 6)));
  }
}

void draw_legend(std::string& s, const LineChart& c, double x) {
  for (const Series& se : c.series) {
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"12\" x2=\"{:.1f}\" y2=\"12\" stroke=\"{}\" stroke-width=\"3\" "
        "stroke-opacity=\"{}\"/>",
        x, x + 16, escape(se.color), std::max(se.opacity, 0.5));
    s += fmt::format("<text class=\"legend\" x=\"{:.1f}\" y=\"16\">{}</text>\n", x + 21, escape(se.name));
    x += 21 + text_width(se.name) + 18;
  }
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) return {lo};
  return ticks_with_step(lo, hi, tick_step(lo, hi, target));
}

Chart line_chart(const LineChart& c) {
  Chart out;
  LineDomain d;
  const std::vector<std::vector<Pt>> pts = finite_points(c, out, d);
  const bool empty = out.points == 0;
  set_domains(c, d);

  // Layout from the widest y tick label, so labels never overlap the axis title.
  const std::vector<std::string> ylabels = tick_labels(d.yt, c.y_percent), xlabels = tick_labels(d.xt, false);
  double ylab_w = 0;
  for (auto& l : ylabels) ylab_w = std::max(ylab_w, text_width(l));
  const bool legend = c.series.size() > 1;
  const double L = std::ceil(ylab_w) + 10 + (c.y_label.empty() ? 0 : 20), R = 16, T = legend ? 28 : 12, B = 42;
  const PlotArea area{L, T, c.width - L - R, c.height - T - B, d};

  std::string& s = out.svg;
  s += fmt::format(
      "<svg class=\"chart line-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" data-x0=\"{:.9g}\" data-x1=\"{:.9g}\" data-y0=\"{:.9g}\" data-y1=\"{:.9g}\" "
      "data-l=\"{}\" data-t=\"{}\" data-w=\"{}\" data-h=\"{}\" data-percent=\"{}\">\n",
      c.width, c.height, c.width, c.height, d.xmin, d.xmax, d.y0, d.y1, L, T, area.W, area.H, c.y_percent ? 1 : 0);
  draw_axes(s, c, area, ylabels, xlabels, empty);
  draw_series(s, c, area, pts);
  if (legend) draw_legend(s, c, L);
  s += "</svg>\n";
  return out;
}

Chart bar_chart(const BarChart& c) {
  OC_CHECK(c.labels.size() == c.values.size(), "bar chart: {} labels, {} values", c.labels.size(), c.values.size());
  Chart out;
  const size_t n = c.labels.size();
  constexpr size_t kMaxChars = 28;
  double label_w = 0;
  for (auto& l : c.labels) label_w = std::max(label_w, text_width(truncate(l, kMaxChars)));
  const double gap = 6, T = 22, B = 8, L = std::ceil(label_w) + 12, R = 54;
  const double W = c.width - L - R, bh = c.bar_height;
  const double height = T + double(n) * (bh + gap) - (n ? gap : 0) + B;
  const double vmax = c.max_value > 0 ? c.max_value : 1.0;
  std::string& s = out.svg;
  s += fmt::format("<svg class=\"chart bar-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" "
                   "viewBox=\"0 0 {} {:.0f}\" role=\"img\">\n",
                   c.width, height, c.width, height);
  for (double t : ticks_with_step(0, vmax, tick_step(0, vmax, 4))) {
    const double x = L + t / vmax * W;
    s += fmt::format("<line class=\"gridline x\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", x, T - 4, x,
                     height - B);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, T - 8,
                     escape(tick_label(t, c.percent)));
  }
  for (size_t i = 0; i < n; ++i) {
    const double y = T + double(i) * (bh + gap), v = c.values[i];
    const std::string vtext = !std::isfinite(v) ? "n/a" : c.percent ? format_percent(v, 1) : format_number(v, 4);
    s += fmt::format("<text class=\"bar-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}<title>{}</title></text>",
                     L - 8, y + bh / 2 + 4, escape(truncate(c.labels[i], kMaxChars)), escape(c.labels[i]));
    s += fmt::format("<rect class=\"track\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"3\"/>", L, y, W, bh);
    if (!std::isfinite(v)) {
      ++out.skipped;
    } else {
      const double w = std::clamp(v / vmax, 0.0, 1.0) * W;
      s += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"3\" fill=\"{}\">"
                       "<title>{}: {}</title></rect>",
                       L, y, w, bh, escape(c.color), escape(c.labels[i]), escape(vtext));
      ++out.points;
    }
    s += fmt::format("<text class=\"bar-value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                     L + (std::isfinite(v) ? std::clamp(v / vmax, 0.0, 1.0) * W : 0) + 6, y + bh / 2 + 4, escape(vtext));
  }
  s += "</svg>\n";
  return out;
}

Chart heat_map(const HeatMap& h) {
  const size_t rows = h.row_labels.size(), cols = h.col_labels.size();
  OC_CHECK(h.counts.size() == rows * cols, "heat map: {} counts for {} x {}", h.counts.size(), rows, cols);
  Chart out;
  constexpr size_t kMaxChars = 22;
  const double cell = std::clamp(double(h.max_size) / double(std::max<size_t>(cols, 1)), 10.0, 46.0);
  double row_w = 0, col_w = 0;
  for (auto& l : h.row_labels) row_w = std::max(row_w, text_width(truncate(l, kMaxChars)));
  for (auto& l : h.col_labels) col_w = std::max(col_w, text_width(truncate(l, kMaxChars)));
  // Column labels are rotated 45 degrees under the grid: they need ~0.71 of their width below
  // it and reach as far left of their cell.
  const double L = std::max(std::ceil(row_w) + 30, col_w * 0.71 - cell / 2 + 8), T = 8;
  const double gw = cell * double(cols), gh = cell * double(rows);
  const double B = col_w * 0.71 + 40, R = 12;
  const double width = L + gw + R, height = T + gh + B;
  std::vector<int64_t> row_sum(rows, 0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < cols; ++k) row_sum[r] += h.counts[r * cols + k];
  const double font = std::min(12.0, cell * 0.34);
  std::string& s = out.svg;
  s += fmt::format("<svg class=\"chart heat-map\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
                   "viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\">\n",
                   width, height, width, height);
  for (size_t r = 0; r < rows; ++r) {
    const double y = T + double(r) * cell;
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}<title>{}</title></text>\n",
                     L - 6, y + cell / 2 + 3.5, escape(truncate(h.row_labels[r], kMaxChars)), escape(h.row_labels[r]));
    for (size_t k = 0; k < cols; ++k) {
      const int64_t n = h.counts[r * cols + k];
      const double f = row_sum[r] > 0 ? double(n) / double(row_sum[r]) : 0.0;
      // White to blue-700 (#1d4ed8) by the row fraction; any non-zero count gets a visible tint.
      const double m = n > 0 ? 0.06 + 0.94 * f : 0.0;
      const int R8 = int(std::lround(255 + (0x1d - 255) * m)), G8 = int(std::lround(255 + (0x4e - 255) * m)),
                B8 = int(std::lround(255 + (0xd8 - 255) * m));
      const double x = L + double(k) * cell;
      s += fmt::format("<rect class=\"cell{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#{:02x}{:02x}{:02x}\">"
                       "<title>true {} \u2192 predicted {}: {} ({})</title></rect>",
                       r == k ? " diag" : "", x, y, cell, cell, R8, G8, B8, escape(h.row_labels[r]),
                       escape(h.col_labels[k]), n, format_percent(f));
      const std::string txt = std::to_string(n);
      if (cell >= 16 && text_width(txt, font) <= cell - 3)
        s += fmt::format("<text class=\"count\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"{:.1f}\" "
                         "fill=\"{}\">{}</text>",
                         x + cell / 2, y + cell / 2 + font * 0.36, font, m > 0.5 ? "#ffffff" : "#1f2937", txt);
      ++out.points;
    }
    s += "\n";
  }
  s += fmt::format("<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\"/>\n", L, T,
                   gw, gh);
  for (size_t k = 0; k < cols; ++k) {
    const double x = L + (double(k) + 0.5) * cell, y = T + gh + 8;
    s += fmt::format("<text class=\"tick\" x=\"0\" y=\"0\" text-anchor=\"end\" transform=\"translate({:.1f} {:.1f}) rotate(-45)\">"
                     "{}<title>{}</title></text>\n",
                     x + 3, y, escape(truncate(h.col_labels[k], kMaxChars)), escape(h.col_labels[k]));
  }
  s += fmt::format("<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", L + gw / 2,
                   height - 8, escape(h.col_title));
  s += fmt::format("<text class=\"axis-label\" x=\"0\" y=\"0\" text-anchor=\"middle\" transform=\"translate(13 {:.1f}) rotate(-90)\">{}</text>\n",
                   T + gh / 2, escape(h.row_title));
  s += "</svg>\n";
  return out;
}

}  // namespace oc::report
