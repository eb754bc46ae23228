/// CPU conv_general_dilated: im2col + the project's GEMM. For each group g, the patches of the lhs that the
/// output positions read become the columns of a (K = features per group x kernel positions) by
/// (batch x output positions) matrix; the weights, copied to (group, out feature, K) order, multiply it in one
/// batched dot_general (backends/cpu/gemm.hpp, which picks Eigen, OpenBLAS or oneDNN by shape), and the
/// product is scattered into the output's layout. Any dimension numbers, padding (negative crops) and
/// dilations go through the same patch copy; large batches are done in chunks so that the patch matrix stays
/// near 16 MiB.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/reference/convolution.hpp"

namespace fluxion::cpu {
namespace convolution_detail {

using reference::convolution_detail::ConvGeometry;

inline int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

/// Unravels flat index `flat` over `size` (row-major) into `idx`.
inline void unravel(int64_t flat, const std::vector<int64_t>& size, std::vector<int64_t>& idx) {
  for (size_t d = size.size(); d-- > 0;) {
    idx[d] = flat % size[d];
    flat /= size[d];
  }
}

/// For kernel position k (a multi-index), the lhs spatial element offset read by each output position
/// (row-major over out_size), or -1 where it reads padding or a dilation hole.
inline void patch_offsets(const ConvGeometry& g, const std::vector<int64_t>& k, std::vector<int64_t>& offsets) {
  const int64_t ns = g.spatial();
  offsets.assign(1, 0);  // offsets over the spatial dims done so far
  for (int64_t d = 0; d < ns; ++d) {
    const size_t u = static_cast<size_t>(d);
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(g.out_size[u]));
    for (int64_t base : offsets)
      for (int64_t o = 0; o < g.out_size[u]; ++o) {
        const int64_t i = g.input_index(d, o, k[u]);
        next.push_back(base < 0 || i < 0 ? -1 : base + i * g.lhs_step[u + 2]);
      }
    offsets.swap(next);
  }
}

}  // namespace convolution_detail

/// out = conv_general_dilated(lhs, rhs) for floating T (the output buffer is fully written).
template <class T>
void conv_general_dilated(const T* lhs, const T* rhs, T* out, const convolution_detail::ConvGeometry& g) {
  using namespace convolution_detail;
  const int64_t ns = g.spatial(), features = g.groups * g.group_out;
  const int64_t positions = product(g.out_size), taps = product(g.kernel_size), depth = g.group_in * taps;
  if (g.out_batch == 0 || features == 0 || positions == 0) return;
  if (depth == 0) {  // nothing to sum: every output is zero
    std::fill(out, out + g.out_batch * features * positions, T(0));
    return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(ns));
  // Weights as (group, out feature, depth) with depth = (in feature, kernel position), row-major.
  std::vector<T> w(static_cast<size_t>(features * depth));
  std::vector<int64_t> tap_offset(static_cast<size_t>(taps));
  for (int64_t t = 0; t < taps; ++t) {
    unravel(t, g.kernel_size, idx);
    int64_t off = 0;
    for (int64_t d = 0; d < ns; ++d) off += idx[static_cast<size_t>(d)] * g.rhs_step[static_cast<size_t>(d + 2)];
    tap_offset[static_cast<size_t>(t)] = off;
  }
  for (int64_t f = 0; f < features; ++f)
    for (int64_t i = 0; i < g.group_in; ++i)
      for (int64_t t = 0; t < taps; ++t)
        w[static_cast<size_t>(f * depth + i * taps + t)] =
            rhs[f * g.rhs_step[0] + i * g.rhs_step[1] + tap_offset[static_cast<size_t>(t)]];
  // Output spatial offsets of the row-major output positions.
  std::vector<int64_t> out_offset(static_cast<size_t>(positions));
  for (int64_t p = 0; p < positions; ++p) {
    unravel(p, g.out_size, idx);
    int64_t off = 0;
    for (int64_t d = 0; d < ns; ++d) off += idx[static_cast<size_t>(d)] * g.out_step[static_cast<size_t>(d + 2)];
    out_offset[static_cast<size_t>(p)] = off;
  }
  const int64_t budget = int64_t(1) << 22;  // patch-matrix elements per chunk
  const int64_t chunk = std::clamp<int64_t>(budget / (g.groups * depth * positions), 1, g.out_batch);
  std::vector<T> cols(static_cast<size_t>(g.groups * depth * chunk * positions));
  std::vector<T> prod(static_cast<size_t>(features * chunk * positions));
  std::vector<int64_t> offsets;
  for (int64_t n0 = 0; n0 < g.out_batch; n0 += chunk) {
    const int64_t cn = std::min(chunk, g.out_batch - n0), width = cn * positions;
    // cols[g][i * taps + t][n * positions + p] = the lhs element that output (n0 + n, p) reads at tap t.
    for (int64_t t = 0; t < taps; ++t) {
      unravel(t, g.kernel_size, idx);
      patch_offsets(g, idx, offsets);
      for (int64_t grp = 0; grp < g.groups; ++grp)
        for (int64_t i = 0; i < g.group_in; ++i)
          for (int64_t n = 0; n < cn; ++n) {
            const T* src = lhs + g.lhs_batch(grp, n0 + n) * g.lhs_step[0] + g.lhs_feature(grp, i) * g.lhs_step[1];
            T* row = cols.data() + (grp * depth + i * taps + t) * width + n * positions;
            for (int64_t p = 0; p < positions; ++p) {
              const int64_t off = offsets[static_cast<size_t>(p)];
              row[p] = off < 0 ? T(0) : src[off];
            }
          }
    }
    cpu::dot_general(w.data(), {g.groups, g.group_out, depth}, cols.data(), {g.groups, depth, width}, {{2}, {1}},
                     {{0}, {0}}, prod.data());
    for (int64_t f = 0; f < features; ++f)
      for (int64_t n = 0; n < cn; ++n) {
        const T* from = prod.data() + (f * cn + n) * positions;
        T* to = out + (n0 + n) * g.out_step[0] + f * g.out_step[1];
        for (int64_t p = 0; p < positions; ++p) to[out_offset[static_cast<size_t>(p)]] = from[p];
      }
  }
}

}  // namespace fluxion::cpu
