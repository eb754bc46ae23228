/// The library products the CPU GEMM paths call, each on the calling thread (products on several
/// threads are split into slices over Fluxion's pool: gemm_panel.hpp, split_product): Eigen's,
/// OpenBLAS's (FLUXION_BLAS) and oneDNN's sgemm (FLUXION_DNNL), for row-major operands with
/// leading dims; plus the matrix and element types the kernels share.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#if FLUXION_WITH_BLAS
#include <cblas.h>
#endif
#if FLUXION_WITH_DNNL
#include <dlfcn.h>
#include <dnnl.h>
#endif

#include "fluxion/device.hpp"
#include "fluxion/dtype.hpp"

namespace fluxion::cpu::gemm_detail {

template <class A> using RowMajorMat = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class A> using ColVec = Eigen::Matrix<A, Eigen::Dynamic, 1>;
template <class A> using RowVec = Eigen::Matrix<A, 1, Eigen::Dynamic>;
template <class A> using StridedMap = Eigen::Map<const RowMajorMat<A>, 0, Eigen::OuterStride<>>;
template <class A> using MutableStridedMap = Eigen::Map<RowMajorMat<A>, 0, Eigen::OuterStride<>>;

/// Integers multiply in the unsigned type of the same width, so overflow wraps (XLA semantics).
template <class T, bool = std::is_integral_v<T>> struct AccOf { using type = T; };
template <class T> struct AccOf<T, true> { using type = std::make_unsigned_t<T>; };
template <class T> using Acc = typename AccOf<T>::type;
/// The dtype a kernel's element type `A` (an Acc) computes: f32, f64, i32 or i64.
template <class A> inline constexpr DType kAccDType = std::is_same_v<A, float>    ? DType::f32
                                                      : std::is_same_v<A, double> ? DType::f64
                                                      : sizeof(A) == 4            ? DType::i32
                                                                                  : DType::i64;

/// The M x K lhs block of one batch: stored M x K, or K x M when `Trans` (read transposed).
template <bool Trans, class A> auto lhs_matrix(const A* p, int64_t m, int64_t k) {
  if constexpr (Trans) return Eigen::Map<const RowMajorMat<A>>(p, k, m).transpose();
  else return Eigen::Map<const RowMajorMat<A>>(p, m, k);
}
/// The K x N rhs block of one batch: stored K x N, or N x K when `Trans`.
template <bool Trans, class A> auto rhs_matrix(const A* p, int64_t k, int64_t n) {
  if constexpr (Trans) return Eigen::Map<const RowMajorMat<A>>(p, n, k).transpose();
  else return Eigen::Map<const RowMajorMat<A>>(p, k, n);
}

/// c (m x n, leading dim ldc) = op(a) op(b) through OpenBLAS on the calling thread, for row-major
/// a stored m x k (k x m when TransA, leading dim lda) and b stored k x n (n x k when TransB,
/// leading dim ldb); false (nothing done) when OpenBLAS is not linked, A is not f32/f64 or a
/// size exceeds its int arguments. Whether to call it is choose_product's (blas_usable there).
template <bool TransA, bool TransB, class A> bool blas_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                                                               int64_t ldc, int64_t m, int64_t n, int64_t k) {
#if FLUXION_WITH_BLAS
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    if (std::max({lda, ldb, ldc, m, n, k}) > INT_MAX) return false;
    const auto ta = TransA ? CblasTrans : CblasNoTrans, tb = TransB ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<A, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), 0.0f, c, int(ldc));
    else cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), 0.0, c, int(ldc));
    return true;
  }
#endif
  (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)m, (void)n, (void)k;
  return false;
}

/// blas_product's operands through Eigen's product on the calling thread (Fluxion builds with
/// EIGEN_DONT_PARALLELIZE).
template <bool TransA, bool TransB, class A> void eigen_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                                                                int64_t ldc, int64_t m, int64_t n, int64_t k) {
  const Eigen::OuterStride<> sa(lda), sb(ldb), sc(ldc);
  auto lhs = [&] {
    if constexpr (TransA) return StridedMap<A>(a, k, m, sa).transpose();
    else return StridedMap<A>(a, m, k, sa);
  }();
  auto rhs = [&] {
    if constexpr (TransB) return StridedMap<A>(b, n, k, sb).transpose();
    else return StridedMap<A>(b, k, n, sb);
  }();
  MutableStridedMap<A>(c, m, n, sc).noalias() = lhs * rhs;
}

#if FLUXION_WITH_DNNL
/// Keeps oneDNN on the calling thread. Debian's oneDNN runs on OpenMP and takes as many threads as
/// the calling thread's OpenMP setting says (all cores by default), with a busy-waiting team that
/// fights other processes for the cores; Fluxion splits large products over its own pool instead,
/// so each thread sets its OpenMP count to 1 once, through the libgomp that oneDNN loaded (Fluxion
/// itself neither uses nor links OpenMP).
inline void dnnl_on_calling_thread() {
  thread_local const bool once = [] {
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
    return true;
  }();
  (void)once;
}
#endif

/// blas_product's product through oneDNN's sgemm on the calling thread; false (nothing done)
/// unless `A` is float, oneDNN is linked and the call succeeds.
template <bool TransA, bool TransB, class A> bool dnnl_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                                                               int64_t ldc, int64_t m, int64_t n, int64_t k) {
#if FLUXION_WITH_DNNL
  if constexpr (std::is_same_v<A, float>) {
    dnnl_on_calling_thread();
    return dnnl_sgemm(TransA ? 'T' : 'N', TransB ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) ==
           dnnl_success;
  }
#endif
  (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)m, (void)n, (void)k;
  return false;
}

/// y = op(a) x on the calling thread, for a matrix `a` of rows x cols stored row-major with
/// leading dim lda (op(a) = aᵀ when `trans`): through OpenBLAS when `blas` and it takes the sizes
/// (f32/f64, int arguments), else through Eigen.
template <class A>
void gemv_on_caller(bool blas, bool trans, const A* a, int64_t lda, int64_t rows, int64_t cols, const A* x, A* y) {
#if FLUXION_WITH_BLAS
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    if (blas && std::max({rows, cols, lda}) <= INT_MAX) {
      num_threads();  // OpenBLAS is set to one thread before its first call
      const auto t = trans ? CblasTrans : CblasNoTrans;
      if constexpr (std::is_same_v<A, float>)
        cblas_sgemv(CblasRowMajor, t, int(rows), int(cols), 1.0f, a, int(lda), x, 1, 0.0f, y, 1);
      else cblas_dgemv(CblasRowMajor, t, int(rows), int(cols), 1.0, a, int(lda), x, 1, 0.0, y, 1);
      return;
    }
  }
#endif
  (void)blas;
  auto product = [&](const auto& m) {
    if (trans) Eigen::Map<RowVec<A>>(y, cols).noalias() = Eigen::Map<const RowVec<A>>(x, rows) * m;
    else Eigen::Map<ColVec<A>>(y, rows).noalias() = m * Eigen::Map<const ColVec<A>>(x, cols);
  };
  // A compile-time contiguous map where it is one: Eigen's GEMV on the strided map took
  // 8.7 against 5.9 us for 2048 x 32 (f32).
  if (lda == cols) product(Eigen::Map<const RowMajorMat<A>>(a, rows, cols));
  else product(StridedMap<A>(a, rows, cols, Eigen::OuterStride<>(lda)));
}

}  // namespace fluxion::cpu::gemm_detail
