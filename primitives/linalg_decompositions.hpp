/// Handles and params of the linalg_decompositions family (lu, qr in linalg_decompositions.cpp;
/// expm, expm_frechet in linalg_expm.cpp), shared by every backend's kernel table.
#pragma once
#include <tuple>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::decomp_detail {

/// Params of qr: printed "full_matrices=True".
struct QrParams final : ParamsOf<QrParams> {
  bool full_matrices;
  explicit QrParams(bool full) : full_matrices(full) {}
  auto fields() const { return std::tie(full_matrices); }
  static constexpr const char* names[] = {"full_matrices"};
};

/// lu: a (B..., m, n) -> (lu (B..., m, n), pivots i32 (B..., min(m, n)), permutation i32 (B..., m)); NoParams.
const Primitive& lu_p();
/// qr: a (B..., m, n) -> (q (B..., m, k), r (B..., k, n)), k = min(m, n), or m with full_matrices; QrParams.
const Primitive& qr_p();
/// expm: the matrix exponential of each (B..., n, n) matrix; NoParams.
const Primitive& expm_p();
/// expm_frechet: L(a, e), the Fréchet derivative of expm at a in direction e (both (B..., n, n)),
/// linear in e; NoParams.
const Primitive& expm_frechet_p();

}  // namespace fluxion::primitives::decomp_detail

namespace fluxion::primitives::decomp_detail {

/// Shape-rule check shared by the family: `a` is a floating (B..., m, n) matrix stack, square when
/// `square`; DTypeError / ShapeError naming the primitive otherwise.
void check_matrix(const Primitive& self, const AbstractValue& a, bool square);
/// Batching rule of the family: every operand batched at the front (unmapped ones broadcast), one
/// bind of the batched primitive, every output batched at 0.
void batch_at_front(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                    const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims);
/// Each matrix transposed (the last two axes swapped).
Tensor matrix_transpose(const Tensor& a);
/// a b per matrix, for a (B..., p, q) and b (B..., q, r) with equal batch dims.
Tensor batched_matmul(const Tensor& a, const Tensor& b);
/// x with the entries off the band zeroed: lower keeps j - i <= offset (tril), upper keeps
/// j - i >= offset (triu), per matrix of x (B..., m, n).
Tensor band_part(const Tensor& x, bool lower, int64_t offset);
/// x R⁻¹ per matrix for an upper triangular nonsingular r (B..., n, n): a transposed solve.
Tensor solve_right(const Tensor& x, const Tensor& r);

}  // namespace fluxion::primitives::decomp_detail
