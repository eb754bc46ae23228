// The op layer of convolutions (include/fluxion/convolution.hpp): layout strings parsed into dimension
// numbers, "SAME"/"VALID" padding resolved against the shapes, operands promoted to one dtype, then one
// conv_general_dilated primitive (primitives/convolution.cpp). conv and conv_transpose are JAX's wrappers.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>

#include "fluxion/convolution.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "primitives/convolution.hpp"

namespace fluxion {
namespace ops_convolution_detail {

using primitives::convolution_detail::ConvParams;
constexpr const char* kOp = "conv_general_dilated";

/// The position of each letter of `spec` that is `a` or `b`, checking each occurs exactly once.
void check_letters(const std::string& spec, const char* which, char a, char b) {
  if (std::count(spec.begin(), spec.end(), a) != 1 || std::count(spec.begin(), spec.end(), b) != 1)
    detail::fail<AxisError>(kOp, "the ", which, " layout \"", spec, "\" must contain '", a, "' and '", b,
                            "' exactly once. Write layouts like (\"NCHW\", \"OIHW\", \"NCHW\").");
  if (std::set<char>(spec.begin(), spec.end()).size() != spec.size())
    detail::fail<AxisError>(kOp, "the ", which, " layout \"", spec,
                            "\" repeats a letter. Each dim needs its own letter.");
}

/// The letters of `spec` other than `a` and `b`.
std::set<char> spatial_letters(const std::string& spec, char a, char b) {
  std::set<char> s;
  for (char c : spec)
    if (c != a && c != b) s.insert(c);
  return s;
}

/// The extents of `shape` along spec[2:] (the spatial dims in rhs order).
std::vector<int64_t> spatial(const Shape& shape, const std::vector<int64_t>& spec) {
  std::vector<int64_t> out;
  for (size_t d = 2; d < spec.size(); ++d) out.push_back(shape[spec[d]]);
  return out;
}

/// True when `spec` is a permutation of [0, rank).
bool is_permutation_of(const std::vector<int64_t>& spec, int64_t rank) {
  std::vector<int64_t> s = spec;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != static_cast<int64_t>(i)) return false;
  return static_cast<int64_t>(s.size()) == rank;
}

int64_t dilate(int64_t s, int64_t d) { return s == 0 ? 0 : 1 + d * (s - 1); }

/// `v`, or ns ones when empty.
std::vector<int64_t> or_ones(const std::vector<int64_t>& v, size_t ns) {
  return v.empty() ? std::vector<int64_t>(ns, 1) : v;
}

/// Fills p's padding from `padding`: explicit pairs as given, "SAME"/"SAME_LOWER"/"VALID" resolved like JAX's
/// padtype_to_pads. Malformed operands or params leave zeros, for the primitive's shape rule to report.
void resolve_padding(ConvParams& p, const ConvPadding& padding, const Shape& lhs, const Shape& rhs, size_t ns) {
  p.padding_lo.assign(ns, 0);
  p.padding_hi.assign(ns, 0);
  if (padding.mode.empty()) {
    if (padding.pairs.size() != ns)
      detail::fail<ShapeError>(kOp, "padding has ", padding.pairs.size(), " (low, high) pairs but the convolution has ",
                               ns, " spatial dims. Give one pair per spatial dim, or \"SAME\" / \"VALID\".");
    for (size_t d = 0; d < ns; ++d) p.padding_lo[d] = padding.pairs[d].first, p.padding_hi[d] = padding.pairs[d].second;
    return;
  }
  const std::string& m = padding.mode;
  if (m != "SAME" && m != "SAME_LOWER" && m != "VALID")
    detail::fail<Error>(kOp, "unknown padding \"", m,
                        "\". Use \"SAME\", \"SAME_LOWER\", \"VALID\" or one (low, high) pair per spatial dim.");
  for (int64_t d : p.lhs_dilation)
    if (d != 1)
      detail::fail<Error>(kOp, "padding \"", m,
                          "\" is not defined with lhs dilation (a transposed convolution). "
                          "Give explicit (low, high) pairs, or use fx::conv_transpose.");
  const int64_t rank = lhs.size();
  const bool well_formed =
      rhs.size() == rank && is_permutation_of(p.lhs_spec, rank) && is_permutation_of(p.rhs_spec, rank) &&
      p.window_strides.size() == ns && p.rhs_dilation.size() == ns &&
      std::all_of(p.window_strides.begin(), p.window_strides.end(), [](int64_t s) { return s > 0; });
  if (m == "VALID" || !well_formed) return;
  const std::vector<int64_t> in = spatial(lhs, p.lhs_spec), k = spatial(rhs, p.rhs_spec);
  for (size_t d = 0; d < ns; ++d) {
    const int64_t s = p.window_strides[d], out = (in[d] + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + dilate(k[d], p.rhs_dilation[d]) - in[d], 0);
    const int64_t small = total / 2, large = total - small;
    p.padding_lo[d] = m == "SAME" ? small : large;
    p.padding_hi[d] = m == "SAME" ? large : small;
  }
}

/// JAX's _conv_transpose_padding: the padding of the dilated input that inverts a forward convolution with
/// padding `mode` and window k (dilated) at stride s.
std::pair<int64_t, int64_t> transpose_padding(int64_t k, int64_t s, const std::string& mode) {
  int64_t len = 0, before = 0;
  if (mode == "SAME") {
    len = k + s - 2;
    before = s > k - 1 ? k - 1 : (len + 1) / 2;
  } else if (mode == "VALID") {
    len = k + s - 2 + std::max<int64_t>(k - s, 0);
    before = k - 1;
  } else {
    detail::fail<Error>("conv_transpose", "unknown padding \"", mode,
                        "\". Use \"SAME\", \"VALID\" or one (low, high) pair per spatial dim.");
  }
  return {before, len - before};
}

}  // namespace ops_convolution_detail

ConvDimensionNumbers::ConvDimensionNumbers(const char* lhs, const char* rhs, const char* out) {
  using namespace ops_convolution_detail;
  const std::string l = lhs ? lhs : "", r = rhs ? rhs : "", o = out ? out : "";
  check_letters(l, "lhs", 'N', 'C');
  check_letters(r, "rhs", 'O', 'I');
  check_letters(o, "out", 'N', 'C');
  if (l.size() != r.size() || l.size() != o.size() || spatial_letters(l, 'N', 'C') != spatial_letters(r, 'O', 'I') ||
      spatial_letters(o, 'N', 'C') != spatial_letters(r, 'O', 'I'))
    detail::fail<AxisError>(kOp, "the layouts (\"", l, "\", \"", r, "\", \"", o,
                            "\") must have the same length and the same spatial letters. Write them like (\"NHWC\", "
                            "\"HWIO\", \"NHWC\").");
  auto index = [](const std::string& s, char c) { return static_cast<int64_t>(s.find(c)); };
  rhs_spec = {index(r, 'O'), index(r, 'I')};
  lhs_spec = {index(l, 'N'), index(l, 'C')};
  out_spec = {index(o, 'N'), index(o, 'C')};
  for (char c : r)
    if (c != 'O' && c != 'I') {  // spatial dims pair up in rhs order
      rhs_spec.push_back(index(r, c));
      lhs_spec.push_back(index(l, c));
      out_spec.push_back(index(o, c));
    }
}

Tensor conv_general_dilated(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& window_strides,
                            const ConvPadding& padding, const std::vector<int64_t>& lhs_dilation,
                            const std::vector<int64_t>& rhs_dilation, const ConvDimensionNumbers& dimension_numbers,
                            int64_t feature_group_count, int64_t batch_group_count) {
  using namespace ops_convolution_detail;
  const size_t ns = static_cast<size_t>(std::max<int64_t>(lhs.ndim() - 2, 0));
  ConvParams p;
  if (dimension_numbers.is_default()) {
    std::vector<int64_t> iota(static_cast<size_t>(lhs.ndim()));
    std::iota(iota.begin(), iota.end(), 0);
    p.lhs_spec = p.rhs_spec = p.out_spec = iota;
  } else {
    p.lhs_spec = dimension_numbers.lhs_spec, p.rhs_spec = dimension_numbers.rhs_spec;
    p.out_spec = dimension_numbers.out_spec;
  }
  p.window_strides = window_strides;
  p.lhs_dilation = or_ones(lhs_dilation, ns), p.rhs_dilation = or_ones(rhs_dilation, ns);
  p.feature_group_count = feature_group_count, p.batch_group_count = batch_group_count;
  resolve_padding(p, padding, lhs.shape(), rhs.shape(), ns);
  const DType dt = result_type(lhs, rhs);
  return bind1(primitives::convolution_detail::conv_general_dilated_p(), {astype(lhs, dt), astype(rhs, dt)}, p);
}

Tensor conv_general_dilated(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& window_strides,
                            const ConvPadding& padding, const std::vector<int64_t>& lhs_dilation,
                            const std::vector<int64_t>& rhs_dilation, int64_t feature_group_count) {
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, ConvDimensionNumbers(),
                              feature_group_count, 1);
}

Tensor conv(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& window_strides,
            const ConvPadding& padding) {
  return conv_general_dilated(lhs, rhs, window_strides, padding, {}, {}, ConvDimensionNumbers(), 1, 1);
}

Tensor conv_transpose(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& strides,
                      const ConvPadding& padding, const std::vector<int64_t>& rhs_dilation,
                      const ConvDimensionNumbers& dimension_numbers, bool transpose_kernel) {
  using namespace ops_convolution_detail;
  const int64_t rank = lhs.ndim();
  if (rank < 2 || rhs.ndim() != rank)
    detail::fail<ShapeError>("conv_transpose", "lhs ", lhs.aval(), " and rhs ", rhs.aval(),
                             " must have the same rank, at least 2. A 2-d transposed convolution takes rank-4 "
                             "operands (NHWC and HWIO by default).");
  const size_t ns = static_cast<size_t>(rank - 2);
  ConvDimensionNumbers dn = dimension_numbers;
  if (dn.is_default()) {  // JAX's defaults for this op: N spatial... C, spatial... I O, N spatial... C
    dn.lhs_spec = {0, rank - 1}, dn.rhs_spec = {rank - 1, rank - 2};
    for (int64_t d = 0; d < rank - 2; ++d) dn.lhs_spec.push_back(d + 1), dn.rhs_spec.push_back(d);
    dn.out_spec = dn.lhs_spec;
  }
  if (strides.size() != ns || std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s < 1; }))
    detail::fail<ShapeError>("conv_transpose", "needs one positive stride per spatial dim (", ns, "), got ",
                             strides.size(), " strides", strides.empty() ? "" : " with a value below 1", ".");
  const std::vector<int64_t> rd = or_ones(rhs_dilation, ns);
  ConvPadding pads = padding;
  if (!padding.mode.empty()) {
    if (!is_permutation_of(dn.rhs_spec, rank) || rd.size() != ns)
      return conv_general_dilated(lhs, rhs, std::vector<int64_t>(ns, 1),
                                  std::vector<std::pair<int64_t, int64_t>>(ns, {0, 0}), strides, rd, dn);
    const std::vector<int64_t> k = spatial(rhs.shape(), dn.rhs_spec);
    pads = ConvPadding(std::vector<std::pair<int64_t, int64_t>>{});
    for (size_t d = 0; d < ns; ++d)
      pads.pairs.push_back(transpose_padding(dilate(k[d], rd[d]), strides[d], padding.mode));
  }
  Tensor kernel = rhs;
  if (transpose_kernel && is_permutation_of(dn.rhs_spec, rank)) {
    kernel = primitives::convolution_detail::reverse(kernel,
                                                     std::vector<int64_t>(dn.rhs_spec.begin() + 2, dn.rhs_spec.end()));
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[static_cast<size_t>(dn.rhs_spec[0])], perm[static_cast<size_t>(dn.rhs_spec[1])]);
    kernel = lax::transpose(kernel, perm);
  }
  return conv_general_dilated(lhs, kernel, std::vector<int64_t>(ns, 1), pads, strides, rd, dn);
}

}  // namespace fluxion
