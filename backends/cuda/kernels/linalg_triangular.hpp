/// The linalg_triangular family in the CUDA kernel table: cholesky and triangular_solve with the
/// reference kernels' algorithms (primitives/linalg_cholesky.cpp, primitives/linalg_triangular.cpp)
/// in double (devices have no long double), rounded once to the output dtype. cholesky takes one
/// body index per matrix; triangular_solve one per (matrix, right-hand side). A matrix that fails
/// (not positive definite; a zero on the diagonal) is recorded per matrix; the host reads the
/// records and throws the reference's Error for the first one (cholesky's NaN mode fills it instead).
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "primitives/linalg_triangular.hpp"

namespace fluxion::cuda {
namespace triangular_kernels {

/// Matrix bi's factor of s = (a + aᵀ) / 2 into f (n x n, row-major, zeros above the diagonal);
/// failed[bi] = 1 at the first pivot that is not > 0 (NaN included), else 0.
template <class T> struct CholeskyBody {
  const T* a;
  double* f;
  int64_t* failed;
  fx_index n;
  FLUXION_HD void operator()(fx_index bi) const {
    const T* ai = a + bi * n * n;
    double* F = f + bi * n * n;
    for (fx_index e = 0; e < n * n; ++e) F[e] = 0;
    failed[bi] = 0;
    for (fx_index j = 0; j < n; ++j) {
      double d = s(ai, j, j);
      for (fx_index k = 0; k < j; ++k) d -= F[j * n + k] * F[j * n + k];
      if (!(d > 0)) {
        failed[bi] = 1;
        return;
      }
      F[j * n + j] = ::sqrt(d);
      for (fx_index i = j + 1; i < n; ++i) {
        double acc = s(ai, i, j);
        for (fx_index k = 0; k < j; ++k) acc -= F[i * n + k] * F[j * n + k];
        F[i * n + j] = acc / F[j * n + j];
      }
    }
  }
  FLUXION_HD double s(const T* ai, fx_index i, fx_index j) const {
    return (static_cast<double>(ai[i * n + j]) + static_cast<double>(ai[j * n + i])) / 2;
  }
};

/// Element e of the output: the factor rounded to T, or NaN for a failed matrix.
template <class T> struct CholeskyStoreBody {
  const double* f;
  const int64_t* failed;
  T* l;
  T nan;
  fx_index n;
  FLUXION_HD void operator()(fx_index e) const { l[e] = failed[e / (n * n)] ? nan : static_cast<T>(f[e]); }
};

template <class Exec>
void cholesky_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const Tensor& a = in[0];
  const bool nan = params.as<primitives::triangular_detail::CholeskyParams>().nan_on_failure;
  const int64_t n = a.shape()[a.ndim() - 1];
  const int64_t batch = n == 0 ? 0 : a.size() / (n * n);
  if (batch == 0) return;
  const Device dev = a.device();
  Tensor f = fluxion::empty(AbstractValue{Shape{batch * n * n}, f64}, dev);
  Tensor failed = fluxion::empty(AbstractValue{Shape{batch}, i64}, dev);
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      Exec::for_each(batch, CholeskyBody<T>{a.data<T>(), f.mutable_data<double>(), failed.mutable_data<int64_t>(), n});
      Exec::for_each(batch * n * n,
                     CholeskyStoreBody<T>{f.data<double>(), failed.data<int64_t>(), out[0].mutable_data<T>(),
                                          std::numeric_limits<T>::quiet_NaN(), n});
    }
  });
  if (nan) return;
  std::vector<int64_t> flags(static_cast<size_t>(batch));
  Exec::to_host(flags.data(), failed.data<int64_t>(), batch * static_cast<int64_t>(sizeof(int64_t)), dev);
  for (int64_t bi = 0; bi < batch; ++bi)
    if (flags[static_cast<size_t>(bi)]) primitives::triangular_detail::fail_not_positive_definite(a.aval(), bi);
}

/// zero[bi]: the first zero on matrix bi's diagonal, or -1.
template <class T> struct ZeroDiagonalBody {
  const T* a;
  int64_t* zero;
  fx_index n;
  FLUXION_HD void operator()(fx_index bi) const {
    zero[bi] = -1;
    for (fx_index d = 0; d < n; ++d)
      if (a[(bi * n + d) * n + d] == T(0)) {
        zero[bi] = d;
        return;
      }
  }
};

/// Right-hand side j of matrix bi (index bi * k + j) by substitution on M = op(a) (left side) or
/// op(a)ᵀ (right side), the reference's order of operations; y is that pair's n doubles of scratch.
template <class T> struct TriangularSolveBody {
  const T* a;
  const T* b;
  T* x;
  double* y;
  fx_index n, k;
  bool left_side, transposed, m_lower, unit_diagonal;
  FLUXION_HD void operator()(fx_index e) const {
    const fx_index bi = e / k, j = e % k;
    const T* ai = a + bi * n * n;
    double* yj = y + e * n;
    for (fx_index s = 0; s < n; ++s) {
      const fx_index r = m_lower ? s : n - 1 - s;
      double acc = static_cast<double>(b[at(bi, r, j)]);
      for (fx_index s2 = 0; s2 < s; ++s2) {
        const fx_index q = m_lower ? s2 : n - 1 - s2;
        acc -= m(ai, r, q) * yj[q];
      }
      yj[r] = unit_diagonal ? acc : acc / m(ai, r, r);
    }
    for (fx_index r = 0; r < n; ++r) x[at(bi, r, j)] = static_cast<T>(yj[r]);
  }
  FLUXION_HD double m(const T* ai, fx_index i, fx_index q) const {
    return static_cast<double>(transposed ? ai[q * n + i] : ai[i * n + q]);
  }
  FLUXION_HD fx_index at(fx_index bi, fx_index r, fx_index j) const {
    return bi * n * k + (left_side ? r * k + j : j * n + r);
  }
};

template <class Exec>
void triangular_solve_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<primitives::triangular_detail::TriangularSolveParams>();
  const Tensor &a = in[0], &b = in[1];
  const int64_t rank = a.ndim(), n = a.shape()[rank - 1];
  const int64_t batch = n == 0 ? 0 : a.size() / (n * n);
  const int64_t k = b.shape()[p.left_side ? rank - 1 : rank - 2];
  if (batch == 0) return;  // no matrices, or 0 x 0 ones: nothing to check or write
  const Device dev = a.device();
  Tensor zero = fluxion::empty(AbstractValue{Shape{batch}, i64}, dev);
  Tensor y = fluxion::empty(AbstractValue{Shape{batch * k * n}, f64}, dev);
  // As in the reference: M is a transposed exactly when transpose_a == left_side.
  const bool transposed = p.transpose_a == p.left_side, m_lower = p.lower != transposed;
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if (!p.unit_diagonal) Exec::for_each(batch, ZeroDiagonalBody<T>{a.data<T>(), zero.mutable_data<int64_t>(), n});
      Exec::for_each(batch * k, TriangularSolveBody<T>{a.data<T>(), b.data<T>(), out[0].mutable_data<T>(),
                                                       y.mutable_data<double>(), n, k, p.left_side, transposed, m_lower,
                                                       p.unit_diagonal});
    }
  });
  if (p.unit_diagonal) return;
  std::vector<int64_t> rows(static_cast<size_t>(batch));
  Exec::to_host(rows.data(), zero.data<int64_t>(), batch * static_cast<int64_t>(sizeof(int64_t)), dev);
  for (int64_t bi = 0; bi < batch; ++bi)
    if (rows[static_cast<size_t>(bi)] >= 0)
      primitives::triangular_detail::fail_zero_diagonal(a.aval(), bi, rows[static_cast<size_t>(bi)]);
}

}  // namespace triangular_kernels

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_linalg_triangular_kernels() {
  namespace t = primitives::triangular_detail;
  runtime::set_kernel(t::cholesky_p(), Exec::backend, &triangular_kernels::cholesky_kernel<Exec>);
  runtime::set_kernel(t::triangular_solve_p(), Exec::backend, &triangular_kernels::triangular_solve_kernel<Exec>);
}

}  // namespace fluxion::cuda
