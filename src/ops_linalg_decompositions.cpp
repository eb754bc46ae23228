// The fx::linalg ops of the decompositions family: lu, qr and expm bind their primitives; det,
// slogdet and matrix_power are compositions (over lu, and over matmul / inv), so their derivatives
// and batching come from their parts. Integer operands become f64, like fx::solve.
#include "fluxion/lax.hpp"
#include "fluxion/linalg_decompositions.hpp"
#include "fluxion/ops.hpp"

namespace fluxion {
namespace ops_decomp_detail {

Tensor floating(const Tensor& a) { return is_floating(a.dtype()) ? a : astype(a, f64); }

/// ShapeError unless `a` is a square matrix or a stack of them (..., n, n).
void check_square(const char* op, const Tensor& a) {
  const int64_t r = a.ndim();
  if (r < 2 || a.shape()[r - 1] != a.shape()[r - 2])
    detail::fail<ShapeError>(op, "needs a square matrix or a stack of them (..., n, n), got ", a.aval(),
                             ". Only square matrices have one.");
}

/// U's diagonal of each packed LU factorization (..., n, n), as (..., n).
Tensor lu_diagonal(const Tensor& lu) {
  const int64_t r = lu.ndim(), n = lu.shape()[r - 1];
  Tensor identity = lax::broadcast_in_dim(astype(eye(n, lu.dtype()), lu.dtype()), lu.shape(), {r - 2, r - 1});
  return lax::reduce_sum(lax::mul(lu, identity), {r - 1});
}

/// (-1)^(number of actual row swaps) of each pivot vector (..., n), in `dtype`.
Tensor pivot_parity(const Tensor& pivots, DType dtype) {
  const int64_t r = pivots.ndim();
  Tensor swapped = lax::ne(pivots, lax::iota(i32, pivots.shape(), r - 1));
  Tensor factors =
      lax::select(swapped, lax::broadcast_in_dim(detail::full_float("det", {}, -1.0, dtype), pivots.shape(), {}),
                  lax::broadcast_in_dim(detail::full_float("det", {}, 1.0, dtype), pivots.shape(), {}));
  return lax::reduce_prod(factors, {r - 1});
}

}  // namespace ops_decomp_detail

namespace linalg {

std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a) { return lax::lu(ops_decomp_detail::floating(a)); }

std::tuple<Tensor, Tensor> qr(const Tensor& a, bool full_matrices) {
  return lax::qr(ops_decomp_detail::floating(a), full_matrices);
}

Tensor det(const Tensor& a0) {
  ops_decomp_detail::check_square("det", a0);
  auto [lu, pivots, perm] = lax::lu(ops_decomp_detail::floating(a0));
  const int64_t r = lu.ndim();
  Tensor diagonal_product = lax::reduce_prod(ops_decomp_detail::lu_diagonal(lu), {r - 2});
  return lax::mul(ops_decomp_detail::pivot_parity(pivots, lu.dtype()), diagonal_product);
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& a0) {
  ops_decomp_detail::check_square("slogdet", a0);
  auto [lu, pivots, perm] = lax::lu(ops_decomp_detail::floating(a0));
  const int64_t r = lu.ndim();
  Tensor diagonal = ops_decomp_detail::lu_diagonal(lu);
  Tensor sign =
      lax::mul(ops_decomp_detail::pivot_parity(pivots, lu.dtype()), lax::reduce_prod(lax::sign(diagonal), {r - 2}));
  return {sign, lax::reduce_sum(lax::log(lax::abs(diagonal)), {r - 2})};
}

Tensor matrix_power(const Tensor& a0, int64_t n) {
  ops_decomp_detail::check_square("matrix_power", a0);
  Tensor base = n < 0 ? inv(a0) : a0;
  if (n == 0) return broadcast_to(eye(a0.shape()[a0.ndim() - 1], a0.dtype()), a0.shape());
  // Repeated squaring: base^(2^i) joins the product for each set bit i of |n|.
  uint64_t bits = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  Tensor result;
  while (true) {
    if (bits & 1) result = result.defined() ? matmul(result, base) : base;
    bits >>= 1;
    if (!bits) return result;
    base = matmul(base, base);
  }
}

Tensor expm(const Tensor& a0) {
  ops_decomp_detail::check_square("expm", a0);
  return lax::expm(ops_decomp_detail::floating(a0));
}

}  // namespace linalg
}  // namespace fluxion
