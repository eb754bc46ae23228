// Figures: collecting series (with their input checks) and rendering them as SVG.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
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

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Fails unless `v` is a non-empty 1-D list; `what` names it in the message ("x", "y", "heights").
void check_list(const char* where, const char* what, const Values& v) {
  if (v.shape().size() != 1)
    detail::fail<ShapeError>(where, what, " must be 1-D, got shape ", shape_text(v.shape()),
                             ". Pass a vector, or flatten the tensor with fx::reshape(t, {t.size()}).");
  if (v.size() == 0) detail::fail<Error>(where, what, " is empty. Pass at least one value.");
}

std::vector<double> indices(int64_t n) {
  std::vector<double> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<double>(i);
  return x;
}

/// Pixel width of `text` at the figure's 11 px font (an estimate: layout only needs margins).
double text_width(const std::string& text) { return 6.5 * static_cast<double>(text.size()); }

/// A tick label as SVG text content: "10^e" becomes 10 with a superscript exponent.
std::string label_markup(const std::string& label) {
  if (label.rfind("10^", 0) == 0)
    return "10<tspan dy=\"-5\" font-size=\"8\">" + xml_escape(label.substr(3)) + "</tspan>";
  return xml_escape(label);
}

const char* kind_name(Figure::Kind k) {
  switch (k) {
    case Figure::Kind::line: return "line";
    case Figure::Kind::scatter: return "scatter";
    case Figure::Kind::bars: return "bars";
    case Figure::Kind::histogram: return "histogram";
  }
  return "?";
}

/// Maps data coordinates into a rectangle of the picture (y grows downwards in SVG).
struct Frame {
  double left, top, width, height;
  Axis x, y;
  bool categorical = false;  // bars: x holds category slots 0..n-1
  int64_t slots = 0;

  double px(double v) const {
    if (categorical) return left + (v + 0.5) * width / static_cast<double>(slots);
    return left + (v - x.lo) / (x.hi - x.lo) * width;
  }
  double py(double v) const {
    const double f =
        y.log ? (std::log10(v) - std::log10(y.lo)) / (std::log10(y.hi) - std::log10(y.lo)) : (v - y.lo) / (y.hi - y.lo);
    return top + height - f * height;
  }
};

void open_figure(SvgText& svg, int width, int height, const std::string& title, const std::string& x_label,
                 const std::string& y_label, double x_label_centre, double y_label_centre, double y_label_x) {
  svg.os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
         << "\" viewBox=\"0 0 " << width << " " << height << "\" style=\"max-width:100%;height:auto\""
         << " font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n";
  svg.rect(0, 0, width, height, "white");
  if (!title.empty()) svg.text(width / 2.0, 22, xml_escape(title), "middle", " font-size=\"14\" font-weight=\"bold\"");
  if (!x_label.empty()) svg.text(x_label_centre, height - 8, xml_escape(x_label), "middle");
  if (!y_label.empty()) {
    svg.os << "<text transform=\"translate(" << coordinate(y_label_x) << "," << coordinate(y_label_centre)
           << ") rotate(-90)\""
           << " text-anchor=\"middle\">" << xml_escape(y_label) << "</text>\n";
  }
}

}  // namespace plot_detail

using plot_detail::check_list;
using plot_detail::coordinate;

// ---- building ----

void Figure::add(const char* where, Series s) {
  if (cols_ > 0)
    detail::fail<Error>(where, "this figure is a heatmap and cannot also hold ", plot_detail::kind_name(s.kind),
                        ". Draw it in a figure of its own.");
  const bool bars = s.kind == Kind::bars;
  for (const Series& other : series_) {
    if ((other.kind == Kind::bars) != bars)
      detail::fail<Error>(where, "bars put categories on the x axis, and ",
                          plot_detail::kind_name(bars ? other.kind : s.kind),
                          " needs a numeric one: they cannot share a figure. Draw them in separate figures.");
    if (bars && other.categories != s.categories)
      detail::fail<Error>(where,
                          "the categories differ from those of the figure's first bars. Pass the same "
                          "categories, in the same order, to every bars() of a figure.");
  }
  const size_t points = s.y.size();
  for (size_t i = 0; i < points; ++i) {
    const bool x_ok = s.kind == Kind::bars || s.kind == Kind::histogram || std::isfinite(s.x[i]);
    if (!x_ok || !std::isfinite(s.y[i])) ++s.skipped;
  }
  if (s.skipped == static_cast<int64_t>(points) && s.kind != Kind::histogram)
    detail::fail<Error>(where, "all ", points,
                        " points have a NaN or infinite coordinate: nothing to draw. "
                        "Pass some finite values.");
  series_.push_back(std::move(s));
  if (log_y_) check_log_axis(where);
}

Figure& Figure::line(const Values& x, const Values& y, Label label) {
  check_list("plot::line", "x", x);
  check_list("plot::line", "y", y);
  if (x.size() != y.size())
    detail::fail<ShapeError>("plot::line", "x has ", x.size(), " values and y has ", y.size(),
                             ". Pass one y value per x value.");
  add("plot::line", Series{Kind::line, x.data(), y.data(), {}, label.text()});
  return *this;
}

Figure& Figure::line(const Values& y, Label label) {
  check_list("plot::line", "y", y);
  return line(plot_detail::indices(y.size()), y, label);
}

Figure& Figure::scatter(const Values& x, const Values& y, Label label) {
  check_list("plot::scatter", "x", x);
  check_list("plot::scatter", "y", y);
  if (x.size() != y.size())
    detail::fail<ShapeError>("plot::scatter", "x has ", x.size(), " values and y has ", y.size(),
                             ". Pass one y value per x value.");
  add("plot::scatter", Series{Kind::scatter, x.data(), y.data(), {}, label.text()});
  return *this;
}

Figure& Figure::scatter(const Values& y, Label label) {
  check_list("plot::scatter", "y", y);
  return scatter(plot_detail::indices(y.size()), y, label);
}

Figure& Figure::bars(std::vector<std::string> categories, const Values& heights, Label label) {
  check_list("plot::bars", "heights", heights);
  if (categories.size() != static_cast<size_t>(heights.size()))
    detail::fail<ShapeError>("plot::bars", categories.size(), " categories and ", heights.size(),
                             " heights. Pass one height per category.");
  add("plot::bars", Series{Kind::bars, {}, heights.data(), std::move(categories), label.text()});
  return *this;
}

Figure& Figure::histogram(const Values& values, int bins, Label label) {
  Bins b = bin_counts(values, bins, "plot::histogram");
  Series s{
      Kind::histogram, std::move(b.edges), std::vector<double>(b.counts.begin(), b.counts.end()), {}, label.text()};
  add("plot::histogram", std::move(s));
  series_.back().skipped = b.skipped;
  return *this;
}

Figure& Figure::title(std::string text) { return title_ = std::move(text), *this; }
Figure& Figure::x_label(std::string text) { return x_label_ = std::move(text), *this; }
Figure& Figure::y_label(std::string text) { return y_label_ = std::move(text), *this; }
Figure& Figure::colormap(Colormap map) { return colormap_ = map, *this; }

Figure& Figure::log_y(bool on) {
  log_y_ = on;
  if (on) check_log_axis("plot::log_y");
  return *this;
}

Figure& Figure::size(int width, int height) {
  if (width < 120 || height < 100)
    detail::fail<Error>("plot::size", width, " x ", height,
                        " pixels is too small for axes and labels. "
                        "Pass at least 120 x 100.");
  width_ = width, height_ = height;
  return *this;
}

void Figure::check_log_axis(const char* where) const {
  if (!log_y_) return;
  if (cols_ > 0)
    detail::fail<Error>(where, "a heatmap has no value axis to make logarithmic. Plot fx::log10 of the matrix.");
  for (size_t k = 0; k < series_.size(); ++k) {
    const Series& s = series_[k];
    const std::string name = s.label.empty() ? "series " + std::to_string(k) : "series '" + s.label + "'";
    if (s.kind == Kind::bars || s.kind == Kind::histogram)
      detail::fail<Error>(where, name, " is ", plot_detail::kind_name(s.kind),
                          ", which start at 0: a log axis cannot show them. Use a linear axis.");
    for (size_t i = 0; i < s.y.size(); ++i) {
      if (std::isfinite(s.y[i]) && s.y[i] <= 0)
        detail::fail<Error>(where, "y = ", s.y[i], " (", name, ", point ", i,
                            ") cannot be shown on a log axis, which needs positive values. "
                            "Plot the absolute values, or use a linear axis.");
    }
  }
}

// ---- rendering ----

std::string Figure::svg() const {
  if (series_.empty() && cols_ == 0)
    detail::fail<Error>("plot::svg",
                        "the figure is empty. Add a series with line(), scatter(), bars() or "
                        "histogram(), or make a heatmap().");
  check_log_axis("plot::svg");
  return cols_ > 0 ? render_heatmap() : render_series();
}

void Figure::save(const std::string& path) const {
  const std::string text = svg();
  std::ofstream out(path, std::ios::binary);
  if (out) out << text;
  if (out) out.flush();
  if (!out)
    detail::fail<Error>("plot::save", "cannot write '", path, "': ", std::strerror(errno),
                        ". Check that the folder exists and is writable.");
}

std::string Figure::render_series() const {
  using plot_detail::Frame;
  const bool categorical = series_.front().kind == Kind::bars;
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Series& s : series_) {
    if (s.kind == Kind::bars || s.kind == Kind::histogram) y_lo = std::min(y_lo, 0.0), y_hi = std::max(y_hi, 0.0);
    for (size_t i = 0; i < s.y.size(); ++i) {
      const bool point_x = s.kind == Kind::line || s.kind == Kind::scatter;
      if (!std::isfinite(s.y[i]) || (point_x && !std::isfinite(s.x[i]))) continue;
      y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
      if (point_x) x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
    }
    if (s.kind == Kind::histogram) x_lo = std::min(x_lo, s.x.front()), x_hi = std::max(x_hi, s.x.back());
  }
  Frame f{0, 0, 0, 0, categorical ? Axis{} : nice_axis(x_lo, x_hi), nice_axis(y_lo, y_hi, log_y_)};
  f.categorical = categorical;
  f.slots = categorical ? static_cast<int64_t>(series_.front().categories.size()) : 0;
  const std::vector<std::string> x_labels = categorical ? series_.front().categories : tick_labels(f.x);
  const std::vector<std::string> y_labels = tick_labels(f.y);
  double widest = 0;
  for (const std::string& l : y_labels) widest = std::max(widest, plot_detail::text_width(l));
  f.left = std::max(40.0, 14 + widest) + (y_label_.empty() ? 0 : 20);
  f.top = title_.empty() ? 16 : 38;
  f.width = width_ - f.left - 20;
  f.height = height_ - f.top - (x_label_.empty() ? 30 : 48);

  plot_detail::SvgText svg;
  plot_detail::open_figure(svg, width_, height_, title_, x_label_, y_label_, f.left + f.width / 2,
                           f.top + f.height / 2);
  const double bottom = f.top + f.height, right = f.left + f.width;
  // Grid lines under the data, then the data, then the frame, ticks and labels on top.
  svg.os << "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double t : f.y.ticks) svg.line(f.left, f.py(t), right, f.py(t));
  if (!categorical)
    for (double t : f.x.ticks) svg.line(f.px(t), f.top, f.px(t), bottom);
  svg.os << "</g>\n";

  size_t bar_series = 0, bar_index = 0;
  for (const Series& s : series_) bar_series += s.kind == Kind::bars;
  for (size_t k = 0; k < series_.size(); ++k) {
    const Series& s = series_[k];
    const std::string colour = plot_detail::series_colour(k);
    if (s.kind == Kind::line) {
      // One polyline per run of finite points: a NaN or infinite point breaks the line.
      svg.os << "<g fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.8\" stroke-linejoin=\"round\">\n";
      size_t i = 0;
      while (i < s.y.size()) {
        std::string points;
        size_t count = 0;
        for (; i < s.y.size() && std::isfinite(s.x[i]) && std::isfinite(s.y[i]); ++i, ++count)
          points += (count ? " " : "") + coordinate(f.px(s.x[i])) + "," + coordinate(f.py(s.y[i]));
        if (count == 1) points += " " + points;  // a lone point still draws a dot (round caps)
        if (count > 0) svg.os << "<polyline stroke-linecap=\"round\" points=\"" << points << "\"/>\n";
        if (i < s.y.size()) ++i;
      }
      svg.os << "</g>\n";
    } else if (s.kind == Kind::scatter) {
      svg.os << "<g fill=\"" << colour << "\" fill-opacity=\"0.85\">\n";
      for (size_t i = 0; i < s.y.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        svg.os << "<circle cx=\"" << coordinate(f.px(s.x[i])) << "\" cy=\"" << coordinate(f.py(s.y[i]))
               << "\" r=\"3\"/>\n";
      }
      svg.os << "</g>\n";
    } else if (s.kind == Kind::bars) {
      const double slot = f.width / static_cast<double>(f.slots), bar = slot * 0.8 / bar_series;
      svg.os << "<g fill=\"" << colour << "\">\n";
      for (size_t i = 0; i < s.y.size(); ++i) {
        if (!std::isfinite(s.y[i])) continue;
        const double top = std::min(f.py(s.y[i]), f.py(0.0)), height = std::fabs(f.py(s.y[i]) - f.py(0.0));
        svg.rect(f.left + slot * (i + 0.1) + bar * bar_index, top, bar, height, colour);
      }
      svg.os << "</g>\n";
      ++bar_index;
    } else {  // histogram: adjacent bars over the bin edges
      svg.os << "<g stroke=\"white\" stroke-width=\"0.5\" fill-opacity=\"0.8\">\n";
      for (size_t i = 0; i < s.y.size(); ++i)
        svg.rect(f.px(s.x[i]), f.py(s.y[i]), f.px(s.x[i + 1]) - f.px(s.x[i]), f.py(0.0) - f.py(s.y[i]), colour);
      svg.os << "</g>\n";
    }
  }

  svg.os << "<g stroke=\"#333333\" fill=\"none\">\n";
  svg.rect(f.left, f.top, f.width, f.height, "none");
  for (double t : f.y.ticks) svg.line(f.left - 4, f.py(t), f.left, f.py(t));
  for (size_t i = 0; i < x_labels.size(); ++i) {
    const double x = categorical ? f.px(static_cast<double>(i)) : f.px(f.x.ticks[i]);
    svg.line(x, bottom, x, bottom + 4);
  }
  svg.os << "</g>\n<g fill=\"#333333\">\n";
  for (size_t i = 0; i < y_labels.size(); ++i)
    svg.text(f.left - 7, f.py(f.y.ticks[i]) + 4, plot_detail::label_markup(y_labels[i]), "end");
  // Category labels: every one when they fit, else every k-th.
  double widest_x = 1;
  for (const std::string& l : x_labels) widest_x = std::max(widest_x, plot_detail::text_width(l) + 6);
  const size_t every =
      categorical ? std::max<size_t>(1, static_cast<size_t>(std::ceil(widest_x / (f.width / f.slots)))) : 1;
  for (size_t i = 0; i < x_labels.size(); i += every) {
    const double x = categorical ? f.px(static_cast<double>(i)) : f.px(f.x.ticks[i]);
    svg.text(x, bottom + 16, plot_detail::label_markup(x_labels[i]), "middle");
  }
  svg.os << "</g>\n";

  // Legend, top right inside the frame, once two or more series are labelled.
  std::vector<size_t> named;
  for (size_t k = 0; k < series_.size(); ++k)
    if (!series_[k].label.empty()) named.push_back(k);
  if (named.size() >= 2) {
    double widest_label = 0;
    for (size_t k : named) widest_label = std::max(widest_label, plot_detail::text_width(series_[k].label));
    const double w = widest_label + 38, h = 8 + 16.0 * named.size(), x0 = right - w - 8, y0 = f.top + 8;
    svg.os << "<g class=\"legend\">\n<rect x=\"" << coordinate(x0) << "\" y=\"" << coordinate(y0) << "\" width=\""
           << coordinate(w) << "\" height=\"" << coordinate(h)
           << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbbbbb\"/>\n";
    for (size_t r = 0; r < named.size(); ++r) {
      const Series& s = series_[named[r]];
      const std::string colour = plot_detail::series_colour(named[r]);
      const double cy = y0 + 12 + 16.0 * r;
      if (s.kind == Kind::line)
        svg.os << "<line x1=\"" << coordinate(x0 + 6) << "\" y1=\"" << coordinate(cy) << "\" x2=\""
               << coordinate(x0 + 26) << "\" y2=\"" << coordinate(cy) << "\" stroke=\"" << colour
               << "\" stroke-width=\"1.8\"/>\n";
      else if (s.kind == Kind::scatter)
        svg.os << "<circle cx=\"" << coordinate(x0 + 16) << "\" cy=\"" << coordinate(cy) << "\" r=\"3\" fill=\""
               << colour << "\"/>\n";
      else svg.rect(x0 + 10, cy - 5, 12, 10, colour);
      svg.text(x0 + 32, cy + 4, xml_escape(s.label), "start");
    }
    svg.os << "</g>\n";
  }
  svg.os << "</svg>\n";
  return svg.os.str();
}

}  // namespace plot
}  // namespace fluxion
