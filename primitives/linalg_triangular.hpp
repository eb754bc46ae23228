/// The linalg_triangular family's handles, params and errors (defined in linalg_triangular.cpp and
/// linalg_cholesky.cpp), shared by every backend's kernels.
#pragma once
#include <cstdint>
#include <string>
#include <tuple>

#include "fluxion/primitive.hpp"
#include "primitives/linalg.hpp"

namespace fluxion::primitives::triangular_detail {

/// Params of triangular_solve, printed `triangular_solve[left_side=true lower=true ...]`:
/// left_side solves op(a) x = b, else x op(a) = b; op(a) = aᵀ when transpose_a; only the lower
/// (or upper) triangle of a is read, and its diagonal is taken as ones when unit_diagonal.
struct TriangularSolveParams final : ParamsOf<TriangularSolveParams> {
  bool left_side = true, lower = true, transpose_a = false, unit_diagonal = false;
  TriangularSolveParams(bool left, bool low, bool trans, bool unit)
      : left_side(left), lower(low), transpose_a(trans), unit_diagonal(unit) {}
  auto fields() const { return std::tie(left_side, lower, transpose_a, unit_diagonal); }
  static constexpr const char* names[] = {"left_side", "lower", "transpose_a", "unit_diagonal"};
};

/// Params of cholesky: nan_on_failure fills a matrix that is not positive definite with NaNs (JAX's
/// behaviour) instead of throwing.
struct CholeskyParams final : ParamsOf<CholeskyParams> {
  bool nan_on_failure = false;
  explicit CholeskyParams(bool nan) : nan_on_failure(nan) {}
  auto fields() const { return std::tie(nan_on_failure); }
  static constexpr const char* names[] = {"nan_on_failure"};
};

/// x with op(a) x = b or x op(a) = b (a: B... x n x n, b: B... x n x k or B... x k x n).
const Primitive& triangular_solve_p();
/// Lower L with L Lᵀ = (a + aᵀ) / 2 (a: B... x n x n).
const Primitive& cholesky_p();

/// Throws the zero-diagonal Error of triangular_solve for matrix `index` (row-major over the batch
/// dims) of `a`, whose diagonal element `row` is zero.
[[noreturn]] void fail_zero_diagonal(const AbstractValue& a, int64_t index, int64_t row);
/// Throws cholesky's not-positive-definite Error for matrix `index` of `a`.
[[noreturn]] void fail_not_positive_definite(const AbstractValue& a, int64_t index);

// Helpers of the rules, shared by both primitives.
using linalg_detail::matrix_location;  // "the matrix at batch index 3 of f64[4,2,2]"
/// `like`'s shape (B..., n, n) filled per matrix with 1 on the strict lower (or upper) triangle,
/// `diagonal_value` on the diagonal when with_diagonal, 0 elsewhere; `like`'s dtype and device.
Tensor triangle_mask(const Tensor& like, bool lower, bool with_diagonal, double diagonal_value = 1.0);
/// a x per matrix, for a (B..., n, m) and x (B..., m, k).
Tensor batched_matmul(const Tensor& a, const Tensor& x);
/// a with its last two axes swapped (aᵀ per matrix).
Tensor matrix_transpose(const Tensor& a);

}  // namespace fluxion::primitives::triangular_detail
