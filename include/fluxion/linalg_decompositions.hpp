/// lu, qr, det, slogdet, matrix_power, expm (issue 31), jax.numpy.linalg / jax.lax.linalg style.
/// Every op is batched over leading dims; integer operands become f64 (like fx::solve).
#pragma once
#include <cstdint>
#include <tuple>

#include "fluxion/tensor.hpp"

namespace fluxion::linalg {

/// LU factorization with partial pivoting of each (..., m, n) matrix, like jax.lax.linalg.lu:
/// (lu, pivots, permutation) with a[permutation, :] = L U, L (m x k, unit diagonal, not stored) and
/// U (k x n) packed in lu, k = min(m, n); pivots (i32, (..., k)) are LAPACK's row swaps (0-based:
/// row i was swapped with row pivots[i]); the pivot is the largest magnitude in its column, the
/// first one on ties. A singular matrix does not throw: U gets an exactly zero diagonal entry.
/// Differentiable in lu (JAX's rule) where U is nonsingular; pivots/permutation have no tangent.
std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a);
/// Householder QR of each (..., m, n) matrix, a = q r: reduced (q (..., m, k), r (..., k, n),
/// k = min(m, n)) or complete (q (..., m, m), r (..., m, n)). Signs as LAPACK geqrf (and JAX on
/// CPU): each reflector maps its column to -sign(x0) |x| e0, so r's diagonal may be negative.
/// Derivatives: reduced or square (JAX's rule) and wide m < n (q from the leading m columns);
/// complete with m > n raises NotImplementedError (q's trailing columns are not determined by a).
std::tuple<Tensor, Tensor> qr(const Tensor& a, bool full_matrices = false);
/// Determinant of each (..., n, n) matrix: the product of U's diagonal times the pivots' parity;
/// exactly 0 for a matrix with an exactly zero pivot. Its derivative goes through lu's (needs U
/// nonsingular: at an exactly singular matrix it raises linalg_solve's singular-matrix error).
Tensor det(const Tensor& a);
/// (sign, log|det|) of each (..., n, n) matrix; a singular one gives (0, -inf) like numpy.
std::tuple<Tensor, Tensor> slogdet(const Tensor& a);
/// a^n for square a by repeated squaring; n = 0 gives the identity, n < 0 inverts a first
/// (integer a with n < 0 becomes f64; with n >= 0 it stays integer, like numpy).
Tensor matrix_power(const Tensor& a, int64_t n);
/// Matrix exponential of each (..., n, n) matrix (Padé scaling and squaring, Higham 2005);
/// differentiable to every order through expm_frechet.
Tensor expm(const Tensor& a);

}  // namespace fluxion::linalg

namespace fluxion::lax {
/// The primitives themselves (no promotion: floating operands only).
std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a);
std::tuple<Tensor, Tensor> qr(const Tensor& a, bool full_matrices = false);
Tensor expm(const Tensor& a);
/// The Fréchet derivative of expm at a in direction e: the top-right block of expm([[a, e], [0, a]]).
Tensor expm_frechet(const Tensor& a, const Tensor& e);
}  // namespace fluxion::lax
