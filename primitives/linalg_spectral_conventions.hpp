/// The conventions that make eigh's and svd's outputs unique, shared by the CPU and reference
/// kernels so both return the same vectors (tests/test_primitives compares them elementwise):
///
/// - Order: eigenvalues ascending, singular values descending (ties keep the solver's order).
/// - Sign: each eigenvector, and each left singular vector u_j with s_j > 0, is multiplied by ±1 so
///   that its "leading" component is positive: the first component whose magnitude is within a
///   factor (1 - 1e-5) of the largest one. The tolerance makes exact ties (e.g. (1, -1)/√2) pick the
///   first component in every kernel despite rounding. The right vector v_j flips with u_j.
/// - Completion: where a basis is not determined by the matrix (the extra columns of U or rows of
///   Vᵀ with full_matrices, and the vectors of exactly zero singular values), it is built from the
///   determined vectors by pivoted Gram-Schmidt over the unit vectors e_i: repeatedly the e_i whose
///   projection onto the orthogonal complement of the basis so far is longest (the first within
///   a factor (1 - 1e-5) of the longest) is projected, normalized and appended. Its own component i
///   is then positive.
/// - Non-finite input: a matrix with a NaN or infinite entry gives NaN in all its outputs.
///
/// Vectors are kept contiguous (vector j at [j * len, (j + 1) * len)) in the computation type C
/// (double for the CPU kernels, long double for the reference).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace fluxion::primitives::spectral_conventions {

/// Relative tolerance that turns near-ties of magnitudes into exact ones (see the header comment).
inline constexpr double kTieTolerance = 1e-5;

/// Index of the first entry of x[0..n) whose magnitude is within the tie tolerance of the largest.
template <class C> int64_t leading_index(const C* x, int64_t n) {
  C largest = 0;
  for (int64_t i = 0; i < n; ++i) largest = std::fmax(largest, std::fabs(x[i]));
  const C bound = largest * C(1 - kTieTolerance);
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) >= bound) return i;
  return 0;
}

/// Makes x's leading component positive; true when x was negated.
template <class C> bool normalize_sign(C* x, int64_t n) {
  if (n == 0 || x[leading_index(x, n)] >= 0) return false;
  for (int64_t i = 0; i < n; ++i) x[i] = -x[i];
  return true;
}

/// vectors holds `have` orthonormal vectors of length `len`, contiguously; appends vectors until it
/// holds `want` (<= len), by pivoted Gram-Schmidt over the unit vectors (see the header comment).
template <class C> void complete_basis(std::vector<C>& vectors, int64_t len, int64_t have, int64_t want) {
  if (have >= want) return;
  vectors.resize(static_cast<size_t>(want * len));
  // residual[i]: e_i minus its projection onto the basis so far (column i of I - Q Qᵀ).
  std::vector<C> residual(static_cast<size_t>(len * len), C(0));
  auto R = [&](int64_t i) { return residual.data() + i * len; };
  auto Q = [&](int64_t j) { return vectors.data() + j * len; };
  auto project_out = [&](C* x, const C* q) {
    C dot = 0;
    for (int64_t e = 0; e < len; ++e) dot += q[e] * x[e];
    for (int64_t e = 0; e < len; ++e) x[e] -= dot * q[e];
  };
  for (int64_t i = 0; i < len; ++i) {
    R(i)[i] = 1;
    for (int64_t j = 0; j < have; ++j) project_out(R(i), Q(j));
  }
  std::vector<bool> used(static_cast<size_t>(len), false);
  std::vector<C> norms(static_cast<size_t>(len));
  for (int64_t j = have; j < want; ++j) {
    for (int64_t i = 0; i < len; ++i) {
      C sq = 0;
      for (int64_t e = 0; e < len; ++e) sq += R(i)[e] * R(i)[e];
      norms[static_cast<size_t>(i)] = used[static_cast<size_t>(i)] ? C(0) : std::sqrt(sq);
    }
    const int64_t p = leading_index(norms.data(), len);
    used[static_cast<size_t>(p)] = true;
    C* q = Q(j);
    for (int64_t e = 0; e < len; ++e) q[e] = R(p)[e];
    // Twice against the whole basis: a short residual has lost digits to cancellation.
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t k = 0; k < j; ++k) project_out(q, Q(k));
    C sq = 0;
    for (int64_t e = 0; e < len; ++e) sq += q[e] * q[e];
    const C inv = 1 / std::sqrt(sq);
    for (int64_t e = 0; e < len; ++e) q[e] *= inv;
    for (int64_t i = 0; i < len; ++i)
      if (!used[static_cast<size_t>(i)]) project_out(R(i), q);
  }
}

/// True when the rows x cols contiguous entries at x are all finite.
template <class T> bool all_finite(const T* x, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

/// Writes one eigh result: `w` (ascending) and `vectors` (eigenvector j contiguous), after the sign
/// convention, as T into w_out[n] and the row-major v_out[n x n] (eigenvectors as columns).
template <class C, class T>
void write_eigh(const std::vector<C>& w, std::vector<C>& vectors, int64_t n, T* w_out, T* v_out) {
  for (int64_t j = 0; j < n; ++j) {
    C* x = vectors.data() + j * n;
    normalize_sign(x, n);
    w_out[j] = static_cast<T>(w[static_cast<size_t>(j)]);
    for (int64_t i = 0; i < n; ++i) v_out[i * n + j] = static_cast<T>(x[i]);
  }
}

/// Where one svd result goes: s_out[k]; when computing vectors, u_out (m x u_cols, row-major) and
/// vt_out (vt_rows x n, row-major), with u_cols = vt_rows = k reduced, or m and n full.
template <class T> struct SvdOut {
  T* s;
  T* u;
  T* vt;
  int64_t u_cols, vt_rows;
};

/// Writes one svd result of an m x n matrix from `s` (descending, k = min(m, n) values) and, when
/// `out.u` is set, the left and right singular vectors (u_j of length m and v_j of length n,
/// contiguous): signs normalized, vectors of zero singular values and the full_matrices extras
/// rebuilt by complete_basis.
template <class C, class T> void write_svd(const std::vector<C>& s, std::vector<C>& u, std::vector<C>& v, int64_t m,
                                           int64_t n, const SvdOut<T>& out) {
  const int64_t k = static_cast<int64_t>(s.size());
  for (int64_t j = 0; j < k; ++j) out.s[j] = static_cast<T>(s[static_cast<size_t>(j)]);
  if (!out.u) return;
  int64_t nonzero = 0;
  while (nonzero < k && s[static_cast<size_t>(nonzero)] > 0) ++nonzero;
  for (int64_t j = 0; j < nonzero; ++j)
    if (normalize_sign(u.data() + j * m, m))
      for (int64_t e = 0; e < n; ++e) v[static_cast<size_t>(j * n + e)] = -v[static_cast<size_t>(j * n + e)];
  complete_basis(u, m, nonzero, out.u_cols);
  complete_basis(v, n, nonzero, out.vt_rows);
  for (int64_t j = 0; j < out.u_cols; ++j)
    for (int64_t i = 0; i < m; ++i) out.u[i * out.u_cols + j] = static_cast<T>(u[static_cast<size_t>(j * m + i)]);
  for (int64_t j = 0; j < out.vt_rows; ++j)
    for (int64_t e = 0; e < n; ++e) out.vt[j * n + e] = static_cast<T>(v[static_cast<size_t>(j * n + e)]);
}

/// Fills `count` entries of x with NaN (the outputs of a matrix with non-finite entries).
template <class T> void fill_nan(T* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] = std::numeric_limits<T>::quiet_NaN();
}

}  // namespace fluxion::primitives::spectral_conventions
