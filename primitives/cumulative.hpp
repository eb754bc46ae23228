/// The cumulative primitives' handles and their combining scalar ops (defined in cumulative.cpp; the
/// CUDA kernel header compiles the scan body with nvcc). Params: reduction_family::CumsumParams.
#pragma once
#include <type_traits>

#include "backends/cuda/device_code.hpp"
#include "fluxion/primitive.hpp"
#include "primitives/scalar_functions.hpp"

namespace fluxion::primitives::cumulative_detail {

using cuda::fx_index;

const Primitive& cumprod_p();       // inclusive running product along `axis` (from the end when `reverse`)
const Primitive& cummax_p();        // running maximum (a NaN propagates, like fx::maximum)
const Primitive& cummin_p();        // running minimum
const Primitive& cumlogsumexp_p();  // running log(sum(exp))

// The combining ops, on an accumulator A (double for floats, so f32 rounds once per element).
struct Prod {
  template <class A> FLUXION_HD static A apply(A acc, A x) {
    if constexpr (A(-1) < A(0) && A(1) / A(2) == A(0)) {  // signed integers: wrap around, no overflow UB
      return static_cast<A>(static_cast<unsigned long long>(acc) * static_cast<unsigned long long>(x));
    } else {
      return acc * x;
    }
  }
};
struct Max {
  template <class A> FLUXION_HD static A apply(A acc, A x) { return scalar_functions::Max::apply(acc, x); }
};
struct Min {
  template <class A> FLUXION_HD static A apply(A acc, A x) { return scalar_functions::Min::apply(acc, x); }
};
/// log(exp(acc) + exp(x)): the larger plus log1p of the smaller's exp; both -inf gives -inf, an inf
/// gives inf, a NaN NaN.
struct LogAddExp {
  template <class A> FLUXION_HD static A apply(A acc, A x) {
    if (acc != acc || x != x) return acc != acc ? acc : x;
    const A hi = acc < x ? x : acc, lo = acc < x ? acc : x;
    if (lo - lo != lo - lo) return hi;  // lo is -inf (or both +inf): nothing to add
    return hi + static_cast<A>(::log1p(::exp(lo - hi)));
  }
};

/// Whether Op applies to element type T (not bool; LogAddExp: floating types only).
template <class Op, class T> inline constexpr bool kCumulativeApplies =
    !std::is_same_v<T, bool> && (!std::is_same_v<Op, LogAddExp> || std::is_floating_point_v<T>);

/// Accumulator of element type T: double for floating types, T itself otherwise.
template <class T> struct Accumulator { using type = T; };
template <> struct Accumulator<float> { using type = double; };

/// One row (rows as in sort: [outer, n, inner], row r = (r / inner, r % inner)) scanned with Op,
/// inclusive, from the end when `reverse`.
template <class Op, class T> struct CumulativeRowBody {
  const T* x;
  T* y;
  fx_index n, inner;
  bool reverse;
  FLUXION_HD void operator()(fx_index r) const {
    using A = typename Accumulator<T>::type;
    const fx_index base = (r / inner) * n * inner + r % inner;
    A acc = A(0);
    for (fx_index s = 0; s < n; ++s) {
      const fx_index at = base + (reverse ? n - 1 - s : s) * inner;
      acc = s == 0 ? static_cast<A>(x[at]) : Op::apply(acc, static_cast<A>(x[at]));
      y[at] = static_cast<T>(acc);
    }
  }
};

}  // namespace fluxion::primitives::cumulative_detail
