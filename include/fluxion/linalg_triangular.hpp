/// fx::linalg::cholesky, triangular_solve and cho_solve: factor a symmetric positive definite matrix
/// and solve with its triangular factor, batched over leading dims, f32 and f64, differentiable to
/// any order (primitives/linalg_triangular.cpp, primitives/linalg_cholesky.cpp).
#pragma once
#include "fluxion/tensor.hpp"

namespace fluxion::linalg {

/// What cholesky does with a matrix that is not positive definite.
enum class OnFailure {
  error,  // throw fluxion::Error naming the batch index of the first such matrix (the default)
  nan,    // fill that matrix's factor with NaNs and go on, like jax.numpy.linalg.cholesky
};

/// The lower Cholesky factor L of each (..., n, n) matrix: L Lᵀ = (a + aᵀ) / 2, zeros above the
/// diagonal. Like jax.numpy.linalg.cholesky the input is symmetrized first, so the derivative is
/// defined for any perturbation (the gradient of a symmetric input comes back symmetric). f32 or f64.
Tensor cholesky(const Tensor& a, OnFailure on_failure = OnFailure::error);

/// JAX's lax.linalg.triangular_solve: x with op(a) x = b when left_side (b: (..., n, k)), else
/// x op(a) = b (b: (..., k, n)); op(a) = aᵀ when transpose_a. Only the lower (or upper) triangle
/// of a is read, and its diagonal is taken as ones when unit_diagonal. a and b have equal batch
/// dims and one floating dtype. A zero on the diagonal throws fluxion::Error naming the batch index.
Tensor triangular_solve(const Tensor& a, const Tensor& b, bool left_side = true, bool lower = true,
                        bool transpose_a = false, bool unit_diagonal = false);

/// x with (l lᵀ) x = b for the lower factor l = cholesky(a) (..., n, n) and b (..., n, k) or a
/// (stack of) vector(s) (..., n): two triangular solves, like jax.scipy.linalg.cho_solve((l, True), b).
Tensor cho_solve(const Tensor& l, const Tensor& b);

}  // namespace fluxion::linalg
