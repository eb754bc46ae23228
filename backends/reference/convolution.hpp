/// Reference conv_general_dilated (the spec the other kernels are tested against): for every output
/// element, the sum over its group's input features and every kernel position of lhs * rhs, where the
/// input position o * stride - pad_lo + k * rhs_dilation lands on a real (not dilation-inserted, not
/// padding) lhs element. Accumulates in long double, rounded once. ConvGeometry, shared with the CPU
/// kernel, views each operand through its dimension numbers as (batch, feature, spatial...) strides.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "fluxion/primitive.hpp"
#include "primitives/convolution.hpp"

namespace fluxion::reference {
namespace convolution_detail {

/// The sizes and element strides of one convolution, in canonical dim order.
struct ConvGeometry {
  int64_t groups = 1;          // feature_group_count or batch_group_count (at most one exceeds 1)
  bool batch_grouped = false;  // groups split the lhs batch (batch_group_count > 1), not its features
  int64_t out_batch = 0;       // output batch size (lhs batch / batch_group_count)
  int64_t group_in = 0;        // rhs input features (lhs features per group)
  int64_t group_out = 0;       // output features per group
  std::vector<int64_t> in_size, kernel_size, out_size;  // spatial extents, in rhs_spec order
  std::vector<int64_t> stride, lhs_dilation, rhs_dilation, pad_lo;
  // Element strides along (batch, feature, spatial...) of lhs and out, (out feature, in feature,
  // spatial...) of rhs.
  std::vector<int64_t> lhs_step, rhs_step, out_step;

  int64_t spatial() const { return static_cast<int64_t>(in_size.size()); }
  /// The lhs batch index of output batch n in group g.
  int64_t lhs_batch(int64_t g, int64_t n) const { return batch_grouped ? g * out_batch + n : n; }
  /// The lhs feature index of rhs input feature i in group g.
  int64_t lhs_feature(int64_t g, int64_t i) const { return batch_grouped ? i : g * group_in + i; }
  /// The lhs index along spatial dim d read by output position o and kernel position k, or -1 where that
  /// position is padding or falls between dilated lhs elements.
  int64_t input_index(int64_t d, int64_t o, int64_t k) const {
    const size_t u = static_cast<size_t>(d);
    const int64_t pos = o * stride[u] - pad_lo[u] + k * rhs_dilation[u];
    if (pos < 0 || pos % lhs_dilation[u] != 0) return -1;
    const int64_t i = pos / lhs_dilation[u];
    return i < in_size[u] ? i : -1;
  }
};

/// Row-major element strides of `shape`, taken in the order `spec`.
inline std::vector<int64_t> spec_strides(const Shape& shape, const std::vector<int64_t>& spec) {
  std::vector<int64_t> row_major(static_cast<size_t>(shape.size()), 1);
  for (int64_t d = shape.size() - 1; d > 0; --d)
    row_major[static_cast<size_t>(d - 1)] = row_major[static_cast<size_t>(d)] * shape[d];
  std::vector<int64_t> out;
  for (int64_t d : spec) out.push_back(row_major[static_cast<size_t>(d)]);
  return out;
}

/// The geometry of a validated convolution with operand shapes lhs, rhs and output shape out.
inline ConvGeometry conv_geometry(const Shape& lhs, const Shape& rhs, const Shape& out,
                                  const primitives::convolution_detail::ConvParams& p) {
  ConvGeometry g;
  g.batch_grouped = p.batch_group_count > 1;
  g.groups = g.batch_grouped ? p.batch_group_count : p.feature_group_count;
  g.out_batch = out[p.out_spec[0]];
  g.group_in = rhs[p.rhs_spec[1]];
  g.group_out = rhs[p.rhs_spec[0]] / g.groups;
  for (size_t d = 2; d < p.lhs_spec.size(); ++d) {
    g.in_size.push_back(lhs[p.lhs_spec[d]]);
    g.kernel_size.push_back(rhs[p.rhs_spec[d]]);
    g.out_size.push_back(out[p.out_spec[d]]);
  }
  g.stride = p.window_strides, g.lhs_dilation = p.lhs_dilation, g.rhs_dilation = p.rhs_dilation;
  g.pad_lo = p.padding_lo;
  g.lhs_step = spec_strides(lhs, p.lhs_spec);
  g.rhs_step = spec_strides(rhs, p.rhs_spec);
  g.out_step = spec_strides(out, p.out_spec);
  return g;
}

/// Advances `idx` over extents `size` in row-major order; false after the last index.
inline bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& size) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < size[d]) return true;
    idx[d] = 0;
  }
  return false;
}

inline bool any_zero(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x == 0) return true;
  return false;
}

}  // namespace convolution_detail

/// out = conv_general_dilated(lhs, rhs) by direct summation (floating T).
template <class T>
void conv_general_dilated(const T* lhs, const T* rhs, T* out, const convolution_detail::ConvGeometry& g) {
  using namespace convolution_detail;
  const int64_t ns = g.spatial();
  if (g.out_batch == 0 || g.groups * g.group_out == 0 || any_zero(g.out_size)) return;
  std::vector<int64_t> o(static_cast<size_t>(ns), 0), k(static_cast<size_t>(ns), 0);
  for (int64_t n = 0; n < g.out_batch; ++n)
    for (int64_t f = 0; f < g.groups * g.group_out; ++f) {
      const int64_t grp = f / g.group_out;
      std::fill(o.begin(), o.end(), 0);
      do {
        long double acc = 0;
        int64_t out_at = n * g.out_step[0] + f * g.out_step[1];
        for (int64_t d = 0; d < ns; ++d) out_at += o[static_cast<size_t>(d)] * g.out_step[static_cast<size_t>(d + 2)];
        for (int64_t i = 0; i < g.group_in && !any_zero(g.kernel_size); ++i) {
          std::fill(k.begin(), k.end(), 0);
          do {
            int64_t lhs_at = g.lhs_batch(grp, n) * g.lhs_step[0] + g.lhs_feature(grp, i) * g.lhs_step[1];
            int64_t rhs_at = f * g.rhs_step[0] + i * g.rhs_step[1];
            bool inside = true;
            for (int64_t d = 0; d < ns && inside; ++d) {
              const size_t u = static_cast<size_t>(d);
              const int64_t x = g.input_index(d, o[u], k[u]);
              inside = x >= 0;
              lhs_at += x * g.lhs_step[u + 2];
              rhs_at += k[u] * g.rhs_step[u + 2];
            }
            if (inside) acc += static_cast<long double>(lhs[lhs_at]) * static_cast<long double>(rhs[rhs_at]);
          } while (next_index(k, g.kernel_size));
        }
        out[out_at] = static_cast<T>(acc);
      } while (next_index(o, g.out_size));
    }
}

}  // namespace fluxion::reference
