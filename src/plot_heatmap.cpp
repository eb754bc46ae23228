// Heatmaps (coloured cells with a colour bar), figure summaries and the one-series shorthands.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "fluxion/errors.hpp"
#include "fluxion/plot.hpp"
#include "plot_svg.hpp"

namespace fluxion {
namespace plot {
namespace plot_detail {

/// Row or column indices worth a tick: integers from a nice axis over 0..n-1.
std::vector<int64_t> index_ticks(int64_t n) {
  std::vector<int64_t> out;
  for (double t : nice_axis(0, static_cast<double>(std::max<int64_t>(n - 1, 1)), false, 6).ticks)
    if (t == std::floor(t) && t >= 0 && t <= static_cast<double>(n - 1)) out.push_back(static_cast<int64_t>(t));
  return out;
}

/// The finite range of `cells` (INFINITY, -INFINITY when there is none) and the count of the others.
void finite_range(const std::vector<double>& cells, double& lo, double& hi, int64_t& skipped) {
  lo = INFINITY, hi = -INFINITY, skipped = 0;
  for (double v : cells) {
    if (!std::isfinite(v)) ++skipped;
    else lo = std::min(lo, v), hi = std::max(hi, v);
  }
}

}  // namespace plot_detail

Figure heatmap(const Values& matrix) {
  if (matrix.shape().size() != 2)
    detail::fail<ShapeError>("plot::heatmap", "needs a 2-D matrix, got shape ", plot_detail::shape_text(matrix.shape()),
                             ". Reshape it to rows x columns, e.g. fx::reshape(t, {rows, cols}).");
  if (matrix.size() == 0)
    detail::fail<Error>("plot::heatmap", "the matrix ", plot_detail::shape_text(matrix.shape()),
                        " is empty. Pass at least one row and one column.");
  double lo, hi;
  int64_t skipped;
  plot_detail::finite_range(matrix.data(), lo, hi, skipped);
  if (skipped == matrix.size())
    detail::fail<Error>("plot::heatmap", "all ", skipped, " cells are NaN or infinite. Pass some finite values.");
  Figure f;
  f.cells_ = matrix.data();
  f.rows_ = matrix.shape()[0], f.cols_ = matrix.shape()[1];
  return f;
}

std::string Figure::render_heatmap() const {
  using plot_detail::coordinate;
  double lo, hi;
  int64_t skipped;
  plot_detail::finite_range(cells_, lo, hi, skipped);
  const bool diverging = colormap_ == Colormap::diverging || (colormap_ == Colormap::automatic && lo < 0 && hi > 0);
  const double m = std::max(std::fabs(lo), std::fabs(hi));
  const Axis colours = diverging ? nice_axis(-m, m) : nice_axis(lo, hi);
  const std::vector<std::string> colour_labels = tick_labels(colours);
  const std::vector<int64_t> row_ticks = plot_detail::index_ticks(rows_), col_ticks = plot_detail::index_ticks(cols_);

  double widest = 0;
  for (const std::string& l : colour_labels) widest = std::max(widest, plot_detail::text_width(l));
  double left = 14 + plot_detail::text_width(std::to_string(rows_ - 1)) + (y_label_.empty() ? 0 : 20);
  const double top = title_.empty() ? 16 : 38, right_margin = 20 + 14 + 8 + widest + 10;
  const double room_w = width_ - left - right_margin, room_h = height_ - top - (x_label_.empty() ? 30 : 48);
  const double cell = std::max(1e-3, std::min(room_w / cols_, room_h / rows_));  // square cells
  const double grid_w = cell * cols_, grid_h = cell * rows_;
  const double shift = std::max(0.0, (width_ - left - grid_w - right_margin) / 2);  // centre the picture
  left += shift;

  plot_detail::SvgText svg;
  plot_detail::open_figure(svg, width_, height_, title_, x_label_, y_label_, left + grid_w / 2, top + grid_h / 2,
                           14 + shift);
  svg.os << "<g shape-rendering=\"crispEdges\">\n";
  for (int64_t r = 0; r < rows_; ++r) {
    for (int64_t c = 0; c < cols_; ++c) {
      const double v = cells_[static_cast<size_t>(r * cols_ + c)];
      const double t = (v - colours.lo) / (colours.hi - colours.lo);
      const std::string fill = !std::isfinite(v) ? "#c8c8c8"  // NaN or infinite: grey
                               : diverging       ? plot_detail::diverging_colour(t)
                                                 : plot_detail::sequential_colour(t);
      svg.rect(left + c * cell, top + r * cell, cell, cell, fill);
    }
  }
  svg.os << "</g>\n";

  // Frame and index ticks at cell centres: columns below, rows on the left (row 0 at the top).
  svg.os << "<g stroke=\"#333333\" fill=\"none\">\n";
  svg.rect(left, top, grid_w, grid_h, "none");
  for (int64_t c : col_ticks)
    svg.line(left + (c + 0.5) * cell, top + grid_h, left + (c + 0.5) * cell, top + grid_h + 4);
  for (int64_t r : row_ticks) svg.line(left - 4, top + (r + 0.5) * cell, left, top + (r + 0.5) * cell);
  svg.os << "</g>\n<g fill=\"#333333\">\n";
  for (int64_t c : col_ticks) svg.text(left + (c + 0.5) * cell, top + grid_h + 16, std::to_string(c), "middle");
  for (int64_t r : row_ticks) svg.text(left - 7, top + (r + 0.5) * cell + 4, std::to_string(r), "end");
  svg.os << "</g>\n";

  // The colour bar: 64 bands from the axis' low end (bottom) to its high end (top), with its ticks.
  const double bar_x = left + grid_w + 20, bar_w = 14, bands = 64;
  svg.os << "<g class=\"colorbar\" shape-rendering=\"crispEdges\">\n";
  for (int b = 0; b < bands; ++b) {
    const double t = (b + 0.5) / bands;
    svg.rect(bar_x, top + grid_h * (1 - (b + 1) / bands), bar_w, grid_h / bands,
             diverging ? plot_detail::diverging_colour(t) : plot_detail::sequential_colour(t));
  }
  svg.os << "</g>\n<g stroke=\"#333333\" fill=\"none\">\n";
  svg.rect(bar_x, top, bar_w, grid_h, "none");
  auto bar_y = [&](double v) { return top + grid_h * (1 - (v - colours.lo) / (colours.hi - colours.lo)); };
  for (double t : colours.ticks) svg.line(bar_x + bar_w, bar_y(t), bar_x + bar_w + 4, bar_y(t));
  svg.os << "</g>\n<g fill=\"#333333\">\n";
  for (size_t i = 0; i < colours.ticks.size(); ++i)
    svg.text(bar_x + bar_w + 7, bar_y(colours.ticks[i]) + 4, xml_escape(colour_labels[i]), "start");
  svg.os << "</g>\n</svg>\n";
  return svg.os.str();
}

std::string Figure::summary() const {
  using plot_detail::short_number;
  std::ostringstream os;
  os << "Figure";
  if (!title_.empty()) os << " \"" << title_ << "\"";
  os << ":";
  if (cols_ > 0) {
    double lo, hi;
    int64_t skipped;
    plot_detail::finite_range(cells_, lo, hi, skipped);
    os << " heatmap " << rows_ << "x" << cols_ << ", values in [" << short_number(lo) << ", " << short_number(hi)
       << "]";
    if (skipped) os << ", " << skipped << " NaN/inf cells drawn grey";
    return os.str();
  }
  if (series_.empty()) return os.str() + " empty";
  for (size_t k = 0; k < series_.size(); ++k) {
    const Series& s = series_[k];
    os << (k ? ", " : " ") << plot_detail::kind_name(s.kind);
    if (!s.label.empty()) os << " '" << s.label << "'";
    os << " (" << s.y.size() << (s.kind == Kind::histogram ? " bins" : " points");
    if (s.skipped) os << ", " << s.skipped << " NaN/inf skipped";
    os << ")";
  }
  // The data ranges (the axes widen them to nice ticks).
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Series& s : series_) {
    for (size_t i = 0; i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
      if (s.kind == Kind::line || s.kind == Kind::scatter) {
        if (!std::isfinite(s.x[i])) continue;
        x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
      }
    }
    if (s.kind == Kind::histogram) x_lo = std::min(x_lo, s.x.front()), x_hi = std::max(x_hi, s.x.back());
  }
  if (x_lo <= x_hi) os << "; x data in [" << short_number(x_lo) << ", " << short_number(x_hi) << "]";
  os << "; y data in [" << short_number(y_lo) << ", " << short_number(y_hi) << "]" << (log_y_ ? " (log axis)" : "");
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Figure& figure) { return os << figure.summary(); }

Figure line(const Values& x, const Values& y, Label label) { return Figure().line(x, y, label); }
Figure line(const Values& y, Label label) { return Figure().line(y, label); }
Figure scatter(const Values& x, const Values& y, Label label) { return Figure().scatter(x, y, label); }
Figure scatter(const Values& y, Label label) { return Figure().scatter(y, label); }
Figure bars(std::vector<std::string> categories, const Values& heights, Label label) {
  return Figure().bars(std::move(categories), heights, label);
}
Figure histogram(const Values& values, int bins, Label label) { return Figure().histogram(values, bins, label); }

}  // namespace plot
}  // namespace fluxion
