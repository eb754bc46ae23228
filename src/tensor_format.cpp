// Tensor text as numpy prints arrays (fluxion/tensor_format.hpp): element formatting and row wrapping.
#include "fluxion/tensor_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace fluxion {
namespace tensor_format_detail {

/// A finite float split as numpy's Dragon4 prints it: sign and integer digits, fraction digits and,
/// in scientific notation, the exponent ("-12", "75", "" or "-1", "5", "-09").
struct FloatParts {
  std::string integer, fraction, exponent;
};

/// The fewest significant digits (1..17) whose decimal rounding of `v` reads back as the same T.
template <class T> int shortest_digits(T v) {
  char buf[48];
  for (int digits = 1; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, static_cast<double>(v));
    const T back = std::is_same_v<T, float> ? static_cast<T>(std::strtof(buf, nullptr))
                                            : static_cast<T>(std::strtod(buf, nullptr));
    if (back == v) return digits;
  }
  return 17;
}

/// Drops trailing zeros of a digit string (numpy's trim='.': "1.50" -> "1.5", "2.000" -> "2.").
inline std::string trim_zeros(std::string digits) {
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return digits;
}

/// `v`'s shortest digits in fixed notation, at most 8 decimals (rounded beyond that).
template <class T> FloatParts positional(T v) {
  const int digits = shortest_digits(v);
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, static_cast<double>(v));
  const int exponent = std::atoi(std::strchr(buf, 'e') + 1);
  const int decimals = std::clamp(digits - 1 - exponent, 0, 8);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
  const std::string text = buf;
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return {text, "", ""};
  return {text.substr(0, dot), trim_zeros(text.substr(dot + 1)), ""};
}

/// `v`'s shortest digits in scientific notation, at most 8 mantissa decimals.
template <class T> FloatParts scientific(T v) {
  const int decimals = std::min(shortest_digits(v) - 1, 8);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", decimals, static_cast<double>(v));
  const std::string text = buf;
  const size_t e = text.find('e'), dot = text.find('.');
  const std::string mantissa = text.substr(0, e);
  if (dot == std::string::npos || dot > e) return {mantissa, "", text.substr(e + 1)};
  return {text.substr(0, dot), trim_zeros(text.substr(dot + 1, e - dot - 1)), text.substr(e + 1)};
}

/// numpy's choice of notation: scientific when a finite nonzero magnitude is >= 1e8 or < 1e-4, or
/// when the largest is more than 1000 times the smallest.
template <class T> bool use_scientific(const std::vector<T>& values) {
  double largest = 0, smallest = 0;
  bool any = false;
  for (T v : values) {
    const double a = std::fabs(static_cast<double>(v));
    if (!std::isfinite(a) || a == 0) continue;
    largest = any ? std::max(largest, a) : a;
    smallest = any ? std::min(smallest, a) : a;
    any = true;
  }
  return any && (largest >= 1e8 || smallest < 1e-4 || largest / smallest > 1e3);
}

inline std::string left_pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

/// numpy's FloatingFormat: parts of every finite value first, then one layout for all.
template <class T> std::vector<std::string> format_floats(const std::vector<T>& values, bool scalar) {
  const bool sci = use_scientific(values);
  std::vector<FloatParts> parts(values.size());
  size_t int_width = 0, frac_width = 0, exp_width = 0;
  bool negative_inf = false;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      negative_inf |= values[i] < 0;
      continue;
    }
    parts[i] = sci ? scientific(values[i]) : positional(values[i]);
    int_width = std::max(int_width, parts[i].integer.size());
    frac_width = std::max(frac_width, parts[i].fraction.size());
    if (sci) exp_width = std::max(exp_width, parts[i].exponent.size() - 1);  // digits after the sign
  }
  // Widths after the integer part: the point and fraction, and in scientific "e", sign and digits.
  const size_t tail = 1 + frac_width + (sci ? 2 + exp_width : 0);
  const size_t nonfinite = negative_inf ? 4 : 3;  // "nan", "inf", "-inf"
  if (std::any_of(values.begin(), values.end(), [](T v) { return !std::isfinite(v); }))
    int_width = std::max(int_width, nonfinite > tail ? nonfinite - tail : 0);
  std::vector<std::string> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const T v = values[i];
    if (!std::isfinite(v)) {
      const std::string word = std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
      out[i] = scalar ? word : left_pad(word, int_width + tail);
      continue;
    }
    const FloatParts& p = parts[i];
    std::string text = (scalar ? p.integer : left_pad(p.integer, int_width)) + "." + p.fraction;
    if (sci) {
      const std::string digits = p.exponent.substr(1);
      text += std::string(frac_width - p.fraction.size(), '0') + "e" + p.exponent[0] +
              std::string(exp_width - digits.size(), '0') + digits;
    } else if (!scalar) {
      text += std::string(frac_width - p.fraction.size(), ' ');
    }
    out[i] = text;
  }
  return out;
}

template <class T> std::vector<std::string> format_values(const std::vector<T>& values, bool scalar) {
  std::vector<std::string> out;
  out.reserve(values.size());
  if constexpr (std::is_same_v<T, bool>) {
    for (bool v : values) out.push_back(v ? (scalar ? "True" : " True") : "False");
  } else if constexpr (std::is_integral_v<T>) {
    size_t width = 0;
    for (T v : values) width = std::max(width, out.emplace_back(std::to_string(v)).size());
    for (std::string& s : out) s = left_pad(s, width);
  } else {
    out = format_floats(values, scalar);
  }
  return out;
}

/// Positions shown along an axis of length n: all, or when summarizing the first and last
/// kEdgeItems with -1 standing for the "..." between them.
inline std::vector<int64_t> shown_positions(int64_t n, bool summarize) {
  std::vector<int64_t> out;
  const int64_t edge = tensor_format::kEdgeItems;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * edge && i == edge) {
      out.push_back(-1);
      i = n - edge;
    }
    out.push_back(i);
  }
  return out;
}

/// numpy's _formatArray: builds the text of the sub-array at `offset` of axes [axis, rank).
class ArrayPrinter {
 public:
  ArrayPrinter(const std::vector<int64_t>& dims, bool summarize) : dims_(dims), summarize_(summarize) {
    strides_.assign(dims.size(), 1);
    for (size_t d = dims.size(); d-- > 1;) strides_[d - 1] = strides_[d] * dims[d];
  }

  /// Row-major positions of the shown elements.
  std::vector<int64_t> shown_elements() const {
    std::vector<int64_t> out;
    collect(0, 0, out);
    return out;
  }

  /// The text of the whole array; `texts` maps each shown element's position to its text.
  std::string print(const std::unordered_map<int64_t, std::string>& texts, int line_width) const {
    return block(texts, 0, 0, " ", line_width);
  }

 private:
  void collect(size_t axis, int64_t offset, std::vector<int64_t>& out) const {
    if (axis == dims_.size()) {
      out.push_back(offset);
      return;
    }
    for (int64_t i : shown_positions(dims_[axis], summarize_))
      if (i >= 0) collect(axis + 1, offset + i * strides_[axis], out);
  }

  // A row: words separated by one space, wrapped before a word that would pass `width` columns
  // (never on a line holding only the indent), continuation lines starting with `indent`.
  static void extend_line(std::string& text, std::string& line, const std::string& word, size_t width,
                          const std::string& indent) {
    if (line.size() + word.size() > width && line.size() > indent.size()) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      text += line + "\n";
      line = indent;
    }
    line += word;
  }

  std::string block(const std::unordered_map<int64_t, std::string>& texts, size_t axis, int64_t offset,
                    const std::string& indent, int width) const {
    if (axis == dims_.size()) return texts.at(offset);
    const std::vector<int64_t> items = shown_positions(dims_[axis], summarize_);
    const std::string inner_indent = indent + " ";
    std::string text;
    if (axis + 1 == dims_.size()) {
      const size_t word_width = static_cast<size_t>(std::max(width - 1, 0));  // room for the ']'
      std::string line = indent;
      for (size_t k = 0; k < items.size(); ++k) {
        const int64_t i = items[k];
        extend_line(text, line, i < 0 ? "..." : texts.at(offset + i * strides_[axis]), word_width, indent);
        if (k + 1 < items.size()) line += ' ';
      }
      text += line;
    } else {
      // Rows of a matrix one line apart, matrices of a rank-3 block two lines apart, and so on.
      const std::string separator(dims_.size() - axis - 1, '\n');
      for (size_t k = 0; k < items.size(); ++k) {
        const int64_t i = items[k];
        text += indent + (i < 0 ? "..." : block(texts, axis + 1, offset + i * strides_[axis], inner_indent, width - 1));
        if (k + 1 < items.size()) text += separator;
      }
    }
    return "[" + text.substr(indent.size()) + "]";
  }

  std::vector<int64_t> dims_, strides_;
  bool summarize_;
};

}  // namespace tensor_format_detail

namespace tensor_format {

std::vector<std::string> format_elements(const Tensor& host, const std::vector<int64_t>& flat, bool scalar) {
  using namespace tensor_format_detail;
  Tensor values = host;
  if (is_half(values.dtype())) values = from_vector(values.to_vector<float>(), values.shape());  // exact f32
  std::vector<std::string> out;
  dispatch_dtype(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = static_cast<const T*>(values.array().data());
    std::vector<T> picked;
    picked.reserve(flat.size());
    for (int64_t i : flat) picked.push_back(data[i]);
    out = format_values(picked, scalar);
  });
  return out;
}

std::string array_text(const Tensor& host, int line_width) {
  using namespace tensor_format_detail;
  const std::vector<int64_t>& dims = host.shape().dims();
  if (dims.empty()) return format_elements(host, {0}, /*scalar=*/true)[0];
  if (host.size() == 0) return "[]";
  const ArrayPrinter printer(dims, host.size() > kSummaryThreshold);
  const std::vector<int64_t> shown = printer.shown_elements();
  const std::vector<std::string> texts = format_elements(host, shown);
  std::unordered_map<int64_t, std::string> by_position;
  by_position.reserve(shown.size());
  for (size_t k = 0; k < shown.size(); ++k) by_position.emplace(shown[k], texts[k]);
  return printer.print(by_position, line_width);
}

}  // namespace tensor_format
}  // namespace fluxion
