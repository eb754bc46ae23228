// Plot building blocks: the values a plot accepts, axes with nice ticks and their labels, bins,
// colour maps and the fixed number formats that keep the SVG deterministic.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fluxion/errors.hpp"
#include "fluxion/plot.hpp"
#include "plot_svg.hpp"

namespace fluxion {
namespace plot {

// ---- values ----

Values::Values(std::vector<double> values) : data_(std::move(values)), shape_{static_cast<int64_t>(data_.size())} {}

Values::Values(std::initializer_list<double> values) : Values(std::vector<double>(values)) {}

Values::Values(const std::vector<std::vector<double>>& rows) {
  const size_t cols = rows.empty() ? 0 : rows[0].size();
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != cols)
      detail::fail<ShapeError>("plot", "row ", r, " of the matrix has ", rows[r].size(), " values and row 0 has ", cols,
                               ". Give every row the same length.");
    data_.insert(data_.end(), rows[r].begin(), rows[r].end());
  }
  shape_ = {static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)};
}

Values::Values(const Tensor& t) {
  if (!t.defined()) detail::fail<Error>("plot", "the tensor is undefined (default-constructed). Pass a tensor.");
  const Tensor c = t.concrete("plot");  // a traced value cannot be drawn: ConcretizationError
  data_ = c.to_vector<double>();
  shape_ = c.shape().dims();
}

// ---- number formats ----

namespace plot_detail {

std::string coordinate(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string short_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v == 0 ? 0.0 : v);  // no "-0"
  return buf;
}

/// `v` as "m.mmme<exp>" with `digits` mantissa decimals, trailing zeros dropped ("2.5e-5").
std::string scientific(double v, int digits) {
  if (v == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  std::string s = buf;
  const size_t e = s.find('e');
  std::string mantissa = s.substr(0, e);
  if (mantissa.find('.') != std::string::npos) {
    while (mantissa.back() == '0') mantissa.pop_back();
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  return mantissa + "e" + std::to_string(std::stoi(s.substr(e + 1)));
}

/// Linear interpolation between evenly spaced colour stops.
std::string interpolate(const unsigned char (*stops)[3], int count, double t) {
  t = std::isfinite(t) ? std::min(1.0, std::max(0.0, t)) : 0.0;
  const double at = t * (count - 1);
  const int i = std::min(count - 2, static_cast<int>(at));
  const double f = at - i;
  char buf[8];
  int rgb[3];
  for (int k = 0; k < 3; ++k) rgb[k] = static_cast<int>(std::lround(stops[i][k] + f * (stops[i + 1][k] - stops[i][k])));
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return buf;
}

std::string sequential_colour(double t) {
  static const unsigned char stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  return interpolate(stops, 5, t);
}

std::string diverging_colour(double t) {
  static const unsigned char stops[5][3] = {
      {33, 102, 172}, {103, 169, 207}, {247, 247, 247}, {239, 138, 98}, {178, 24, 43}};
  return interpolate(stops, 5, t);
}

const char* series_colour(size_t i) {
  static const char* const cycle[10] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return cycle[i % 10];
}

}  // namespace plot_detail

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// ---- axes ----

namespace plot_detail {

/// Linear axis: the step is 1, 2, 5 or 10 times a power of ten giving about `target` intervals; the
/// range widens to the nearest multiples of the step. Near-zero ticks are snapped to exactly 0.
Axis linear_axis(double lo, double hi, int target) {
  // Constant data, or a span below double resolution at this magnitude: a range around the value.
  if (!(hi - lo > std::max(std::fabs(lo), std::fabs(hi)) * 1e-12)) {
    const double centre = lo / 2 + hi / 2, pad = centre == 0 ? 1 : std::fabs(centre) * 0.1;
    lo = centre - pad, hi = centre + pad;
  }
  double raw = (hi - lo) / target;
  if (!std::isfinite(raw)) raw = hi / target - lo / target;  // hi - lo overflowed
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double slack = 1 + 1e-9;  // rounding in raw must not skip from 2 to 5
  const double step = (r <= slack ? 1 : r <= 2 * slack ? 2 : r <= 5 * slack ? 5 : 10) * magnitude;
  const double k0 = std::floor(lo / step + 1e-9), k1 = std::ceil(hi / step - 1e-9);
  Axis axis;
  axis.lo = k0 * step, axis.hi = k1 * step;
  if (!std::isfinite(axis.lo) || !std::isfinite(axis.hi))
    detail::fail<Error>("plot::nice_axis", "the range [", lo, ", ", hi,
                        "] is too large to draw. Scale the values down (plot them in larger units).");
  // k1 - k0 is at most about 2 * target: step >= span / target.
  const int64_t intervals = std::llround(k1 - k0);
  for (int64_t i = 0; i <= intervals; ++i) {
    const double k = k0 + static_cast<double>(i);
    axis.ticks.push_back(k == 0 ? 0.0 : k * step);  // an exact 0, never -0 or 1e-17
  }
  return axis;
}

/// Log axis: whole decades with a tick every decade (every few when there are many); within two
/// decades or fewer, ticks and range ends at 1, 2 and 5 times powers of ten.
Axis log_axis(double lo, double hi) {
  if (lo == hi) lo /= 2, hi *= 2;
  const int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 == e0) ++e1;
  Axis axis;
  axis.log = true;
  if (e1 - e0 <= 2) {
    std::vector<double> candidates;
    for (int e = e0; e <= e1; ++e)
      for (double m : {1.0, 2.0, 5.0}) candidates.push_back(m * std::pow(10.0, e));
    size_t first = 0, last = candidates.size() - 1;
    while (first + 1 < candidates.size() && candidates[first + 1] <= lo * (1 + 1e-9)) ++first;
    while (last > first + 1 && candidates[last - 1] >= hi * (1 - 1e-9)) --last;
    axis.ticks.assign(candidates.begin() + first, candidates.begin() + last + 1);
  } else {
    const int every = (e1 - e0 + 7) / 8;  // at most about eight labelled decades
    const int start = static_cast<int>(std::floor(static_cast<double>(e0) / every)) * every;
    int end = static_cast<int>(std::ceil(static_cast<double>(e1) / every)) * every;
    for (int e = start; e <= end; e += every) axis.ticks.push_back(std::pow(10.0, e));
  }
  axis.lo = axis.ticks.front(), axis.hi = axis.ticks.back();
  return axis;
}

}  // namespace plot_detail

Axis nice_axis(double lo, double hi, bool log, int target_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    detail::fail<Error>("plot::nice_axis", "the range [", lo, ", ", hi,
                        "] is not an interval of finite numbers. Pass lo <= hi, both finite.");
  if (target_ticks < 1) detail::fail<Error>("plot::nice_axis", "target_ticks is ", target_ticks, ". Pass 1 or more.");
  if (log && lo <= 0)
    detail::fail<Error>("plot::nice_axis", "a log axis needs positive values, the range starts at ", lo,
                        ". Use a linear axis or plot the absolute values.");
  return log ? plot_detail::log_axis(lo, hi) : plot_detail::linear_axis(lo, hi, target_ticks);
}

std::vector<std::string> tick_labels(const Axis& axis) {
  std::vector<std::string> labels;
  if (axis.ticks.empty()) return labels;
  if (axis.log) {
    // Powers of ten as "10^e" (drawn as a superscript); 1-2-5 ticks as plain numbers.
    bool decades = true;
    for (double t : axis.ticks) {
      const double e = std::round(std::log10(t));
      decades = decades && std::fabs(t / std::pow(10.0, e) - 1) < 1e-9;
    }
    for (double t : axis.ticks) {
      char buf[64];
      if (decades) std::snprintf(buf, sizeof buf, "10^%d", static_cast<int>(std::round(std::log10(t))));
      else std::snprintf(buf, sizeof buf, "%g", t);
      labels.push_back(buf);
    }
    return labels;
  }
  const double step = axis.ticks.size() > 1 ? axis.ticks[1] - axis.ticks[0] : std::max(std::fabs(axis.ticks[0]), 1.0);
  double largest = 0;
  for (double t : axis.ticks) largest = std::max(largest, std::fabs(t));
  const int step_exponent = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  const bool scientific = largest >= 1e6 || (largest > 0 && largest < 1e-3);
  for (double t : axis.ticks) {
    if (scientific) {
      const int digits = std::max(0, static_cast<int>(std::floor(std::log10(largest) + 1e-9)) - step_exponent);
      labels.push_back(plot_detail::scientific(t, digits));
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -step_exponent), t);
      labels.push_back(buf);
    }
  }
  return labels;
}

// ---- bins ----

Bins bin_counts(const Values& values, int bins, const char* where) {
  if (bins < 1) detail::fail<Error>(where, "bins is ", bins, ". Pass 1 or more bins.");
  if (values.size() == 0) detail::fail<Error>(where, "no values to count. Pass at least one value.");
  Bins out;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values.data()) {
    if (!std::isfinite(v)) {
      ++out.skipped;
      continue;
    }
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (out.skipped == values.size())
    detail::fail<Error>(where, "all ", values.size(), " values are NaN or infinite. Pass some finite values.");
  if (lo == hi) lo -= 0.5, hi += 0.5;
  for (int i = 0; i <= bins; ++i) out.edges.push_back(i == bins ? hi : lo + (hi - lo) * i / bins);
  out.counts.assign(static_cast<size_t>(bins), 0);
  for (double v : values.data()) {
    if (!std::isfinite(v)) continue;
    const int b = std::min(bins - 1, static_cast<int>(std::floor((v - lo) / (hi - lo) * bins)));
    ++out.counts[static_cast<size_t>(std::max(0, b))];  // the maximum goes into the last bin
  }
  return out;
}

}  // namespace plot
}  // namespace fluxion
