/// The sort primitive's handle, params and key order, shared by every backend's kernel (defined in
/// sort.cpp; the CUDA kernel header compiles this with nvcc).
#pragma once
#include <cstdint>
#include <tuple>

#include "backends/cuda/device_code.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion::primitives::sort_detail {

/// sort: every operand (equal shapes, any dtypes) reordered along `axis` by the lexicographic order
/// of the first `num_keys` operands; stable (equal keys keep their order). `descending` reverses the
/// key order, still stable (ties in their original order: top_k's convention).
struct SortParams final : ParamsOf<SortParams> {
  int64_t axis, num_keys;
  bool descending;
  SortParams(int64_t a, int64_t k, bool d) : axis(a), num_keys(k), descending(d) {}
  auto fields() const { return std::tie(axis, num_keys, descending); }
  static constexpr const char* names[] = {"axis", "num_keys", "descending"};
};

/// Inputs: the operands, keys first; outputs: the operands sorted. SortParams.
const Primitive& sort_p();

/// The strict order of sort keys, like XLA's total order for sorting: NaN (of either sign) is
/// larger than everything and equal to every NaN, -0.0 equals 0.0 (so a stable sort keeps their
/// order); integers and bool (false < true) compare as usual. `x != x` is the NaN test every
/// compiler reads (no <cmath> in device code).
template <class T> FLUXION_HD inline bool sort_less(T a, T b) {
  if (b != b) return a == a;  // a < NaN unless a is NaN too
  if (a != a) return false;
  return a < b;
}

/// Rows of a sort along `axis` of a row-major shape seen as [outer, n, inner]: row r is
/// (r / inner, r % inner), and its element j sits at flat offset ((r / inner) * n + j) * inner + r % inner.
struct SortRows {
  int64_t outer, n, inner;
};

}  // namespace fluxion::primitives::sort_detail
