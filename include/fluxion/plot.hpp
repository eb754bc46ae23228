/// Plots as SVG, for notebooks and files: line, scatter, bar, histogram and heatmap figures.
///
/// A Figure collects series and renders them as one self-contained SVG (no external tool, no
/// network): axes with "nice" ticks (steps of 1, 2 or 5 times a power of ten), tick labels, axis
/// labels, a title, and a legend once two or more series are labelled. Numbers come from a
/// std::vector, a braced list or a concrete fx::Tensor (any dtype). Points with a NaN or infinite
/// coordinate are skipped (a line breaks there) and the summary says how many; constant data is
/// given a range around its value. Output is deterministic (fixed number formatting), so notebooks
/// can store and compare it. Bad input throws fluxion::Error naming the function:
///   [plot::line] x has 5 values and y has 4. Pass one y value per x value.
///
///   auto fig = fx::plot::line(losses, "loss").title("Training").x_label("step").log_y();
///   fig.save("loss.svg");                  // or xcpp::display(fig) with <fluxion/display.hpp>
///
/// The notebook display (mime_bundle_repr, "image/svg+xml") lives in fluxion/display.hpp, which
/// needs nlohmann/json; this header does not.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion {
namespace plot {

/// Numbers to plot with their shape: {n} for a list, {rows, cols} for a matrix.
class Values {
 public:
  Values(std::vector<double> values);
  Values(std::initializer_list<double> values);
  /// A matrix given as rows (heatmap); every row must have the same length.
  Values(const std::vector<std::vector<double>>& rows);
  /// The values of a concrete tensor, converted to double; ConcretizationError for a traced one.
  Values(const Tensor& t);
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, double>>>
  Values(const std::vector<T>& values) : Values(std::vector<double>(values.begin(), values.end())) {}

  const std::vector<double>& data() const { return data_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }

 private:
  std::vector<double> data_;
  std::vector<int64_t> shape_;
};

/// A series' name in the legend: any string. (A template, so that a braced list of numbers can
/// never be taken for a label: `line({1, 2}, {3, 4})` is x and y.)
class Label {
 public:
  Label() = default;
  template <class S, class = std::enable_if_t<std::is_convertible_v<const S&, std::string_view>>> Label(const S& text)
      : text_(std::string_view(text)) {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

/// How a heatmap maps values to colours. `automatic` picks `diverging` (blue, white at zero, red;
/// symmetric around zero) when the data has both signs, else `sequential` (dark blue to yellow).
enum class Colormap { automatic, sequential, diverging };

/// A drawing: series on shared axes, or one heatmap. Methods return *this, so calls chain.
class Figure {
 public:
  /// A line through (x[i], y[i]); without x, through (i, y[i]).
  Figure& line(const Values& x, const Values& y, Label label = {});
  Figure& line(const Values& y, Label label = {});
  /// Markers at (x[i], y[i]); without x, at (i, y[i]).
  Figure& scatter(const Values& x, const Values& y, Label label = {});
  Figure& scatter(const Values& y, Label label = {});
  /// One bar per category; several bars() calls with the same categories draw grouped bars.
  Figure& bars(std::vector<std::string> categories, const Values& heights, Label label = {});
  /// Counts of `values` (every element, any shape) in `bins` equal-width bins over their finite range,
  /// drawn as adjacent bars.
  Figure& histogram(const Values& values, int bins = 20, Label label = {});

  Figure& title(std::string text);
  Figure& x_label(std::string text);
  Figure& y_label(std::string text);
  /// A logarithmic y axis; every finite y value must be positive (bars and histograms cannot be).
  Figure& log_y(bool on = true);
  /// The size in pixels (default 640 x 400; a heatmap's cells stay square inside it).
  Figure& size(int width, int height);
  Figure& colormap(Colormap map);

  /// The whole figure as one <svg> element.
  std::string svg() const;
  /// Writes svg() to `path`; fluxion::Error naming the path when it cannot be written.
  void save(const std::string& path) const;
  /// One line saying what is drawn and over which ranges (the notebook's text/plain).
  std::string summary() const;

  /// What a figure is made of (read by the renderer and by tests).
  enum class Kind { line, scatter, bars, histogram };
  struct Series {
    Kind kind;
    std::vector<double> x, y;             // histogram: x holds the bins+1 edges, y the counts
    std::vector<std::string> categories;  // bars only
    std::string label;
    int64_t skipped = 0;  // points left out for a NaN or infinite coordinate
  };
  const std::vector<Series>& series() const { return series_; }

 private:
  friend Figure heatmap(const Values& matrix);
  void add(const char* where, Series s);
  void check_log_axis(const char* where) const;
  std::string render_series() const;
  std::string render_heatmap() const;

  std::vector<Series> series_;
  std::vector<double> cells_;  // heatmap, row-major
  int64_t rows_ = 0, cols_ = 0;
  std::string title_, x_label_, y_label_;
  bool log_y_ = false;
  int width_ = 640, height_ = 400;
  Colormap colormap_ = Colormap::automatic;
};

/// A figure with one series (see the Figure methods of the same names).
Figure line(const Values& x, const Values& y, Label label = {});
Figure line(const Values& y, Label label = {});
Figure scatter(const Values& x, const Values& y, Label label = {});
Figure scatter(const Values& y, Label label = {});
Figure bars(std::vector<std::string> categories, const Values& heights, Label label = {});
Figure histogram(const Values& values, int bins = 20, Label label = {});
/// A matrix (2-D tensor or rows) as coloured cells, row 0 at the top, with a colour bar.
Figure heatmap(const Values& matrix);

/// Equal-width bins over the finite range of `values` (one bin of width 1 around constant data);
/// `skipped` counts the NaN and infinite values left out.
struct Bins {
  std::vector<double> edges;  // bins + 1, increasing
  std::vector<int64_t> counts;
  int64_t skipped = 0;
};
Bins bin_counts(const Values& values, int bins, const char* where = "plot::bin_counts");

/// An axis: its drawn range and tick positions. Linear: ticks at multiples of a nice step, range
/// widened to the outer ticks. Log: ticks at powers of ten (or 1-2-5 within one decade).
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  bool log = false;
};
Axis nice_axis(double lo, double hi, bool log = false, int target_ticks = 5);
/// Tick labels of `axis`, with as many decimals as its step needs ("0.25", "1e-05").
std::vector<std::string> tick_labels(const Axis& axis);
/// `text` with &, <, >, " and ' replaced by XML entities.
std::string xml_escape(const std::string& text);

std::ostream& operator<<(std::ostream& os, const Figure& figure);

}  // namespace plot
}  // namespace fluxion
