/// Tensor values as text, the way numpy's str(array) prints them (numpy's default print options):
/// every element of a tensor in one notation, padded to one width so that decimal points line up,
/// rows wrapped at 75 columns with continuation lines indented under the opening bracket, and
/// tensors of more than 1000 elements summarized to their first and last 3 entries of each axis.
/// operator<<(std::ostream&, const Tensor&) prints with array_text; fluxion/display.hpp's HTML
/// tables use format_elements, so a notebook's table and its printed text agree digit for digit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion {
namespace tensor_format {

/// numpy's defaults: np.get_printoptions()'s linewidth, threshold and edgeitems.
constexpr int kLineWidth = 75;
constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

/// The texts of the elements at row-major positions `flat` of a concrete tensor in host memory,
/// formatted together as numpy formats the elements it shows:
///  - bool: " True" / "False" ("True" / "False" when `scalar`);
///  - integers: right-aligned to the widest;
///  - floats: fixed notation with the shortest digits that identify each value (at most 8
///    decimals), the fraction padded with spaces to the longest, unless some finite nonzero
///    magnitude is >= 1e8 or < 1e-4 or the largest is over 1000 times the smallest: then
///    scientific, with one mantissa precision and exponent width for all; nan and inf right-aligned.
/// All texts have the same width (so right-aligned cells align their decimal points), except when
/// `scalar` (one rank-0 value, no padding). f16/bf16 show their exact f32 values.
std::vector<std::string> format_elements(const Tensor& host, const std::vector<int64_t>& flat, bool scalar = false);

/// numpy's str(array) of a concrete tensor in host memory, wrapping rows at `line_width` columns.
std::string array_text(const Tensor& host, int line_width = kLineWidth);

}  // namespace tensor_format
}  // namespace fluxion
