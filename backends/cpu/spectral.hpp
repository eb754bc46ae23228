/// CPU eigh and svd: LAPACK through OpenBLAS where it is linked and its kernels suit the CPU
/// (blas_usable), otherwise Eigen's solvers; then the shared conventions
/// (primitives/linalg_spectral_conventions.hpp), applied in double. Measured on the development
/// machine (AMD EPYC, one thread, f64, the bare library calls): eigh n = 64: Eigen's
/// SelfAdjointEigenSolver 200 µs, LAPACK dsyevd 262 µs; n = 128: 1137 vs 1081 µs; n = 256: 6827 vs
/// 5236 µs, so dsyevd from n = 128 on. svd n = 64: Eigen's BDCSVD 1256 µs, dgesdd 420 µs; n = 256:
/// 24.6 ms vs 10.2 ms, so dgesdd.
#pragma once
#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "backends/cpu/gemm_choice.hpp"
#include "primitives/linalg_spectral_conventions.hpp"

#if FLUXION_WITH_BLAS
// LAPACK's column-major drivers, as OpenBLAS exports them (32-bit integers).
extern "C" {
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info);
}
#endif

namespace fluxion::cpu::spectral {

namespace conv = primitives::spectral_conventions;
template <class T> using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T> using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Smallest n at which eigh calls LAPACK's syevd instead of Eigen (see the header comment).
inline constexpr int64_t kLapackEighMinSize = 128;

/// Whether LAPACK can take an m x n problem: linked, suited to this CPU, and sizes fitting its ints.
inline bool lapack_for(int64_t m, int64_t n) {
#if FLUXION_WITH_BLAS
  return blas_usable() && m * n < INT_MAX / 8;
#else
  (void)m, (void)n;
  return false;
#endif
}

#if FLUXION_WITH_BLAS
inline void syevd(int n, float* a, float* w, float* work, int lwork, int* iwork, int liwork, int* info) {
  ssyevd_("V", "L", &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
inline void syevd(int n, double* a, double* w, double* work, int lwork, int* iwork, int liwork, int* info) {
  dsyevd_("V", "L", &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
inline void gesdd(char job, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt, float* work,
                  int lwork, int* iwork, int* info) {
  sgesdd_(&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
inline void gesdd(char job, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt, double* work,
                  int lwork, int* iwork, int* info) {
  dgesdd_(&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
#endif

/// Eigen-decomposition of the symmetric part of each of `batch` row-major n x n matrices at a;
/// returns the index of a matrix the solver failed on, or -1.
template <class T> int64_t eigh(const T* a, int64_t batch, int64_t n, T* w_out, T* v_out) {
  if (n == 0) return -1;
  const bool lapack = n >= kLapackEighMinSize && lapack_for(n, n);
  ColMajor<T> sym(n, n);
  Eigen::SelfAdjointEigenSolver<ColMajor<T>> solver(lapack ? 0 : n);
  std::vector<T> w_t(static_cast<size_t>(n)), work;
  std::vector<int> iwork;
  if (lapack) work.resize(static_cast<size_t>(1 + 6 * n + 2 * n * n)), iwork.resize(static_cast<size_t>(3 + 5 * n));
  std::vector<double> w(static_cast<size_t>(n)), vectors(static_cast<size_t>(n * n));
  for (int64_t b = 0; b < batch; ++b) {
    const T* ab = a + b * n * n;
    T *wb = w_out + b * n, *vb = v_out + b * n * n;
    if (!conv::all_finite(ab, n, n)) {
      conv::fill_nan(wb, n), conv::fill_nan(vb, n * n);
      continue;
    }
    auto in = Eigen::Map<const RowMajor<T>>(ab, n, n);
    sym = (in + in.transpose()) * T(0.5);
    const T* vec = nullptr;  // eigenvector j at vec[j * n]: LAPACK and Eigen are both column-major
    if (lapack) {
#if FLUXION_WITH_BLAS
      int info = 0;
      syevd(static_cast<int>(n), sym.data(), w_t.data(), work.data(), static_cast<int>(work.size()), iwork.data(),
            static_cast<int>(iwork.size()), &info);
      if (info != 0) return b;
      vec = sym.data();
#endif
    } else {
      solver.compute(sym);
      if (solver.info() != Eigen::Success) return b;
      Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(w_t.data(), n) = solver.eigenvalues();
      vec = solver.eigenvectors().data();
    }
    std::copy_n(w_t.begin(), n, w.begin());
    std::copy_n(vec, n * n, vectors.begin());
    conv::write_eigh(w, vectors, n, wb, vb);
  }
  return -1;
}

/// One matrix's singular values (descending) and, when `uv`, thin singular vectors u_j (length m)
/// and v_j (length n) as contiguous vectors, in double. Returns false if the solver failed.
template <class T> struct SvdSolver {
  int64_t m, n, k;
  bool uv, lapack;
  std::vector<T> a_col, s_t, u_t, vt_t, work;
  std::vector<int> iwork;
  Eigen::BDCSVD<ColMajor<T>> bdc;

  SvdSolver(int64_t m_, int64_t n_, bool uv_)
      : m(m_), n(n_), k(std::min(m_, n_)), uv(uv_), lapack(k > 0 && lapack_for(m, n)) {
    s_t.resize(static_cast<size_t>(k));
#if FLUXION_WITH_BLAS
    if (!lapack) return;
    // a row-major is aᵀ column-major (n x m): its factors swap roles, and no transposes are needed.
    a_col.resize(static_cast<size_t>(m * n));
    if (uv) u_t.resize(static_cast<size_t>(n * k)), vt_t.resize(static_cast<size_t>(k * m));
    iwork.resize(static_cast<size_t>(8 * k));
    T query = 0;
    int info = 0;
    gesdd(uv ? 'S' : 'N', static_cast<int>(n), static_cast<int>(m), a_col.data(), s_t.data(), u_t.data(),
          static_cast<int>(std::max<int64_t>(n, 1)), vt_t.data(), static_cast<int>(std::max<int64_t>(k, 1)), &query, -1,
          iwork.data(), &info);
    work.resize(static_cast<size_t>(query) + 1);
#endif
  }

  bool run(const T* a, std::vector<double>& s, std::vector<double>& u, std::vector<double>& v) {
    s.resize(static_cast<size_t>(k));
    if (uv) u.resize(static_cast<size_t>(k * m)), v.resize(static_cast<size_t>(k * n));
    if (lapack) {
#if FLUXION_WITH_BLAS
      std::copy_n(a, m * n, a_col.begin());
      int info = 0;
      gesdd(uv ? 'S' : 'N', static_cast<int>(n), static_cast<int>(m), a_col.data(), s_t.data(), u_t.data(),
            static_cast<int>(std::max<int64_t>(n, 1)), vt_t.data(), static_cast<int>(std::max<int64_t>(k, 1)),
            work.data(), static_cast<int>(work.size()), iwork.data(), &info);
      if (info != 0) return false;
      std::copy_n(s_t.begin(), k, s.begin());
      if (!uv) return true;
      // aᵀ = U' S V'ᵀ, so a = V' S U'ᵀ: u_j is row j of V'ᵀ (k x m column-major), v_j column j of U'.
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < m; ++i) u[static_cast<size_t>(j * m + i)] = vt_t[static_cast<size_t>(i * k + j)];
      std::copy_n(u_t.begin(), k * n, v.begin());
#endif
      return true;
    }
    bdc.compute(Eigen::Map<const RowMajor<T>>(a, m, n), uv ? Eigen::ComputeThinU | Eigen::ComputeThinV : 0);
    if (bdc.info() != Eigen::Success) return false;
    for (int64_t j = 0; j < k; ++j) s[static_cast<size_t>(j)] = bdc.singularValues()(j);
    if (!uv) return true;
    std::copy_n(bdc.matrixU().data(), k * m, u.begin());
    std::copy_n(bdc.matrixV().data(), k * n, v.begin());
    return true;
  }
};

/// Singular value decompositions of `batch` row-major m x n matrices at a into `out` (pointers at
/// the first matrix's outputs); returns the index of a matrix the solver failed on, or -1.
template <class T> int64_t svd(const T* a, int64_t batch, int64_t m, int64_t n, conv::SvdOut<T> out) {
  const int64_t k = std::min(m, n);
  SvdSolver<T> solver(m, n, out.u != nullptr);
  std::vector<double> s, u, v;
  for (int64_t b = 0; b < batch; ++b) {
    const T* ab = a + b * m * n;
    conv::SvdOut<T> ob = out;
    ob.s += b * k;
    if (out.u) ob.u += b * m * out.u_cols, ob.vt += b * out.vt_rows * n;
    if (!conv::all_finite(ab, m, n)) {
      conv::fill_nan(ob.s, k);
      if (out.u) conv::fill_nan(ob.u, m * out.u_cols), conv::fill_nan(ob.vt, out.vt_rows * n);
      continue;
    }
    if (k > 0 && !solver.run(ab, s, u, v)) return b;
    if (k == 0) s.clear(), u.clear(), v.clear();
    conv::write_svd(s, u, v, m, n, ob);
  }
  return -1;
}

}  // namespace fluxion::cpu::spectral
