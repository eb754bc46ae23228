/// CPU reduction kernels: Eigen partial reductions (vectorised) over row-major matrix views.
///
/// A reduction Op struct (primitives/reduction.cpp) provides
///   template <class T> using Acc;          // element type Eigen reduces in (unsigned for wrapping
///                                          // integer sum/prod; T otherwise)
///   template <class A> static auto functor();   // Eigen binary functor with packetOp
///   template <class T> static T identity();      // result of reducing zero elements
///   static constexpr bool kWide;           // floats accumulate in double, pairwise (sum, prod;
///   template <class V> static V combine(V, V);   // backends/cpu/accumulate.hpp)
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "backends/cpu/accumulate.hpp"
#include "backends/cpu/permute.hpp"
#include "backends/cpu/small_vector.hpp"

namespace fluxion::cpu {
namespace reduction_detail {

template <class A> using RowMajorMat = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class A> using ColVec = Eigen::Matrix<A, Eigen::Dynamic, 1>;
template <class A> using RowVec = Eigen::Matrix<A, 1, Eigen::Dynamic>;

/// Layout of a reduction after dropping size-1 dims and merging neighbouring dims that are both
/// kept or both reduced: alternating runs, each with its extent.
struct Runs {
  IndexVector size;
  SmallVector<char> reduced;  // bools (SmallVector keeps a std::vector, whose bool form has no data())
  bool pattern(std::initializer_list<bool> p) const {
    return reduced.size() == p.size() && std::equal(p.begin(), p.end(), reduced.begin());
  }
};

inline Runs make_runs(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  Runs r;
  size_t a = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool red = a < axes.size() && axes[a] == static_cast<int64_t>(d);
    if (red) ++a;
    if (shape[d] == 1) continue;
    if (!r.size.empty() && r.reduced.back() == red) {
      r.size.back() *= shape[d];
    } else {
      r.size.push_back(shape[d]);
      r.reduced.push_back(red);
    }
  }
  return r;
}

/// out[c] = reduction over r of in[r, c] for a row-major [rows, cols] block, rows >= 1. Wide
/// blocks accumulate row by row into `out` (contiguous and vectorised, one pass over memory, in
/// chunks that stay in L1), so do rows of 8..31 (in a plain loop: 0.5 against Eigen's 0.8-0.9 ns
/// per f64 element for rows of 10 and 16); rows under 8 use Eigen's column reduction (plain loops
/// took 2.0 against 0.9 ns for rows of 2).
template <class A, class F> void reduce_leading(const A* in, int64_t rows, int64_t cols, A* out, const F& f) {
  using Arr = Eigen::Array<A, Eigen::Dynamic, 1>;
  if (cols < 8) {
    Eigen::Map<RowVec<A>>(out, cols) = Eigen::Map<const RowMajorMat<A>>(in, rows, cols).colwise().redux(f);
    return;
  }
  if (cols < 32) {  // one accumulator per column, the row's loop vectorised over its columns
    std::copy(in, in + cols, out);
    for (int64_t r = 1; r < rows; ++r) {
      const A* row = in + r * cols;
      for (int64_t c = 0; c < cols; ++c) out[c] = f(out[c], row[c]);
    }
    return;
  }
  constexpr int64_t kChunk = 2048;
  for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const int64_t w = std::min(kChunk, cols - c0);
    Eigen::Map<Arr> acc(out + c0, w);
    acc = Eigen::Map<const Arr>(in + c0, w);
    for (int64_t r = 1; r < rows; ++r) acc = acc.binaryExpr(Eigen::Map<const Arr>(in + r * cols + c0, w), f);
  }
}

/// Row-major [outer, red] view of `in` with the reduced axes last: `in` itself when they already
/// are, else a permuted copy in `owned`.
template <class T> const T* reduced_last(const T* in, const std::vector<int64_t>& shape,
                                         const std::vector<int64_t>& axes, int64_t n, std::unique_ptr<T[]>& owned) {
  IndexVector perm;
  for (size_t d = 0, a = 0; d < shape.size(); ++d) {
    if (a < axes.size() && axes[a] == static_cast<int64_t>(d)) ++a;
    else perm.push_back(static_cast<int64_t>(d));
  }
  for (int64_t a : axes) perm.push_back(a);
  T* tmp = scratch_buffer<T>(0, static_cast<size_t>(n), owned);
  permute_copy(in, shape, perm, tmp);
  return tmp;
}

/// Sums and products of floats (Op::kWide): accumulated in double, pairwise
/// (backends/cpu/accumulate.hpp), each result rounded once.
template <class Op, class T> void reduce_wide(const T* in, const std::vector<int64_t>& shape,
                                              const std::vector<int64_t>& axes, const Runs& r, int64_t out_n,
                                              int64_t red_n, T* out) {
  namespace acc = accumulate;
  if (r.pattern({true})) {
    out[0] = static_cast<T>(acc::pairwise<Op>(in, red_n));
  } else if (r.pattern({true, false})) {  // [reduced, kept]: column reductions
    acc::column_reduce<Op>(in, red_n, out_n, out);
  } else if (r.pattern({false, true, false})) {  // [outer, reduced, inner]
    const int64_t inner = r.size[2];
    for (int64_t o = 0; o < r.size[0]; ++o)
      acc::column_reduce<Op>(in + o * red_n * inner, red_n, inner, out + o * inner);
  } else {  // [outer, reduced] rows, after moving interleaved reduced axes last
    std::unique_ptr<T[]> owned;
    const T* rows = r.pattern({false, true}) ? in : reduced_last(in, shape, axes, out_n * red_n, owned);
    for (int64_t o = 0; o < out_n; ++o) out[o] = static_cast<T>(acc::pairwise<Op>(rows + o * red_n, red_n));
  }
}

/// acc[k] += row r[k] for R consecutive rows of the scan (`row` elements apart), each running
/// sum written to d's rows as it is formed: one load and store of the accumulators per R rows.
/// The pointers never alias (restrict): the loop vectorises without run-time overlap checks.
template <int R, class A, class E>
inline void scan_rows(A* __restrict acc, const E* __restrict s, E* __restrict d, int64_t row, int64_t w) {
  for (int64_t k = 0; k < w; ++k) {
    A a = acc[k];
    for (int r = 0; r < R; ++r) {
      a = A(a + A(s[r * row + k]));
      d[r * row + k] = static_cast<E>(a);
    }
    acc[k] = a;
  }
}

}  // namespace reduction_detail

/// out[kept index] = Op-reduction of in over `axes` (sorted, unique, in range). `shape` is the
/// input's; `out` holds the product of the kept extents.
template <class Op, class T>
void reduce(const T* in_t, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes, T* out_t) {
  using namespace reduction_detail;
  using A = typename Op::template Acc<T>;
  static_assert(sizeof(A) == sizeof(T), "the accumulator reinterprets the element bytes");
  int64_t out_n = 1, red_n = 1;
  for (size_t d = 0, a = 0; d < shape.size(); ++d) {
    if (a < axes.size() && axes[a] == static_cast<int64_t>(d)) red_n *= shape[d], ++a;
    else out_n *= shape[d];
  }
  if (out_n == 0) return;
  if (red_n == 0) {
    std::fill(out_t, out_t + out_n, Op::template identity<T>());
    return;
  }
  // Signed and unsigned variants of one integer type may alias: integer sums wrap.
  const A* in = reinterpret_cast<const A*>(in_t);
  A* out = reinterpret_cast<A*>(out_t);
  const auto f = Op::template functor<A>();
  const Runs r = make_runs(shape, axes);
  if (std::find(r.reduced.begin(), r.reduced.end(), true) == r.reduced.end()) {
    std::memcpy(out, in, static_cast<size_t>(out_n) * sizeof(A));  // only size-1 axes reduced
  } else if constexpr (Op::kWide && std::is_floating_point_v<T>) {
    reduce_wide<Op>(in_t, shape, axes, r, out_n, red_n, out_t);
  } else if (r.pattern({true})) {
    out[0] = Eigen::Map<const ColVec<A>>(in, red_n).redux(f);
  } else if (r.pattern({false, true})) {  // [outer, inner] -> one result per row
    Eigen::Map<ColVec<A>>(out, out_n) = Eigen::Map<const RowMajorMat<A>>(in, out_n, red_n).rowwise().redux(f);
  } else if (r.pattern({true, false})) {  // [reduced, kept] -> column reduction
    reduce_leading(in, red_n, out_n, out, f);
  } else if (r.pattern({false, true, false})) {  // [outer, reduced, inner]: per outer index
    const int64_t inner = r.size[2];
    for (int64_t o = 0; o < r.size[0]; ++o) reduce_leading(in + o * red_n * inner, red_n, inner, out + o * inner, f);
  } else {  // interleaved: move the reduced axes to the end, then reduce rows
    std::unique_ptr<A[]> owned;
    const A* tmp = reduced_last(in, shape, axes, out_n * red_n, owned);
    Eigen::Map<ColVec<A>>(out, out_n) = Eigen::Map<const RowMajorMat<A>>(tmp, out_n, red_n).rowwise().redux(f);
  }
}

/// Index of the first maximum (IsMax) or minimum along the middle dim of [outer, n, inner], n >= 1.
/// A NaN counts as larger (IsMax) or smaller than everything; the first NaN wins.
template <bool IsMax, class T, class I> void arg_reduce(const T* in, int64_t outer, int64_t n, int64_t inner, I* out) {
  if (inner == 1) {  // contiguous rows: a vectorised NaN-propagating max, then its first position
    using Extremum = std::conditional_t<IsMax, Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>,
                                        Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>>;
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = in + o * n;
      const T m = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(row, n).redux(Extremum());
      int64_t j = 0;
      if (m != m) {
        while (row[j] == row[j]) ++j;  // the first NaN
      } else {
        while (row[j] != m) ++j;
      }
      out[o] = static_cast<I>(j);
    }
    return;
  }
  // Sweep rows of `inner` contiguous elements, keeping the best value and index per column. A
  // value replaces the best when strictly better, or when it is the first NaN.
  std::vector<T> best(static_cast<size_t>(inner));
  std::vector<I> idx(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* block = in + o * n * inner;
    std::copy(block, block + inner, best.begin());
    std::fill(idx.begin(), idx.end(), I(0));
    T* b = best.data();
    I* bi = idx.data();
    for (int64_t j = 1; j < n; ++j) {
      const T* row = block + j * inner;
      for (int64_t k = 0; k < inner; ++k) {
        const T x = row[k];
        bool take = IsMax ? (x > b[k]) : (x < b[k]);
        if constexpr (std::is_floating_point_v<T>) take = take | ((x != x) & (b[k] == b[k]));
        b[k] = take ? x : b[k];
        bi[k] = take ? static_cast<I>(j) : bi[k];
      }
    }
    std::copy(idx.begin(), idx.end(), out + o * inner);
  }
}

/// Inclusive prefix sum along the middle dim of [outer, n, inner] (from the end when `reverse`),
/// accumulating in A: the unsigned type of an integer T's width (overflow wraps, the bytes
/// reinterpreted), double for floats (each output the running double sum rounded once: an f32
/// cumsum's last element is its correctly rounded sum, not a sequential f32 sum's n u error).
template <class A, class T>
void cumsum(const T* in_t, int64_t outer, int64_t n, int64_t inner, bool reverse, T* out_t) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  static_assert(kFloat ? std::is_same_v<A, double> : sizeof(A) == sizeof(T), "accumulator");
  if (outer == 0 || n == 0 || inner == 0) return;
  using E = std::conditional_t<kFloat, T, A>;  // elements as read and written
  const E* in = reinterpret_cast<const E*>(in_t);
  E* out = reinterpret_cast<E*>(out_t);
  const int64_t first = reverse ? n - 1 : 0, step = reverse ? -1 : 1;
  int64_t o = 0;
  if (inner == 1) {  // scan kRows rows at once: independent additions hide the add latency
    constexpr int64_t kRows = 8;
    for (; o + kRows <= outer; o += kRows) {
      const E* src = in + o * n;
      E* dst = out + o * n;
      A acc[kRows];
      for (int64_t r = 0; r < kRows; ++r) dst[r * n + first] = static_cast<E>(acc[r] = A(src[r * n + first]));
      for (int64_t j = first + step, c = 1; c < n; j += step, ++c)
        for (int64_t r = 0; r < kRows; ++r) dst[r * n + j] = static_cast<E>(acc[r] = A(acc[r] + A(src[r * n + j])));
    }
    for (; o < outer; ++o) {  // a sequential scan along a contiguous row
      const E* src = in + o * n;
      E* dst = out + o * n;
      A acc = A(src[first]);
      dst[first] = static_cast<E>(acc);
      for (int64_t j = first + step, c = 1; c < n; j += step, ++c) dst[j] = static_cast<E>(acc = A(acc + A(src[j])));
    }
    return;
  }
  // Rows of `inner` elements: row j's running sums = row j-1's + input row j, vectorised along the
  // row, in chunks of columns whose accumulators stay in L1, four rows per pass over them.
  constexpr int64_t kChunk = 1024;
  A acc[kChunk];
  const int64_t row = step * inner;  // from one row of the scan to the next
  for (; o < outer; ++o) {
    for (int64_t c0 = 0; c0 < inner; c0 += kChunk) {
      const int64_t w = std::min(kChunk, inner - c0);
      const E* s = in + o * n * inner + first * inner + c0;
      E* d = out + o * n * inner + first * inner + c0;
      for (int64_t k = 0; k < w; ++k) d[k] = static_cast<E>(acc[k] = A(s[k]));
      int64_t c = 1;
      for (; c + 4 <= n; c += 4, s += 4 * row, d += 4 * row)
        reduction_detail::scan_rows<4>(acc, s + row, d + row, row, w);
      for (; c < n; ++c, s += row, d += row) reduction_detail::scan_rows<1>(acc, s + row, d + row, row, w);
    }
  }
}

}  // namespace fluxion::cpu
