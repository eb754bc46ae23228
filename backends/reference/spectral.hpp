/// Reference eigh and svd, the executable spec: cyclic Jacobi rotations in long double (two-sided
/// on the symmetric part for eigh, one-sided (Hestenes) for svd), sorted, then the shared
/// conventions (primitives/linalg_spectral_conventions.hpp) and one rounding to T. Slow (O(n³) per
/// sweep, a handful of sweeps) but obviously right: every rotation zeroes one off-diagonal entry or
/// one inner product, and the loops stop only when none is left above long double's precision.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "primitives/linalg_spectral_conventions.hpp"

namespace fluxion::reference::spectral {

using L = long double;
namespace conv = primitives::spectral_conventions;

/// Sweeps after which Jacobi gives up (it converges quadratically: ~10 sweeps at n = 100).
inline constexpr int kMaxSweeps = 100;

/// The rotation (c, s) = (cos θ, sin θ) that zeroes the off-diagonal of [[alpha, gamma], [gamma,
/// beta]] under [[c, s], [-s, c]]ᵀ · · [[c, s], [-s, c]]: t = tan θ is the smaller root of
/// t² + 2ζt - 1 = 0 with ζ = (beta - alpha) / (2 gamma).
inline void jacobi_rotation(L alpha, L beta, L gamma, L& c, L& s) {
  const L zeta = (beta - alpha) / (2 * gamma);
  const L t = (zeta >= 0 ? 1 : -1) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
  c = 1 / std::sqrt(1 + t * t);
  s = c * t;
}

/// Columns p and q of the contiguous-by-column vectors x (length len) rotated: (x_p, x_q) <-
/// (c x_p - s x_q, s x_p + c x_q).
inline void rotate(L* xp, L* xq, int64_t len, L c, L s) {
  for (int64_t e = 0; e < len; ++e) {
    const L a = xp[e], b = xq[e];
    xp[e] = c * a - s * b;
    xq[e] = s * a + c * b;
  }
}

/// Eigen-decomposition of the symmetric part of the row-major n x n matrix a; false if Jacobi did
/// not converge. A matrix with non-finite entries gives NaN outputs.
template <class T> bool eigh_one(const T* a, int64_t n, T* w_out, T* v_out) {
  if (!conv::all_finite(a, n, n)) {
    conv::fill_nan(w_out, n);
    conv::fill_nan(v_out, n * n);
    return true;
  }
  // m holds the symmetric matrix column by column (m[j * n + i] = entry (i, j)), vec its eigenvectors.
  std::vector<L> m(static_cast<size_t>(n * n)), vec(static_cast<size_t>(n * n), L(0));
  L norm = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const L x = (static_cast<L>(a[i * n + j]) + static_cast<L>(a[j * n + i])) / 2;
      m[static_cast<size_t>(j * n + i)] = x;
      norm += x * x;
    }
  for (int64_t i = 0; i < n; ++i) vec[static_cast<size_t>(i * n + i)] = 1;
  auto M = [&](int64_t i, int64_t j) -> L& { return m[static_cast<size_t>(j * n + i)]; };
  const L negligible = std::numeric_limits<L>::epsilon() * std::sqrt(norm) / 4;
  bool converged = false;
  for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
    converged = true;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (std::fabs(M(p, q)) <= negligible) continue;
        converged = false;
        L c, s;
        jacobi_rotation(M(p, p), M(q, q), M(p, q), c, s);
        rotate(&M(0, p), &M(0, q), n, c, s);  // columns: m J
        for (int64_t j = 0; j < n; ++j) {     // rows: Jᵀ (m J)
          const L x = M(p, j), y = M(q, j);
          M(p, j) = c * x - s * y;
          M(q, j) = s * x + c * y;
        }
        M(p, q) = M(q, p) = 0;
        rotate(&vec[static_cast<size_t>(p * n)], &vec[static_cast<size_t>(q * n)], n, c, s);
      }
  }
  if (!converged) return false;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return M(x, x) < M(y, y); });
  std::vector<L> w(static_cast<size_t>(n)), sorted(static_cast<size_t>(n * n));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t from = order[static_cast<size_t>(j)];
    w[static_cast<size_t>(j)] = M(from, from);
    std::copy_n(vec.begin() + from * n, n, sorted.begin() + j * n);
  }
  conv::write_eigh(w, sorted, n, w_out, v_out);
  return true;
}

/// Singular value decomposition of the row-major m x n matrix a into `out`; false if Jacobi did not
/// converge. One-sided Jacobi orthogonalizes the columns of the taller of a and aᵀ (g = x·V, so the
/// final column norms are the singular values, the normalized columns one side's vectors and V the
/// other's).
template <class T> bool svd_one(const T* a, int64_t m, int64_t n, const conv::SvdOut<T>& out) {
  const int64_t k = std::min(m, n);
  if (!conv::all_finite(a, m, n)) {
    conv::fill_nan(out.s, k);
    if (out.u) conv::fill_nan(out.u, m * out.u_cols), conv::fill_nan(out.vt, out.vt_rows * n);
    return true;
  }
  const bool tall = m >= n;
  const int64_t rows = tall ? m : n, cols = k;  // g: rows x cols, column j contiguous
  std::vector<L> g(static_cast<size_t>(rows * cols)), rot(static_cast<size_t>(cols * cols), L(0));
  L norm = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const L x = static_cast<L>(a[i * n + j]);
      g[static_cast<size_t>(tall ? j * rows + i : i * rows + j)] = x;
      norm += x * x;
    }
  for (int64_t j = 0; j < cols; ++j) rot[static_cast<size_t>(j * cols + j)] = 1;
  auto col = [&](int64_t j) { return g.data() + j * rows; };
  auto dot = [&](const L* x, const L* y) {
    L acc = 0;
    for (int64_t e = 0; e < rows; ++e) acc += x[e] * y[e];
    return acc;
  };
  const L eps = std::numeric_limits<L>::epsilon();
  bool converged = false;
  for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
    converged = true;
    for (int64_t p = 0; p < cols; ++p)
      for (int64_t q = p + 1; q < cols; ++q) {
        const L alpha = dot(col(p), col(p)), beta = dot(col(q), col(q)), gamma = dot(col(p), col(q));
        // Columns orthogonal to working precision (relative to their lengths and to the matrix).
        if (std::fabs(gamma) <= eps * std::sqrt(alpha * beta) || std::fabs(gamma) <= eps * eps * norm) continue;
        converged = false;
        L c, s;
        jacobi_rotation(alpha, beta, gamma, c, s);
        rotate(col(p), col(q), rows, c, s);
        rotate(&rot[static_cast<size_t>(p * cols)], &rot[static_cast<size_t>(q * cols)], cols, c, s);
      }
  }
  if (!converged) return false;
  std::vector<L> sv(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) sv[static_cast<size_t>(j)] = std::sqrt(dot(col(j), col(j)));
  std::vector<int64_t> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return sv[static_cast<size_t>(x)] > sv[static_cast<size_t>(y)]; });
  std::vector<L> s(static_cast<size_t>(k)), left(static_cast<size_t>(k * rows)), right(static_cast<size_t>(k * cols));
  for (int64_t j = 0; j < k; ++j) {
    const int64_t from = order[static_cast<size_t>(j)];
    const L sj = sv[static_cast<size_t>(from)];
    s[static_cast<size_t>(j)] = sj;
    for (int64_t e = 0; e < rows; ++e) left[static_cast<size_t>(j * rows + e)] = sj > 0 ? col(from)[e] / sj : L(0);
    std::copy_n(rot.begin() + from * cols, cols, right.begin() + j * cols);
  }
  if (tall) conv::write_svd(s, left, right, m, n, out);
  else conv::write_svd(s, right, left, m, n, out);
  return true;
}

}  // namespace fluxion::reference::spectral
