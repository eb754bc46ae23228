/// Handles and params of the linalg_spectral family (eigh, svd; defined in linalg_spectral.cpp),
/// for the backends' kernel tables.
#pragma once
#include <tuple>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::spectral_detail {

/// svd's params: full_matrices gives U (m x m) and Vᵀ (n x n) instead of m x k and k x n
/// (k = min(m, n)); compute_uv = false gives the singular values only (one output).
struct SvdParams : ParamsOf<SvdParams> {
  bool full_matrices = false, compute_uv = true;
  SvdParams(bool full, bool uv) : full_matrices(full), compute_uv(uv) {}
  auto fields() const { return std::tie(full_matrices, compute_uv); }
  static constexpr const char* names[] = {"full_matrices", "compute_uv"};
};

/// (w, v) of the symmetric part (a + aᵀ) / 2 of a (B..., n, n): eigenvalues ascending, eigenvectors
/// as the columns of v; NoParams.
const Primitive& eigh_p();
/// (u, s, vt) of a (B..., m, n), or (s) without compute_uv; SvdParams.
const Primitive& svd_p();

}  // namespace fluxion::primitives::spectral_detail
