/// The accumulators of the CUDA reduction kernels (shared by the portable bodies of reductions.hpp
/// and CudaExec's CUB path, reductions_cub.cuh), and the index map of a reduction.
///
/// The reference sums in long double and rounds once. Devices have no long double, so float sums
/// are compensated sums in double (Neumaier), which round to the same value but for rare
/// near-ties; products accumulate in double; integer sums and products in the unsigned type.
#pragma once
#include <type_traits>
#include <vector>

#include "backends/cuda/kernels/common.hpp"

namespace fluxion::cuda::reduction_kernels {

/// A float sum in double with Neumaier's compensation: `sum + comp` carries about twice double's
/// precision. Starts at `start` (-0 for reductions, the IEEE identity; +0 for cumsum, as the
/// reference). An infinite or NaN partial sum is returned as is (the compensation would be NaN).
struct CompensatedSum {
  double sum, comp = 0.0;
  FLUXION_HD explicit CompensatedSum(double start) : sum(start) {}
  FLUXION_HD void add(double x) {
    const double t = sum + x;
    const double big = sum < 0 ? -sum : sum, small = x < 0 ? -x : x;
    comp += big >= small ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  /// Adds another partial sum (a chunk's): its sum compensated, its compensation as is.
  FLUXION_HD void merge(const CompensatedSum& o) {
    add(o.sum);
    comp += o.comp;
  }
  /// The sum rounded once; a zero compensation leaves the sign of a zero sum alone.
  FLUXION_HD double value() const { return (comp == 0.0 || sum - sum != 0.0) ? sum : sum + comp; }
};

/// The accumulators, one per reduction, for element type T: `Acc acc(identity)`, `acc.add(x)`,
/// `acc.merge(partial)` (the accumulator of the elements that follow), `acc.result()`. Float sums
/// and products widen to double, integer ones wrap in the unsigned type.
template <class T, bool = std::is_floating_point_v<T>> struct WideOf { using type = double; };
template <class T> struct WideOf<T, false> { using type = std::make_unsigned_t<T>; };
template <class T> using Wide = typename WideOf<T>::type;

template <class T> struct SumAcc {
  CompensatedSum f;
  Wide<T> i = 0;
  FLUXION_HD SumAcc() : f(-0.0) {}  // the empty sum (CUB default-constructs accumulators)
  FLUXION_HD explicit SumAcc(T) : f(-0.0) {}
  FLUXION_HD void add(T x) {
    if constexpr (std::is_floating_point_v<T>) f.add(static_cast<double>(x));
    else i = static_cast<Wide<T>>(i + static_cast<Wide<T>>(x));
  }
  FLUXION_HD void merge(const SumAcc& o) {
    f.merge(o.f);
    i = static_cast<Wide<T>>(i + o.i);
  }
  FLUXION_HD T result() const {
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(f.value());
    else return static_cast<T>(i);
  }
};

template <class T> struct ProdAcc {
  Wide<T> p = 1;
  FLUXION_HD ProdAcc() {}  // the empty product
  FLUXION_HD explicit ProdAcc(T) {}
  FLUXION_HD void add(T x) { p = static_cast<Wide<T>>(p * static_cast<Wide<T>>(x)); }
  FLUXION_HD void merge(const ProdAcc& o) { p = static_cast<Wide<T>>(p * o.p); }
  FLUXION_HD T result() const { return static_cast<T>(p); }
};

/// max (IsMax) or min: starts at the identity; the first NaN sticks.
template <class T, bool IsMax> struct ChooseAcc {
  T best;
  FLUXION_HD explicit ChooseAcc(T identity) : best(identity) {}
  FLUXION_HD void add(T x) {
    if (best != best) return;
    if (x != x || (IsMax ? best < x : x < best)) best = x;
  }
  FLUXION_HD void merge(const ChooseAcc& o) { add(o.best); }
  FLUXION_HD T result() const { return best; }
};
template <class T> using MaxAcc = ChooseAcc<T, true>;
template <class T> using MinAcc = ChooseAcc<T, false>;

/// Where a reduction reads: output index o starts at kept.offset(o), and its r-th reduced element
/// (row-major over the reduced axes) is reduced.offset(r) further.
struct ReduceIndex {
  StridedIndex kept, reduced;
  fx_index count = 0;  // reduced elements per output
};

inline ReduceIndex make_reduce_index(const char* op, const std::vector<int64_t>& shape,
                                     const std::vector<int64_t>& axes) {
  const std::vector<int64_t> stride = row_major_strides(shape);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  ReduceIndex r;
  r.count = 1;
  for (size_t d = 0, a = 0; d < shape.size(); ++d) {
    const bool reduced = a < axes.size() && axes[a] == static_cast<int64_t>(d);
    (reduced ? red_dims : kept_dims).push_back(shape[d]);
    (reduced ? red_strides : kept_strides).push_back(stride[d]);
    if (reduced) ++a, r.count *= shape[d];
  }
  r.kept = make_strided_index(op, kept_dims, kept_strides);
  r.reduced = make_strided_index(op, red_dims, red_strides);
  return r;
}

}  // namespace fluxion::cuda::reduction_kernels
