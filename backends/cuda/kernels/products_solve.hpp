/// linalg_solve in the CUDA kernel table: the reference's algorithm (primitives/linalg.cpp),
/// Gaussian elimination with partial pivoting (the largest magnitude in the column, the first one
/// on ties) and back substitution, in double (devices have no long double), rounded once to the
/// output dtype. Small systems take one body index per matrix; larger ones run column by column
/// with the eliminations of a column in parallel.
/// A matrix that meets an exactly zero pivot records its column; the host reads the records and
/// throws the reference's singular-matrix Error for the first such matrix. Under nvcc, CudaExec
/// solves with cuBLAS's batched LU or cuSOLVER instead (products_cusolver.cuh).
#pragma once
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "primitives/linalg.hpp"

#if defined(__CUDACC__)
#include "backends/cuda/kernels/products_cusolver.cuh"
#endif

namespace fluxion::cuda {

namespace product_kernels {

/// One system of the batch in the double scratch: M (n x n) and R (n x k), row-major. Each step is
/// the reference's arithmetic, element for element, so the one-thread and the stepwise paths give
/// the same bits.
struct SolveScratch {
  double* m;
  double* r;
  int64_t* singular;  // per matrix: the column of the first zero pivot, or -1
  fx_index n, k;

  FLUXION_HD double& M(fx_index bi, fx_index i, fx_index j) const { return m[(bi * n + i) * n + j]; }
  FLUXION_HD double& R(fx_index bi, fx_index i, fx_index j) const { return r[(bi * n + i) * k + j]; }

  /// Column c's pivot: the largest magnitude at or below the diagonal (the first on ties) swapped
  /// into row c. False, with the column recorded, when it is zero.
  FLUXION_HD bool pivot(fx_index bi, fx_index c) const {
    fx_index p = c;
    for (fx_index i = c + 1; i < n; ++i)
      if (magnitude(M(bi, i, c)) > magnitude(M(bi, p, c))) p = i;
    if (M(bi, p, c) == 0) {
      singular[bi] = c;
      return false;
    }
    if (p != c) {
      for (fx_index j = 0; j < n; ++j) swap(M(bi, p, j), M(bi, c, j));
      for (fx_index j = 0; j < k; ++j) swap(R(bi, p, j), R(bi, c, j));
    }
    return true;
  }
  /// Row i > c minus its multiple of row c: element j of M (j > c), or of R when `in_r`. Reads
  /// column c and row c, which this step never writes.
  FLUXION_HD void eliminate(fx_index bi, fx_index c, fx_index i, fx_index j, bool in_r) const {
    const double f = M(bi, i, c) / M(bi, c, c);
    if (in_r) R(bi, i, j) -= f * R(bi, c, j);
    else M(bi, i, j) -= f * M(bi, c, j);
  }
  /// Column j of the solution by back substitution, in place in R (rows below i already solved).
  template <class T> FLUXION_HD void back_substitute(fx_index bi, fx_index j, T* x) const {
    for (fx_index i = n - 1; i >= 0; --i) {
      double acc = R(bi, i, j);
      for (fx_index q = i + 1; q < n; ++q) acc -= M(bi, i, q) * R(bi, q, j);
      R(bi, i, j) = acc / M(bi, i, i);
      x[(bi * n + i) * k + j] = static_cast<T>(R(bi, i, j));
    }
  }

  FLUXION_HD static double magnitude(double v) { return v < 0 ? -v : v; }
  FLUXION_HD static void swap(double& u, double& v) {
    const double t = u;
    u = v;
    v = t;
  }
};

/// Loads matrix and right-hand sides into the scratch (doubles), and marks every matrix regular.
template <class T> struct SolveLoadBody {
  const T* a;
  const T* b;
  SolveScratch s;
  FLUXION_HD void operator()(fx_index e) const {  // e over batch * n * (n + k)
    const fx_index row = e / (s.n + s.k), col = e % (s.n + s.k);
    if (col < s.n) s.m[row * s.n + col] = static_cast<double>(a[row * s.n + col]);
    else s.r[row * s.k + col - s.n] = static_cast<double>(b[row * s.k + col - s.n]);
    if (e % (s.n * (s.n + s.k)) == 0) s.singular[e / (s.n * (s.n + s.k))] = -1;
  }
};

/// Small systems: one body index solves matrix bi from start to end.
template <class T> struct SolveWholeBody {
  SolveScratch s;
  T* x;
  FLUXION_HD void operator()(fx_index bi) const {
    for (fx_index c = 0; c < s.n; ++c) {
      if (!s.pivot(bi, c)) return;
      for (fx_index i = c + 1; i < s.n; ++i) {
        for (fx_index j = c + 1; j < s.n; ++j) s.eliminate(bi, c, i, j, false);
        for (fx_index j = 0; j < s.k; ++j) s.eliminate(bi, c, i, j, true);
      }
    }
    for (fx_index j = 0; j < s.k; ++j) s.back_substitute(bi, j, x);
  }
};

/// Larger systems, column by column: the pivot of column c per matrix, then every element of the
/// rows below in parallel, then back substitution per (matrix, column of R).
struct SolvePivotBody {
  SolveScratch s;
  fx_index c;
  FLUXION_HD void operator()(fx_index bi) const {
    if (s.singular[bi] < 0) s.pivot(bi, c);
  }
};
struct SolveEliminateBody {
  SolveScratch s;
  fx_index c;
  FLUXION_HD void operator()(fx_index e) const {  // e over batch * (n - c - 1) * (n - c - 1 + k)
    const fx_index rows = s.n - c - 1, cols = rows + s.k;
    const fx_index bi = e / (rows * cols), i = c + 1 + (e / cols) % rows, col = e % cols;
    if (s.singular[bi] >= 0) return;
    if (col < rows) s.eliminate(bi, c, i, c + 1 + col, false);
    else s.eliminate(bi, c, i, col - rows, true);
  }
};
template <class T> struct SolveBackBody {
  SolveScratch s;
  T* x;
  FLUXION_HD void operator()(fx_index e) const {  // e over batch * k
    if (s.singular[e / s.k] < 0) s.back_substitute(e / s.k, e % s.k, x);
  }
};

/// Systems from this size on run column by column (2n launches of parallel steps); smaller ones
/// one thread per matrix.
inline constexpr fx_index kStepwiseSolve = 48;

template <class Exec> void solve_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const Tensor &a = in[0], &b = in[1];
  const int64_t rank = a.ndim(), n = a.shape()[rank - 1], k = b.shape()[rank - 1];
  const int64_t batch = n == 0 ? 0 : a.size() / (n * n);
  if (batch == 0) return;  // no matrices, or 0 x 0 ones: nothing to solve or write
#if defined(__CUDACC__)
  // The vendor LU (partial pivoting too, in f64; its pivot order and rounding are the library's).
  if constexpr (Exec::backend == Backend::cuda) {
    dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) vendor_solve<Exec, T>(a, b, out[0], batch, n, k);
    });
    return;
  }
#endif
  const Device dev = a.device();
  Tensor m = fluxion::empty(AbstractValue{Shape{batch * n * n}, f64}, dev);
  Tensor r = fluxion::empty(AbstractValue{Shape{batch * n * k}, f64}, dev);
  Tensor singular = fluxion::empty(AbstractValue{Shape{batch}, i64}, dev);
  const SolveScratch s{m.mutable_data<double>(), r.mutable_data<double>(), singular.mutable_data<int64_t>(), n, k};
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* x = out[0].mutable_data<T>();
      Exec::for_each(batch * n * (n + k), SolveLoadBody<T>{a.data<T>(), b.data<T>(), s});
      if (n < kStepwiseSolve) {
        Exec::for_each(batch, SolveWholeBody<T>{s, x});
      } else {
        for (fx_index c = 0; c < n; ++c) {
          Exec::for_each(batch, SolvePivotBody{s, c});
          Exec::for_each(batch * (n - c - 1) * (n - c - 1 + k), SolveEliminateBody{s, c});
        }
        Exec::for_each(batch * k, SolveBackBody<T>{s, x});
      }
    }
  });
  std::vector<int64_t> column(static_cast<size_t>(batch));
  Exec::to_host(column.data(), singular.data<int64_t>(), batch * static_cast<int64_t>(sizeof(int64_t)), dev);
  for (int64_t bi = 0; bi < batch; ++bi)
    if (column[static_cast<size_t>(bi)] >= 0)
      primitives::linalg_detail::fail_singular(a.aval(), bi, column[static_cast<size_t>(bi)]);
}

}  // namespace product_kernels
}  // namespace fluxion::cuda
