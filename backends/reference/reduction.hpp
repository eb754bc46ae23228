/// Reference reduction kernels: per output element, unravel its index and visit the reduced
/// elements in row-major index order. The executable spec of the reduction family.
///
/// A reduction Op struct (primitives/reduction.cpp) provides, for the reference,
///   template <class T> using RefAcc;                  // accumulator: long double for float
///                                                     // sum/prod, unsigned for integer sum/prod
///   template <class T> static RefAcc<T> ref_init();   // identity of the reduction
///   template <class T> static RefAcc<T> ref_combine(RefAcc<T> acc, T x);
///   template <class T> static T identity();           // the result of reducing zero elements
/// and the result is static_cast<T>(acc): floats are summed/multiplied in extended precision
/// (long double) and rounded once; integers wrap modulo 2^bits. A float sum starts at -0 (IEEE
/// addition's identity: a sum of -0s is -0), while an empty sum is +0 (numpy's, and identity()).
#pragma once
#include <cstdint>
#include <vector>

namespace fluxion::reference {
namespace reduction_detail {

inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

/// Advances the multi-index `idx` over extents `size` in row-major order; false after the last.
inline bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& size) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < size[d]) return true;
    idx[d] = 0;
  }
  return false;
}

inline int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

}  // namespace reduction_detail

/// out[kept index] = reduction over `axes` of in; see the file comment for the accumulator.
template <class Op, class T>
void reduce(const T* in, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes, T* out) {
  using namespace reduction_detail;
  const std::vector<int64_t> stride = row_major_strides(shape);
  std::vector<bool> is_reduced(shape.size(), false);
  for (int64_t a : axes) is_reduced[static_cast<size_t>(a)] = true;
  std::vector<int64_t> kept_size, kept_stride, red_size, red_stride;
  for (size_t d = 0; d < shape.size(); ++d) {
    (is_reduced[d] ? red_size : kept_size).push_back(shape[d]);
    (is_reduced[d] ? red_stride : kept_stride).push_back(stride[d]);
  }
  const int64_t out_n = product(kept_size), red_n = product(red_size);
  std::vector<int64_t> kept_idx(kept_size.size(), 0);
  for (int64_t o = 0; o < out_n; ++o, next_index(kept_idx, kept_size)) {
    if (red_n == 0) {
      out[o] = Op::template identity<T>();
      continue;
    }
    int64_t base = 0;
    for (size_t k = 0; k < kept_idx.size(); ++k) base += kept_idx[k] * kept_stride[k];
    auto acc = Op::template ref_init<T>();
    std::vector<int64_t> red_idx(red_size.size(), 0);
    for (int64_t r = 0; r < red_n; ++r, next_index(red_idx, red_size)) {
      int64_t offset = base;
      for (size_t k = 0; k < red_idx.size(); ++k) offset += red_idx[k] * red_stride[k];
      acc = Op::template ref_combine<T>(acc, in[offset]);
    }
    out[o] = static_cast<T>(acc);
  }
}

/// Index along `axis` of the first maximum (IsMax) or minimum, per output element. NaN is larger
/// (IsMax) or smaller than every number; the first NaN wins. shape[axis] >= 1.
template <bool IsMax, class T, class I>
void arg_reduce(const T* in, const std::vector<int64_t>& shape, int64_t axis, I* out) {
  using namespace reduction_detail;
  const std::vector<int64_t> stride = row_major_strides(shape);
  std::vector<int64_t> out_size;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != axis) out_size.push_back(shape[d]);
  const int64_t n = shape[static_cast<size_t>(axis)], step = stride[static_cast<size_t>(axis)];
  std::vector<int64_t> idx(out_size.size(), 0);
  for (int64_t o = 0, out_n = product(out_size); o < out_n; ++o, next_index(idx, out_size)) {
    int64_t base = 0;
    for (size_t k = 0, d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != axis) base += idx[k++] * stride[d];
    int64_t best = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T x = in[base + j * step];
      if (x != x) {  // NaN: the extremum, and the first one wins
        best = j;
        break;
      }
      const T b = in[base + best * step];
      if (IsMax ? (b < x) : (x < b)) best = j;
    }
    out[o] = static_cast<I>(best);
  }
}

/// Inclusive prefix sum along `axis` (from the end when `reverse`): each output element sums its
/// input prefix from scratch, in index order, in accumulator Acc (long double for floats,
/// unsigned for integers).
template <class Acc, class T>
void cumsum(const T* in, const std::vector<int64_t>& shape, int64_t axis, bool reverse, T* out) {
  using namespace reduction_detail;
  const std::vector<int64_t> stride = row_major_strides(shape);
  const int64_t n = shape[static_cast<size_t>(axis)], step = stride[static_cast<size_t>(axis)];
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t o = 0, total = product(shape); o < total; ++o, next_index(idx, shape)) {
    const int64_t k = idx[static_cast<size_t>(axis)], base = o - k * step;
    Acc acc = 0;
    for (int64_t j = reverse ? n - 1 : 0; reverse ? j >= k : j <= k; j += reverse ? -1 : 1)
      acc = Acc(acc + static_cast<Acc>(in[base + j * step]));
    out[o] = static_cast<T>(acc);
  }
}

}  // namespace fluxion::reference
