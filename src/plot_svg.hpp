/// Helpers shared by the plot implementation files (src/plot*.cpp): number formatting and colours.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "fluxion/plot.hpp"

namespace fluxion {
namespace plot {
namespace plot_detail {

/// A coordinate with at most two decimals and no trailing zeros ("12.5", "-3", "0.07").
std::string coordinate(double v);
/// A value for people: four significant digits ("0.001235", "2.5e+06").
std::string short_number(double v);
/// The colour of `t` in [0, 1] on a map, as "#rrggbb".
std::string sequential_colour(double t);
std::string diverging_colour(double t);
/// The colour of the i-th series (a fixed cycle of ten).
const char* series_colour(size_t i);
/// "[3,4]".
std::string shape_text(const std::vector<int64_t>& shape);
/// Pixel width of `text` at the figure's 11 px font (an estimate: layout only needs margins).
double text_width(const std::string& text);
/// "line", "scatter", "bars" or "histogram".
const char* kind_name(Figure::Kind k);

/// An SVG document being written, with the few elements the figures use.
struct SvgText {
  std::ostringstream os;
  void text(double x, double y, const std::string& markup, const char* anchor, const char* extra = "") {
    os << "<text x=\"" << coordinate(x) << "\" y=\"" << coordinate(y) << "\" text-anchor=\"" << anchor << "\"" << extra
       << ">" << markup << "</text>\n";
  }
  void line(double x1, double y1, double x2, double y2) {
    os << "<line x1=\"" << coordinate(x1) << "\" y1=\"" << coordinate(y1) << "\" x2=\"" << coordinate(x2) << "\" y2=\""
       << coordinate(y2) << "\"/>\n";
  }
  void rect(double x, double y, double w, double h, const std::string& fill) {
    os << "<rect x=\"" << coordinate(x) << "\" y=\"" << coordinate(y) << "\" width=\"" << coordinate(w)
       << "\" height=\"" << coordinate(h) << "\" fill=\"" << fill << "\"/>\n";
  }
};

/// The <svg> opening (scales down to the page width), background, title and axis labels; the y
/// label is drawn upwards with its baseline at y_label_x.
void open_figure(SvgText& svg, int width, int height, const std::string& title, const std::string& x_label,
                 const std::string& y_label, double x_label_centre, double y_label_centre, double y_label_x = 14);

}  // namespace plot_detail
}  // namespace plot
}  // namespace fluxion
