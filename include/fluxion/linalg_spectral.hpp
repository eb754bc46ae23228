/// Symmetric eigendecomposition and singular value decomposition (fx::linalg::eigh, svd, svdvals),
/// batched over leading dims, f32 and f64 (other dtypes convert to f64), differentiable to any order.
///
/// Conventions (the same on every backend): eigenvalues ascending, singular values descending; each
/// eigenvector and each left singular vector u_j has its leading component (the first whose
/// magnitude is within 1e-5 of the largest) positive, and v_j flips with u_j; vectors that the
/// matrix does not determine (full_matrices' extra columns, vectors of zero singular values) come
/// from a pivoted Gram-Schmidt completion over the unit vectors. A matrix with NaN or infinite
/// entries gives NaN outputs.
///
/// Derivatives follow JAX: they need distinct eigenvalues (eigh) and distinct nonzero singular
/// values (svd's vectors); at a degenerate point the vector tangents are inf/NaN, as in JAX, while
/// the eigenvalue and singular value tangents stay finite. svd with full_matrices (JAX has no rule)
/// differentiates the extra columns U₂ of u as U̇₂ = -U₁ (ȧ V S⁻¹)ᵀ U₂ (no rotation inside their
/// span; likewise vt's extra rows): their span, and any function of it, is differentiated exactly.
#pragma once
#include <tuple>
#include <utility>

#include "fluxion/tensor.hpp"

namespace fluxion::linalg {

/// (w, v) with a_sym v = v diag(w) for the symmetric part a_sym = (a + aᵀ) / 2 of a (..., n, n), like
/// jnp.linalg.eigh's default symmetrize_input: w (..., n) ascending, eigenvectors the columns of v.
std::pair<Tensor, Tensor> eigh(const Tensor& a);

/// (u, s, vt) with a = u diag(s) vt for a (..., m, n), k = min(m, n): s (..., k) descending; u (..., m,
/// k) and vt (..., k, n), or (..., m, m) and (..., n, n) with full_matrices. Without compute_uv only s
/// is computed and u, vt are undefined Tensors.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices = false, bool compute_uv = true);

/// The singular values of a (..., m, n), descending: svd's s without the vectors.
Tensor svdvals(const Tensor& a);

}  // namespace fluxion::linalg
