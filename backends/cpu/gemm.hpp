/// CPU dot_general: operands viewed as per-batch row-major matrices (copied into that layout only
/// when their dims are not already in it), then one GEMM / GEMV / dot per batch: f32 GEMMs through
/// oneDNN's sgemm when it is linked (FLUXION_DNNL), the others through Eigen's product, on
/// num_threads() threads for large products, or, on one thread, OpenBLAS's for the large GEMMs
/// that oneDNN does not take, where it is faster (FLUXION_BLAS; the thresholds below come from bench/RESULTS.md,
/// "Memory and GEMM" and "oneDNN's sgemm").
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#if FLUXION_WITH_BLAS
#include <cblas.h>
#endif
#if FLUXION_WITH_DNNL
#include <dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/cpu/kernel_threads.hpp"
#include "backends/cpu/permute.hpp"
#include "backends/cpu/small_vector.hpp"
#include "fluxion/device.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion::cpu {

/// Whether OpenBLAS is linked and its kernels suit this CPU (src/threads.cpp).
bool blas_usable();

namespace gemm_detail {

template <class A> using RowMajorMat = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class A> using ColVec = Eigen::Matrix<A, Eigen::Dynamic, 1>;
template <class A> using RowVec = Eigen::Matrix<A, 1, Eigen::Dynamic>;

/// Integers multiply in the unsigned type of the same width, so overflow wraps (XLA semantics).
template <class T, bool = std::is_integral_v<T>> struct AccOf { using type = T; };
template <class T> struct AccOf<T, true> { using type = std::make_unsigned_t<T>; };
template <class T> using Acc = typename AccOf<T>::type;

/// The M x K lhs block of one batch: stored M x K, or K x M when `Trans` (read transposed).
template <bool Trans, class A>
auto lhs_matrix(const A* p, int64_t m, int64_t k) {
  if constexpr (Trans) return Eigen::Map<const RowMajorMat<A>>(p, k, m).transpose();
  else return Eigen::Map<const RowMajorMat<A>>(p, m, k);
}
/// The K x N rhs block of one batch: stored K x N, or N x K when `Trans`.
template <bool Trans, class A>
auto rhs_matrix(const A* p, int64_t k, int64_t n) {
  if constexpr (Trans) return Eigen::Map<const RowMajorMat<A>>(p, n, k).transpose();
  else return Eigen::Map<const RowMajorMat<A>>(p, k, n);
}

using cpu::kLargeWork;
using cpu::kernel_threads;

/// Matrix elements (m*k) from which a matrix-vector product goes to OpenBLAS when blas_usable()
/// (on the calling thread, as Eigen's: the two are equal there).
inline constexpr double kLargeGemv = 1 << 18;

/// The calling thread's OpenMP thread count for one Eigen product (Eigen reads
/// omp_get_max_threads() per product; a per-thread setting, restored afterwards).
class ProductThreads {
 public:
  explicit ProductThreads(int n) {
#ifdef _OPENMP
    previous_ = omp_get_max_threads();
    if (n != previous_) omp_set_num_threads(n);
#else
    (void)n;
#endif
  }
  ~ProductThreads() {
#ifdef _OPENMP
    if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
#endif
  }
  ProductThreads(const ProductThreads&) = delete;
  ProductThreads& operator=(const ProductThreads&) = delete;

 private:
  int previous_ = 1;
};

/// Rows or columns of the result up to which a large product runs through Eigen instead of
/// OpenBLAS when only one thread computes: for the
/// skinny products of small batches (32 x 784 x 512, 32 x 512 x 512, 512 x 512 x 32) Eigen was
/// 5-25 % faster here, while OpenBLAS is 10-25 % faster on large square ones (bench/RESULTS.md,
/// "GEMM per shape, 2026-12-03").
inline constexpr int64_t kEigenSkinny = 32;

/// Whether OpenBLAS runs a large product of m x n x k: on one thread only (more threads run
/// Eigen's OpenMP product, see kLargeWork).
inline bool blas_for(int64_t m, int64_t n, int64_t k) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || !blas_usable()) return false;
  return kernel_threads() == 1 && std::min(m, n) > kEigenSkinny;
}

template <class A> using StridedMap = Eigen::Map<const RowMajorMat<A>, 0, Eigen::OuterStride<>>;
template <class A> using MutableStridedMap = Eigen::Map<RowMajorMat<A>, 0, Eigen::OuterStride<>>;

/// c (m x n, leading dim ldc) = op(a) op(b) through OpenBLAS on the calling thread, for row-major
/// a stored m x k (k x m when TransA, leading dim lda) and b stored k x n (n x k when TransB,
/// leading dim ldb); false (nothing done) when OpenBLAS is not linked or usable, or a size
/// exceeds its int arguments.
template <bool TransA, bool TransB, class A>
bool blas_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                  int64_t k) {
#if FLUXION_WITH_BLAS
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    if (!blas_usable() || std::max({lda, ldb, ldc, m, n, k}) > INT_MAX) return false;
    const auto ta = TransA ? CblasTrans : CblasNoTrans, tb = TransB ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<A, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), 0.0f, c, int(ldc));
    else
      cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), 0.0, c, int(ldc));
    return true;
  }
#endif
  (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)m, (void)n, (void)k;
  return false;
}

/// blas_product's operands through Eigen's product on `threads` threads.
template <bool TransA, bool TransB, class A>
void eigen_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                   int64_t k, int threads) {
  ProductThreads team(threads);
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

/// Multiply-adds (m*n*k) from which an f32 product goes to oneDNN's sgemm: its AVX-512 kernels
/// were 1.1-1.6x Eigen's from 48^3 up, on one and two threads (bench/RESULTS.md, "oneDNN's
/// sgemm"); at 32^3 its call cost more than Eigen's whole product.
inline constexpr double kDnnlWork = 1 << 16;

/// blas_product's product through oneDNN's sgemm on `threads` threads (its OpenMP runtime is the
/// team the fused groups and Eigen's products use); false (nothing done) unless `A` is float,
/// oneDNN is linked and the product has kDnnlWork multiply-adds.
template <bool TransA, bool TransB, class A>
bool dnnl_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                  int64_t k, int threads) {
#if FLUXION_WITH_DNNL
  if constexpr (std::is_same_v<A, float>) {
    if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < kDnnlWork) return false;
    ProductThreads team(threads);
    return dnnl_sgemm(TransA ? 'T' : 'N', TransB ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) ==
           dnnl_success;
  }
#endif
  (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)m, (void)n, (void)k, (void)threads;
  return false;
}

/// Contraction lengths up to which a product tile of a floating type oneDNN does not take (f64)
/// runs through panel_product rather than Eigen's blocked product: measured on tiles of
/// 250 x 320 and 143 x 915 (bench W8's), the panels ran at 0.66-0.83x Eigen's time for k of 8 to
/// 32 and 0.94-0.97x at 64 and 128, before counting the zero fill Eigen's product does first
/// (8 % of the W8 objective at d = 64); from k = 256 the two were equal or Eigen faster. Whole
/// products on one thread stay on Eigen unless their result is narrow (kPanelNarrow): by shape
/// the panels took 0.6-1.6x Eigen's time (100000 x 32 x 32: 0.58x; 2000 x 2000 x 16, 32 MB of
/// result: 1.56x); on several threads split_product runs them per slice.
inline constexpr int64_t kPanelMaxK = 128;

template <bool TransA, bool TransB, class A>
void panel_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                   int64_t k);  // below: f64 products of short contractions in registers

/// Results this skinny (min(m, n)) or a contraction this short (panel_product's) make a large
/// f64 product on several threads run as one slice per thread (split_product) instead of
/// through Eigen's parallel product, which shares packed blocks and spin-waits for them. Two
/// threads, best of 5 (bench/RESULTS.md, "f64 register panels"): 1000x800x32 1.00 -> 0.67 ms,
/// 1000x3200x64 10.1 -> 5.2 ms (Eigen's took its one-thread time), 32x800x1000 (aT b) 1.05 ->
/// 0.76 ms, 3200x64x1000 8.2 -> 7.4 ms; 1000^3 went the other way (19.6 -> 23.1 ms).
inline constexpr int64_t kSplitSkinny = 64;

/// Result columns up to which an f64 product runs through panel_product on the calling thread
/// too, when its contraction is short (kPanelMaxK) or its result has at most this many rows:
/// one or two panels, so op(a) is read once or twice. W8's gradients at d = 32 and 64 are
/// batches of 1000 x d x d products and of d x d results of 1000-long contractions, where Eigen's
/// product spent about as long packing both operands (pack_lhs, pack_rhs: 22 % of the d=32,K=25
/// gradient on one thread) as in its kernel; at 100000 x 32 x 32 the panels took 0.58x its time.
inline constexpr int64_t kPanelNarrow = 64;

/// blas_product's product on `threads` threads, each computing its own slice of c (rows, or
/// columns when c is wider than tall) on its own: panel_product for short contractions, else
/// Eigen's product on one thread.
template <bool TransA, bool TransB, class A>
void split_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                   int64_t k, int threads) {
  const bool by_rows = m >= n;
  auto slice = [&](int t, int nt) {
    const int64_t extent = by_rows ? m : n, s0 = extent * t / nt, s1 = extent * (t + 1) / nt;
    if (s1 == s0) return;
    const A* as = by_rows ? a + (TransA ? s0 : s0 * lda) : a;
    const A* bs = by_rows ? b : b + (TransB ? s0 * ldb : s0);
    A* cs = by_rows ? c + s0 * ldc : c + s0;
    const int64_t ms = by_rows ? s1 - s0 : m, ns = by_rows ? n : s1 - s0;
    if (k <= kPanelMaxK) panel_product<TransA, TransB>(as, lda, bs, ldb, cs, ldc, ms, ns, k);
    else eigen_product<TransA, TransB>(as, lda, bs, ldb, cs, ldc, ms, ns, k, 1);
  };
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  slice(omp_get_thread_num(), omp_get_num_threads());
#else
  (void)threads;
  slice(0, 1);
#endif
}

/// blas_product's product, m, n, k >= 1. Large products (kLargeWork) run on num_threads()
/// threads, smaller ones on the calling thread: f32 through oneDNN when dnnl_product takes it,
/// else through OpenBLAS when blas_for() says so (large ones), else f64 ones on several threads
/// that are skinny or short (kSplitSkinny) by split_product, f64 ones on one thread with a
/// narrow result and a short contraction or few rows (kPanelNarrow) by panel_product, else
/// through Eigen's product.
template <bool TransA, bool TransB, class A>
void strided_gemm(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                  int64_t k) {
  const bool large = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >= kLargeWork;
  const int threads = large ? kernel_threads() : 1;
  if (dnnl_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, threads)) return;
  if (large && blas_for(m, n, k) && blas_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k)) return;
  if constexpr (std::is_same_v<A, double>) {
    if (threads > 1 && (std::min(m, n) <= kSplitSkinny || k <= kPanelMaxK))
      return split_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, threads);
    if (threads == 1 && n <= kPanelNarrow && (k <= kPanelMaxK || m <= kPanelNarrow))
      return panel_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k);
  }
  eigen_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, threads);
}

/// y = op(a) x on the calling thread, for a matrix `a` of rows x cols stored row-major with
/// leading dim lda (op(a) = a^T when `trans`): through cblas when OpenBLAS is usable and the
/// matrix has kLargeGemv elements, else through Eigen.
template <class A>
void gemv_on_caller(bool trans, const A* a, int64_t lda, int64_t rows, int64_t cols, const A* x, A* y) {
#if FLUXION_WITH_BLAS
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    if (static_cast<double>(rows) * static_cast<double>(cols) >= kLargeGemv &&
        std::max({rows, cols, lda}) <= INT_MAX && blas_usable()) {
      num_threads();  // OpenBLAS is set to one thread before its first call
      const auto t = trans ? CblasTrans : CblasNoTrans;
      if constexpr (std::is_same_v<A, float>)
        cblas_sgemv(CblasRowMajor, t, int(rows), int(cols), 1.0f, a, int(lda), x, 1, 0.0f, y, 1);
      else
        cblas_dgemv(CblasRowMajor, t, int(rows), int(cols), 1.0, a, int(lda), x, 1, 0.0, y, 1);
      return;
    }
  }
#endif
  auto product = [&](const auto& m) {
    if (trans) Eigen::Map<RowVec<A>>(y, cols).noalias() = Eigen::Map<const RowVec<A>>(x, rows) * m;
    else Eigen::Map<ColVec<A>>(y, rows).noalias() = m * Eigen::Map<const ColVec<A>>(x, cols);
  };
  // A compile-time contiguous map where it is one: Eigen's GEMV on the strided map took
  // 8.7 against 5.9 us for 2048 x 32 (f32).
  if (lda == cols) product(Eigen::Map<const RowMajorMat<A>>(a, rows, cols));
  else product(StridedMap<A>(a, rows, cols, Eigen::OuterStride<>(lda)));
}

/// Matrix elements (rows*cols) from which a matrix-vector product is split over num_threads()
/// threads. Both libraries' GEMVs run on one thread here (OpenBLAS is kept single-threaded, see
/// kLargeWork), and a GEMV is bound by reading the matrix: each thread reading its own part
/// nearly halves the time on 2 cores (bench W5's logreg hvp: three 1000 x 1000 f64 GEMVs).
inline constexpr double kParallelGemv = 1 << 17;
/// Fewest elements of y a thread computes: slices start on 64-byte lines of f32.
inline constexpr int64_t kGemvSlice = 16;

/// y = op(a) x for a matrix `a` of rows x cols stored row-major (contiguous): large ones are split
/// by slices of y over num_threads() threads (rows of `a`, or its columns when `trans`); each
/// element of y is one thread's whole sum (no partial sums are combined across threads).
template <class A>
void gemv(bool trans, const A* a, int64_t rows, int64_t cols, const A* x, A* y) {
  const int64_t outputs = trans ? cols : rows;
  int threads = 1;
#ifdef _OPENMP
  if (static_cast<double>(rows) * static_cast<double>(cols) >= kParallelGemv && !omp_in_parallel())
    threads = static_cast<int>(std::min<int64_t>(num_threads(), outputs / kGemvSlice));
#endif
  if (threads <= 1) {
    gemv_on_caller(trans, a, cols, rows, cols, x, y);
    return;
  }
#ifdef _OPENMP
  const int64_t slices = (outputs + kGemvSlice - 1) / kGemvSlice;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = std::min(outputs, slices * t / nt * kGemvSlice);
    const int64_t hi = std::min(outputs, slices * (t + 1) / nt * kGemvSlice);
    if (hi > lo) {
      if (trans) gemv_on_caller(true, a + lo, cols, rows, hi - lo, x, y + lo);
      else gemv_on_caller(false, a + lo * cols, cols, hi - lo, cols, x, y + lo);
    }
  }
#endif
}

/// c = op(a) op(b) for a long thin product with a tiny inner product: N result columns and K
/// contracted elements (2..4 each, compile-time), any number m of rows; b is held in registers.
/// The blocked kernel packs and pads b to its register tile: 7.7 µs for 1000x2x2 in f64 against
/// 0.7 µs here (4x4: 9.6 vs 3.5 µs) — the per-component products of the GMM (bench W8).
template <int K, int N, bool TransA, bool TransB, class A>
void thin_product(const A* a, const A* b, A* c, int64_t m) {
  A bl[K][N];
  for (int l = 0; l < K; ++l)
    for (int j = 0; j < N; ++j) bl[l][j] = TransB ? b[j * K + l] : b[l * N + j];
  for (int64_t i = 0; i < m; ++i) {
    A* ci = c + i * N;
    for (int j = 0; j < N; ++j) {
      A acc = 0;
      for (int l = 0; l < K; ++l) acc += (TransA ? a[l * m + i] : a[i * K + l]) * bl[l][j];
      ci[j] = acc;
    }
  }
}

/// c = op(a) op(b) for a tiny M x N result (2..4 each, compile-time) of a long contraction over
/// k: M N accumulators in registers, one pass over both operands (Eigen's coefficient-based
/// product walks the transposed operand with a stride per coefficient: ~6.8 µs for 2x2x1000).
template <int M, int N, bool TransA, bool TransB, class A>
void short_product(const A* a, const A* b, A* c, int64_t k) {
  A acc[M][N] = {};
  for (int64_t l = 0; l < k; ++l)
    for (int i = 0; i < M; ++i) {
      const A ai = TransA ? a[l * M + i] : a[i * k + l];
      for (int j = 0; j < N; ++j) acc[i][j] += ai * (TransB ? b[j * k + l] : b[l * N + j]);
    }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) c[i * N + j] = acc[i][j];
}

/// Vector registers (Eigen packets) of A that hold the padded rows of the register kernels below.
template <class A> using PacketOf = typename Eigen::internal::packet_traits<A>::type;
template <class A> inline constexpr int kPacketSize = Eigen::internal::packet_traits<A>::size;
/// The register kernels take n <= kRegisterCols<A> result columns (two packets, at most 16).
template <class A> inline constexpr int kRegisterCols = std::min(16, 2 * kPacketSize<A>);

/// Rows [i0, i0 + R) of c = op(a) op(b) for the register kernels: each result row is NP packets
/// accumulated over `k` steps. `row_b(l)` points at row l of op(b) with at least NP packets
/// readable (unaligned; lanes past n may hold anything), `a_at(i, l)` is an element of op(a).
/// Rows are written as full packets to `out` (stride ldo).
template <int R, int NP, class A, class RowB, class AAt>
inline void register_rows(int64_t i0, int64_t k, const RowB& row_b, const AAt& a_at, A* out, int64_t ldo) {
  namespace ei = Eigen::internal;
  using P = PacketOf<A>;
  constexpr int PS = kPacketSize<A>;
  P acc[R][NP];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) acc[r][p] = ei::pset1<P>(A(0));
  for (int64_t l = 0; l < k; ++l) {
    const A* bl = row_b(l);
    P bv[NP];
    for (int p = 0; p < NP; ++p) bv[p] = ei::ploadu<P>(bl + p * PS);
    for (int r = 0; r < R; ++r) {
      const P av = ei::pset1<P>(a_at(i0 + r, l));
      for (int p = 0; p < NP; ++p) acc[r][p] = ei::pmadd(av, bv[p], acc[r][p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) ei::pstoreu(out + r * ldo + p * PS, acc[r][p]);
}

/// The rows [begin, end) of a panel of kb rows of W elements (row_b(l): row l) outside which
/// every row is exact zeros (NaN counts as nonzero), found from both ends: two rows when dense.
/// Column blocks of a triangular op(b) (W8's Q_k^T, upper triangular per d x d block) have
/// shorter ranges in their earlier panels.
template <int W, class A, class RowB>
std::pair<int64_t, int64_t> panel_rows(int64_t kb, const RowB& row_b) {
  auto nonzero = [&](int64_t l) {
    const A* x = row_b(l);
    for (int e = 0; e < W; ++e)
      if (x[e] != A(0)) return true;
    return false;
  };
  int64_t begin = 0, end = kb;
  while (begin < kb && !nonzero(begin)) ++begin;
  while (end > begin && !nonzero(end - 1)) --end;
  return {begin, end};
}

/// Rows of c that register_product's one-pass form (kOnePass) computes in one group: as many
/// rows of accumulators as the vector registers hold beside op(b)'s packets and a broadcast, a
/// multiple of 4 (12 with AVX-512's 32 registers and two packets a row, 16 with one).
template <int NP>
inline constexpr int kOnePassRows =
    std::min(16, (static_cast<int>(EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS) - NP - 2) / NP / 4 * 4);

/// Runs register_rows over all m rows of c (m x n, contiguous) in groups of up to kMaxRows rows
/// (as many accumulators as half the vector registers hold), so a short product passes over b
/// once or twice. With kOnePass, m rows from 9 to kOnePassRows run as one group of kOnePassRows
/// (rows past m read row m - 1 of op(a) and are never stored): a short product's contraction
/// (W8's 10 x 10 results of 1000-long contractions) then passes over its operands once, not
/// twice (8 rows, then 2: a quarter of its time). Full-packet stores run past a row's n entries
/// into the next row, which is written later; groups near c's end go through a padded buffer so
/// nothing past it is touched.
template <int NP, bool kOnePass = false, class A, class RowB, class AAt>
void register_product(A* c, int64_t m, int64_t n, int64_t k, const RowB& row_b, const AAt& a_at) {
  constexpr int W = NP * kPacketSize<A>;
  constexpr int kMaxRows = std::max(1, static_cast<int>(EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS) / (2 * NP));
  const int64_t direct = std::max<int64_t>(m - (W + n - 1) / n, 0);  // rows whose spill stays inside c
  int64_t i = 0;
  auto group = [&](auto rows) {
    constexpr int R = decltype(rows)::value;
    if (i + R <= direct) {
      register_rows<R, NP>(i, k, row_b, a_at, c + i * n, n);
    } else {
      alignas(64) A buffer[R][W];
      register_rows<R, NP>(i, k, row_b, a_at, &buffer[0][0], W);
      for (int r = 0; r < R && i + r < m; ++r) std::copy(buffer[r], buffer[r] + n, c + (i + r) * n);
    }
    i += R;
  };
  constexpr int kTop = kMaxRows >= 8 ? 8 : kMaxRows >= 4 ? 4 : kMaxRows >= 2 ? 2 : 1;
  if constexpr (kOnePass && kOnePassRows<NP> > kTop) {
    if (m > kTop && m <= kOnePassRows<NP>) {
      constexpr int R = kOnePassRows<NP>;
      auto clamped = [&](int64_t row, int64_t l) { return a_at(std::min(row, m - 1), l); };
      alignas(64) A buffer[R][W];
      register_rows<R, NP>(0, k, row_b, clamped, &buffer[0][0], W);
      for (int64_t r = 0; r < m; ++r) std::copy(buffer[r], buffer[r] + n, c + r * n);
      return;
    }
  }
  while (m - i >= kTop) group(std::integral_constant<int, kTop>());
  if constexpr (kTop > 4) if (m - i >= 4) group(std::integral_constant<int, 4>());
  if constexpr (kTop > 2) if (m - i >= 2) group(std::integral_constant<int, 2>());
  if (m - i >= 1) group(std::integral_constant<int, 1>());
}

/// c = op(a) op(b) for many rows and a small op(b) (k, n <= kRegisterCols): op(b) padded into a
/// tile, result rows accumulated in registers. 1000x10x10 f64: 10 µs against 20 µs for Eigen's
/// blocked product, which packs both operands (the per-component products of bench W8).
template <bool TransA, bool TransB, class A>
void thin_register_product(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  constexpr int W = kRegisterCols<A> <= kPacketSize<A> ? kPacketSize<A> : 2 * kPacketSize<A>;
  alignas(64) A tile[kRegisterCols<A>][W] = {};
  for (int64_t l = 0; l < k; ++l)
    for (int64_t j = 0; j < n; ++j) tile[l][j] = TransB ? b[j * k + l] : b[l * n + j];
  auto row_b = [&](int64_t l) { return &tile[l][0]; };
  auto a_at = [&](int64_t i, int64_t l) { return TransA ? a[l * m + i] : a[i * k + l]; };
  if (n <= kPacketSize<A>) register_product<1>(c, m, n, k, row_b, a_at);
  else if constexpr (W > kPacketSize<A>) register_product<2>(c, m, n, k, row_b, a_at);
}

/// c = op(a) b for a small result (m, n <= kRegisterCols) of a long contraction over k: b is read
/// in place (its rows are contiguous: b not transposed; the lanes past n read the next row and
/// only feed result lanes that are never kept), the last rows, too close to b's end, from a
/// padded copy made first (copied inside the loop, they made GCC keep the accumulators in memory
/// too: a store of each per step). 10x1000x10 f64 (op(a) = aᵀ): 15-20 µs against Eigen's 19-25
/// (16 wide: about equal).
template <bool TransA, class A>
void short_register_product(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  constexpr int W = kRegisterCols<A> <= kPacketSize<A> ? kPacketSize<A> : 2 * kPacketSize<A>;
  const int64_t tail = std::min<int64_t>(k, (W + n - 1) / n), first_tail = k - tail;  // tail <= W / 2 rows
  alignas(64) A padded[W / 2][W] = {};
  for (int64_t l = first_tail; l < k; ++l) std::copy(b + l * n, b + l * n + n, padded[l - first_tail]);
  auto row_b = [&](int64_t l) {
    return l < first_tail ? b + l * n : static_cast<const A*>(padded[l - first_tail]);
  };
  auto a_at = [&](int64_t i, int64_t l) { return TransA ? a[l * m + i] : a[i * k + l]; };
  if (n <= kPacketSize<A>) register_product<1, true>(c, m, n, k, row_b, a_at);
  else if constexpr (W > kPacketSize<A>) register_product<2, true>(c, m, n, k, row_b, a_at);
}

/// Calls f(std::integral_constant<int, v>) for v in [2, 4]; false for other v.
template <class F>
bool with_small(int64_t v, F&& f) {
  switch (v) {
    case 2: f(std::integral_constant<int, 2>()); return true;
    case 3: f(std::integral_constant<int, 3>()); return true;
    case 4: f(std::integral_constant<int, 4>()); return true;
    default: return false;
  }
}

/// thin_product for runtime n, k in [2, 4], or short_product for m, n in [2, 4]; else the
/// register kernels for n <= kRegisterCols and k (thin) or m (short, b not transposed) as small
/// (floating types; false: not handled, nothing written).
template <bool TransA, bool TransB, class A>
bool thin_dispatch(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_floating_point_v<A>) {
    if (n < 2 || n > kRegisterCols<A>) return false;
    if (n <= 4 && k >= 2 && k <= 4)
      return with_small(k, [&](auto kk) {
        with_small(n, [&](auto nn) { thin_product<decltype(kk)::value, decltype(nn)::value, TransA, TransB>(a, b, c, m); });
      });
    if (n <= 4 && m <= 4 && with_small(m, [&](auto mm) {
          with_small(n, [&](auto nn) { short_product<decltype(mm)::value, decltype(nn)::value, TransA, TransB>(a, b, c, k); });
        }))
      return true;
    if (k <= kRegisterCols<A>) {
      thin_register_product<TransA, TransB>(a, b, c, m, n, k);
      return true;
    }
    if (!TransB && m <= kRegisterCols<A>) {
      short_register_product<TransA>(a, b, c, m, n, k);
      return true;
    }
    return false;
  }
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k;
  return false;
}


/// True when x[0..n) are all finite: x * 0 is 0 for finite x and NaN for inf and NaN, summed
/// in packets (Eigen's allFinite on a strided block ran a scalar loop: 30 % of a 334 x 128 x 64
/// panel product).
template <class A>
bool all_finite(const A* x, int64_t n) {
  namespace ei = Eigen::internal;
  using P = PacketOf<A>;
  constexpr int PS = kPacketSize<A>;
  const P zero = ei::pset1<P>(A(0));
  P acc = zero;
  int64_t e = 0;
  for (; e + PS <= n; e += PS) acc = ei::pmadd(ei::ploadu<P>(x + e), zero, acc);
  A tail = ei::predux(acc);
  for (; e < n; ++e) tail += x[e] * A(0);
  return tail == A(0);
}

/// 1 when rows [i0, i1) of op(a) (k columns; a row-major with leading dim lda, op(a) = a^T when
/// TransA) hold only finite values, else 0.
template <bool TransA, class A>
int rows_finite(const A* a, int64_t lda, int64_t i0, int64_t i1, int64_t k) {
  const int64_t lines = TransA ? k : i1 - i0, length = TransA ? i1 - i0 : k;
  const A* first = TransA ? a + i0 : a + i0 * lda;
  for (int64_t r = 0; r < lines; ++r)
    if (!all_finite(first + r * lda, length)) return 0;
  return 1;
}

/// Rows and packets of panel_product's register block: as many accumulators as 3/4 of the
/// vector registers hold (6 x 4 with AVX-512's 32 registers, 3 x 4 with 16), the rest for one
/// packed row of b and the broadcast element of a.
inline constexpr int kPanelPackets = 4;
inline constexpr int kPanelRows = static_cast<int>(EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS) >= 32 ? 6 : 3;
/// Rows of op(a) run against each panel in turn: at most 384 x 128 f64 (384 KB, in L2) are read
/// again per panel, however many rows the product has (tiles have up to about 250).
inline constexpr int64_t kPanelRowBlock = 64 * kPanelRows;

/// c (m x n, leading dim ldc) = op(a) op(b) on the calling thread: op(b)'s columns are packed
/// kPanelPackets packets at a time into a panel of at most kPanelMaxK x W (zero padded; it stays
/// in L1), and each group of kPanelRows result rows is accumulated over the panel's rows in
/// registers against it, then stored once. Unlike Eigen's product, c is not zero filled first and
/// op(a) is read in place (register_rows broadcasts its elements), so nothing but the panel is
/// packed. Contractions longer than kPanelMaxK run in blocks of it, each block after the first
/// added into c (through `spill`). A panel's all-zero rows at either end are not stepped over
/// (panel_rows): a triangular op(b), as W8's objective has at d = 64 (bench/RESULTS.md), costs
/// about 3/4 of a dense one.
template <bool TransA, bool TransB, class A>
void panel_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m, int64_t n,
                   int64_t k) {
  constexpr int NP = kPanelPackets, W = NP * kPacketSize<A>;
  alignas(64) A panel[kPanelMaxK * W];
  alignas(64) A spill[kPanelRows * W];  // rows of a narrower panel or a later k block, before c
  for (int64_t i0 = 0; i0 < m; i0 += kPanelRowBlock) {
    const int64_t i1 = std::min(m, i0 + kPanelRowBlock);
    int a_finite = -1;  // rows [i0, i1) of op(a) all finite: unknown until a panel has zeros to skip
    for (int64_t j0 = 0; j0 < n; j0 += W) {
      const int64_t w = std::min<int64_t>(W, n - j0);
      for (int64_t l0 = 0; l0 < k; l0 += kPanelMaxK) {
        const int64_t kb = std::min(kPanelMaxK, k - l0);
        // Whole panels of a row-major op(b) are read where they are (a copy per row was a call
        // to memmove of 32 elements: 8 % of W8's d=32 gradient).
        const bool in_place = !TransB && w == W;
        if constexpr (TransB) {
          // Row by row of b: one sequential read of w rows. Column by column (32 rows at once)
          // the reads of a b not in cache stalled: W8's 1000 x 6400 x 64 product (3.3 MB of b,
          // packed once per tile row) ran at 62 GFLOP/s against 87 with b in L2.
          for (int64_t j = 0; j < w; ++j) {
            const A* src = b + (j0 + j) * ldb + l0;
            for (int64_t l = 0; l < kb; ++l) panel[l * W + j] = src[l];
          }
          if (w < W)
            for (int64_t l = 0; l < kb; ++l) std::fill(panel + l * W + w, panel + (l + 1) * W, A(0));
        } else {
          for (int64_t l = 0; l < kb && !in_place; ++l) {
            A* dst = panel + l * W;
            std::copy(b + (l0 + l) * ldb + j0, b + (l0 + l) * ldb + j0 + w, dst);
            std::fill(dst + w, dst + W, A(0));
          }
        }
        auto a_at = [&](int64_t i, int64_t l) { return TransA ? a[(l0 + l) * lda + i] : a[i * lda + l0 + l]; };
        auto row_b = [&](int64_t l) {
          return in_place ? b + (l0 + l) * ldb + j0 : static_cast<const A*>(panel + l * W);
        };
        // The panel's zero rows at either end are skipped, where op(a)'s rows are finite (0 inf
        // is NaN: checked once per row block, when a panel first has zero rows to skip).
        auto [begin, end] = panel_rows<W, A>(kb, row_b);
        if ((begin > 0 || end < kb) && a_finite < 0) a_finite = rows_finite<TransA>(a, lda, i0, i1, k);
        if (a_finite == 0) begin = 0, end = kb;
        auto row_b_from = [&, begin = begin](int64_t l) { return row_b(begin + l); };
        auto a_at_from = [&, begin = begin](int64_t i, int64_t l) { return a_at(i, begin + l); };
        const int64_t steps = end - begin;
        int64_t i = i0;
        auto rows = [&](auto count) {
          constexpr int R = decltype(count)::value;
          if (w == W && l0 == 0) {
            register_rows<R, NP>(i, steps, row_b_from, a_at_from, c + i * ldc + j0, ldc);
          } else {
            register_rows<R, NP>(i, steps, row_b_from, a_at_from, spill, W);
            for (int r = 0; r < R; ++r) {
              A* out = c + (i + r) * ldc + j0;
              const A* in = spill + r * W;
              if (l0 == 0) std::copy(in, in + w, out);
              else for (int64_t j = 0; j < w; ++j) out[j] += in[j];
            }
          }
          i += R;
        };
        while (i1 - i >= kPanelRows) rows(std::integral_constant<int, kPanelRows>());
        if constexpr (kPanelRows > 4) if (i1 - i >= 4) rows(std::integral_constant<int, 4>());
        if (i1 - i >= 2) rows(std::integral_constant<int, 2>());
        if (i1 - i >= 1) rows(std::integral_constant<int, 1>());
      }
    }
  }
}

/// Rows [i, i + R) of c (m x N) = a (m x k, row-major) times the N columns `cols` (N x k,
/// contiguous), R rows of a at a time: R N packet accumulators, each row of a read once.
template <int N, int R, class A>
void stacked_rows(const A* a, const A* cols, A* c, int64_t i, int64_t k) {
  namespace ei = Eigen::internal;
  using P = PacketOf<A>;
  constexpr int PS = kPacketSize<A>;
  P acc[R][N];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) acc[r][j] = ei::pset1<P>(A(0));
  int64_t l = 0;
  for (; l + PS <= k; l += PS) {
    P bv[N];
    for (int j = 0; j < N; ++j) bv[j] = ei::ploadu<P>(cols + j * k + l);
    for (int r = 0; r < R; ++r) {
      const P av = ei::ploadu<P>(a + (i + r) * k + l);
      for (int j = 0; j < N; ++j) acc[r][j] = ei::pmadd(av, bv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) {
      A sum = ei::predux(acc[r][j]);
      for (int64_t t = l; t < k; ++t) sum += a[(i + r) * k + t] * cols[j * k + t];
      c[(i + r) * N + j] = sum;
    }
}

/// c (m x n) = a op(b) for a row-major a (m x k) and 2..4 columns of op(b) (W5's X [w v] after
/// simplify_siblings stacked two matrix-vector products): a is read once, by rows, split over
/// num_threads() threads like gemv. The blocked product packed all of a first (1000 x 1000 x 2:
/// slower than the two GEMVs it replaced).
template <bool TransB, class A>
void stacked_gemv(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  thread_local std::vector<A> packed;  // op(b)'s columns, contiguous (grown once)
  const A* cols = b;
  if (!TransB) {
    if (packed.size() < static_cast<size_t>(n * k)) packed.resize(static_cast<size_t>(n * k));
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j) packed[static_cast<size_t>(j * k + l)] = b[l * n + j];
    cols = packed.data();
  }
  auto rows = [&](int64_t r0, int64_t r1) {
    with_small(n, [&](auto nn) {
      constexpr int N = decltype(nn)::value;
      int64_t i = r0;
      for (; i + 4 <= r1; i += 4) stacked_rows<N, 4>(a, cols, c, i, k);
      for (; i < r1; ++i) stacked_rows<N, 1>(a, cols, c, i, k);
    });
  };
  int threads = 1;
#ifdef _OPENMP
  if (static_cast<double>(m) * static_cast<double>(k) >= kParallelGemv && !omp_in_parallel())
    threads = static_cast<int>(std::min<int64_t>(num_threads(), m / kGemvSlice));
#endif
  if (threads <= 1) return rows(0, m);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    rows(m * t / nt, m * (t + 1) / nt);
  }
#endif
}

/// c = op(a) * op(b) for one batch of a GEMM (m, n > 1), all operands contiguous.
template <bool TransA, bool TransB, class A>
void gemm(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  const bool large = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >= kLargeWork;
  // Thin or tiny results (per-component 2x2 blocks: of n points, or of a long contraction) cost
  // more to pack for the blocked kernel than to compute in registers (integers: coefficient-wise).
  if (!large && thin_dispatch<TransA, TransB>(a, b, c, m, n, k)) return;
  if (!large && m <= 4 && n <= 4) {
    Eigen::Map<RowMajorMat<A>>(c, m, n).noalias() = lhs_matrix<TransA>(a, m, k).lazyProduct(rhs_matrix<TransB>(b, k, n));
    return;
  }
  if constexpr (std::is_floating_point_v<A>) {
    if (!TransA && n <= 4 && k > kRegisterCols<A> && m > kRegisterCols<A>)
      return stacked_gemv<TransB>(a, b, c, m, n, k);
  }
  strided_gemm<TransA, TransB>(a, TransA ? m : k, b, TransB ? k : n, c, n, m, n, k);
}

/// c[b] = lhs[b] * rhs[b] for every batch b; blocks are contiguous and k >= 1. When the batches
/// together are large (kLargeWork) but each is not (each would run on the calling thread), the
/// batches are split over num_threads() threads instead: W8's gradients are batches of 25-100
/// per-component products of 1000 x d x d, which ran on one thread whatever the thread count.
template <bool TransA, bool TransB, class A>
void batched_product(const A* a, const A* b, A* c, int64_t batch, int64_t m, int64_t n, int64_t k) {
  auto one = [&](int64_t i) {
    const A* ai = a + i * m * k;
    const A* bi = b + i * k * n;
    A* ci = c + i * m * n;
    if (m == 1 && n == 1) {  // vector . vector (both blocks are plain k-vectors)
      ci[0] = Eigen::Map<const ColVec<A>>(ai, k).dot(Eigen::Map<const ColVec<A>>(bi, k));
    } else if (n == 1) {  // matrix * vector: GEMV (the lhs is stored m x k, or k x m when TransA)
      gemv(TransA, ai, TransA ? k : m, TransA ? m : k, bi, ci);
    } else if (k == 1) {  // outer product (per-example gradients of vmap(grad)): no packing
      Eigen::Map<RowMajorMat<A>>(ci, m, n).noalias() = Eigen::Map<const ColVec<A>>(ai, m) * Eigen::Map<const RowVec<A>>(bi, n);
    } else if (m == 1) {  // vector * matrix: c = op(b)^T a (the rhs is stored k x n, or n x k when TransB)
      gemv(!TransB, bi, TransB ? n : k, TransB ? k : n, ai, ci);
    } else {
      gemm<TransA, TransB>(ai, bi, ci, m, n, k);
    }
  };
  const double each = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), batch));
#ifdef _OPENMP
  if (threads > 1 && each < kLargeWork && each * static_cast<double>(batch) >= kLargeWork && !omp_in_parallel()) {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      for (int64_t i = batch * t / nt; i < batch * (t + 1) / nt; ++i) one(i);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < batch; ++i) one(i);
}

// The layout planning below runs per call in jit plans: its index lists are IndexVectors, so
// planning allocates nothing (backends/cpu/small_vector.hpp).
inline IndexVector concat(std::initializer_list<IndexSpan> parts) {
  IndexVector r;
  for (IndexSpan p : parts)
    for (int64_t v : p) r.push_back(v);
  return r;
}

/// Dims of `rank` that are neither in `a` nor in `b`, in increasing order.
inline IndexVector free_dims(int64_t rank, IndexSpan a, IndexSpan b) {
  IndexVector f;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) f.push_back(d);
  return f;
}

inline int64_t extent(IndexSpan shape, IndexSpan dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[static_cast<size_t>(d)];
  return n;
}

/// How one operand is read: in place (possibly as a transposed matrix) or after a permute copy.
struct OperandPlan {
  bool copy = false, trans = false;
};

/// Layout decision for both operands given one order of the contracting pairs.
struct Plan {
  IndexVector lc, rc;
  OperandPlan lhs, rhs;
  int64_t cost = 0;  // elements copied
};

inline Plan plan_for(IndexSpan ls, IndexSpan rs, IndexVector lc, IndexVector rc, IndexSpan lb, IndexSpan rb,
                     IndexSpan lf, IndexSpan rf) {
  Plan p;
  p.lc = std::move(lc);
  p.rc = std::move(rc);
  if (is_identity_layout(ls, concat({lb, lf, p.lc}))) p.lhs = {false, false};
  else if (is_identity_layout(ls, concat({lb, p.lc, lf}))) p.lhs = {false, true};
  else p.lhs = {true, false}, p.cost += extent(ls, concat({lb, lf, p.lc}));
  if (is_identity_layout(rs, concat({rb, p.rc, rf}))) p.rhs = {false, false};
  else if (is_identity_layout(rs, concat({rb, rf, p.rc}))) p.rhs = {false, true};
  else p.rhs = {true, false}, p.cost += extent(rs, concat({rb, p.rc, rf}));
  return p;
}

/// The contracting pairs reordered by `key` (the lhs or rhs dims), keeping pairs together.
inline std::pair<IndexVector, IndexVector> sort_pairs(const AxisPair& c, bool by_rhs) {
  SmallVector<size_t> order(c.first.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const auto& key = by_rhs ? c.second : c.first;
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return key[i] < key[j]; });
  std::pair<IndexVector, IndexVector> r;
  for (size_t i : order) r.first.push_back(c.first[i]), r.second.push_back(c.second[i]);
  return r;
}

/// Products this small (no batch dims, ranks <= 2, every dim <= kTinyDim, at most kTinyWork
/// multiply-adds) run as plain loops: planning the layout and entering Eigen's kernels cost more
/// than the product itself. Above about 256 multiply-adds Eigen's vectorised kernels win (an 8x8
/// matmul costs the same both ways, a 16x16 one 6x more in plain loops).
inline constexpr int64_t kTinyDim = 16;
inline constexpr int64_t kTinyWork = 256;

/// How a tiny product reads one operand: the element stride of its free index (free dims
/// flattened: none, one, or both dims of a rank-2 operand, which are then contiguous) and of each
/// contracting pair.
struct TinyOperand {
  int64_t free_extent = 1, free_stride = 0;
  int64_t pair_stride[2] = {0, 0};
};

/// `op` for an operand of shape `s` contracted over `c` (validated dims); false when the tiny
/// path does not apply to it.
inline bool tiny_operand(const std::vector<int64_t>& s, const std::vector<int64_t>& c, TinyOperand& op) {
  if (s.size() > 2) return false;
  int64_t strides[2] = {1, 1};
  if (s.size() == 2) strides[0] = s[1];
  bool contracted[2] = {false, false};
  for (size_t p = 0; p < c.size(); ++p) {
    contracted[c[p]] = true;
    op.pair_stride[p] = strides[c[p]];
  }
  int free_count = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] > kTinyDim) return false;
    if (contracted[d]) continue;
    op.free_extent *= s[d];
    if (free_count++ == 0) op.free_stride = strides[d];
  }
  if (free_count == 2) op.free_stride = 1;  // row-major: the flattened index walks both dims
  return true;
}

/// out[i, j] = sum over the contracting pairs of lhs[i, pairs] * rhs[j, pairs]: one accumulator
/// per output element, summed in pair order (sizes k[0], k[1]; 1 where a pair is absent).
template <bool OnePair, class A>
void tiny_product(const A* lhs, const A* rhs, A* out, const TinyOperand& l, const TinyOperand& r, const int64_t k[2]) {
  const int64_t k1 = OnePair ? 1 : k[1];
  for (int64_t i = 0; i < l.free_extent; ++i) {
    const A* li = lhs + i * l.free_stride;
    for (int64_t j = 0; j < r.free_extent; ++j) {
      const A* rj = rhs + j * r.free_stride;
      A acc = A(0);
      for (int64_t p = 0; p < k[0]; ++p)
        for (int64_t q = 0; q < k1; ++q)
          acc += li[p * l.pair_stride[0] + q * l.pair_stride[1]] * rj[p * r.pair_stride[0] + q * r.pair_stride[1]];
      out[i * r.free_extent + j] = acc;
    }
  }
}

/// dot_general through tiny_product when it applies (see kTinyWork); false (nothing done) otherwise.
template <class A>
bool tiny_dot_general(const A* lhs, const std::vector<int64_t>& ls, const A* rhs, const std::vector<int64_t>& rs,
                      const AxisPair& contract, const AxisPair& batch, A* out) {
  if (!batch.first.empty()) return false;
  TinyOperand l, r;
  if (!tiny_operand(ls, contract.first, l) || !tiny_operand(rs, contract.second, r)) return false;
  int64_t k[2] = {1, 1};
  for (size_t p = 0; p < contract.first.size(); ++p) k[p] = ls[static_cast<size_t>(contract.first[p])];
  if (l.free_extent * r.free_extent * k[0] * k[1] > kTinyWork) return false;
  if (contract.first.size() < 2) tiny_product<true>(lhs, rhs, out, l, r, k);  // the common case, k[1] == 1
  else tiny_product<false>(lhs, rhs, out, l, r, k);
  return true;
}

/// dot_general through one (batched) GEMM / GEMV / dot after choosing the operand layouts.
template <class A>
void general_dot_general(const A* lhs, const std::vector<int64_t>& ls, const A* rhs, const std::vector<int64_t>& rs,
                         const AxisPair& contract, const AxisPair& batch, A* out) {
  const std::vector<int64_t>& lb = batch.first;
  const std::vector<int64_t>& rb = batch.second;
  const IndexVector lf = free_dims(static_cast<int64_t>(ls.size()), lb, contract.first);
  const IndexVector rf = free_dims(static_cast<int64_t>(rs.size()), rb, contract.second);
  const int64_t nb = extent(ls, lb), m = extent(ls, lf), n = extent(rs, rf), k = extent(ls, contract.first);
  if (nb == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(out, out + nb * m * n, A(0));
    return;
  }
  // Contracting pairs may be listed in any order: try the given one and both sorted ones, keep
  // the plan that copies least (usually nothing).
  Plan best = plan_for(ls, rs, IndexVector(contract.first.begin(), contract.first.end()),
                       IndexVector(contract.second.begin(), contract.second.end()), lb, rb, lf, rf);
  for (bool by_rhs : {false, true}) {
    if (best.cost == 0) break;
    auto [lc, rc] = sort_pairs(contract, by_rhs);
    Plan p = plan_for(ls, rs, std::move(lc), std::move(rc), lb, rb, lf, rf);
    if (p.cost < best.cost) best = std::move(p);
  }
  std::unique_ptr<A[]> lhs_owned, rhs_owned;
  if (best.lhs.copy) {
    A* copy = scratch_buffer<A>(0, static_cast<size_t>(nb * m * k), lhs_owned);
    permute_copy(lhs, ls, concat({lb, lf, best.lc}), copy);
    lhs = copy;
  }
  if (best.rhs.copy) {
    A* copy = scratch_buffer<A>(1, static_cast<size_t>(nb * k * n), rhs_owned);
    permute_copy(rhs, rs, concat({rb, best.rc, rf}), copy);
    rhs = copy;
  }
  if (best.lhs.trans) {
    if (best.rhs.trans) batched_product<true, true>(lhs, rhs, out, nb, m, n, k);
    else batched_product<true, false>(lhs, rhs, out, nb, m, n, k);
  } else {
    if (best.rhs.trans) batched_product<false, true>(lhs, rhs, out, nb, m, n, k);
    else batched_product<false, false>(lhs, rhs, out, nb, m, n, k);
  }
}

/// A dot_general without batch dims whose operands are both read in place, as one m x n x k
/// GEMM of row-major matrices (either transposed): the view the tiled kernel computes by
/// rectangles. `ok` is false for other products (batch dims, operands needing a copy, k == 0).
struct MatrixView {
  bool ok = false, trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
};
inline MatrixView matrix_view(const std::vector<int64_t>& ls, const std::vector<int64_t>& rs, const AxisPair& contract,
                              const AxisPair& batch) {
  MatrixView v;
  if (!batch.first.empty()) return v;
  const IndexVector none{};
  const IndexVector lf = free_dims(static_cast<int64_t>(ls.size()), none, contract.first);
  const IndexVector rf = free_dims(static_cast<int64_t>(rs.size()), none, contract.second);
  Plan best = plan_for(ls, rs, IndexVector(contract.first.begin(), contract.first.end()),
                       IndexVector(contract.second.begin(), contract.second.end()), none, none, lf, rf);
  for (bool by_rhs : {false, true}) {
    if (best.cost == 0) break;
    auto [lc, rc] = sort_pairs(contract, by_rhs);
    best = plan_for(ls, rs, std::move(lc), std::move(rc), none, none, lf, rf);
  }
  v.m = extent(ls, lf), v.n = extent(rs, rf), v.k = extent(ls, contract.first);
  v.ok = best.cost == 0 && v.k > 0 && v.m > 0 && v.n > 0;
  v.trans_a = best.lhs.trans, v.trans_b = best.rhs.trans;
  return v;
}

/// c = rows [r0, r1) x columns [c0, c1) of the product `v` (leading dim ldc), on the calling
/// thread: oneDNN for f32 when dnnl_product takes it, panel_product for f64 with k <=
/// kPanelMaxK, else OpenBLAS when usable and the tile is not skinny, else Eigen's product.
template <bool TransA, bool TransB, class A>
void product_tile(const MatrixView& v, const A* lhs, const A* rhs, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                  A* c, int64_t ldc) {
  const int64_t m = r1 - r0, n = c1 - c0, k = v.k;
  const A* a = lhs + (TransA ? r0 : r0 * k);
  const A* b = rhs + (TransB ? c0 * k : c0);
  const int64_t lda = TransA ? v.m : k, ldb = TransB ? k : v.n;
  if (dnnl_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, 1)) return;
  if constexpr (std::is_same_v<A, double>) {
    if (k <= kPanelMaxK) return panel_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k);
  }
  if (std::min(m, n) > kEigenSkinny && blas_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k)) return;
  eigen_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, 1);
}

/// The kernels for the element types of dot_general (Acc of i32, i64, f32, f64) are compiled
/// once, in primitives/dot_general.cpp (FLUXION_GEMM_ALL_KERNELS() there). Other files that
/// include this header only declare them (`extern template`) and link to those, instead of
/// compiling Eigen's products again (tests/test_dot_tiny.cpp took 80 s at -O3, 98 s under ASan).
#define FLUXION_GEMM_THIN(EXTERN, A, TA, TB) \
  EXTERN template bool thin_dispatch<TA, TB, A>(const A*, const A*, A*, int64_t, int64_t, int64_t);
#define FLUXION_GEMM_KERNELS(EXTERN, A)                                                                       \
  EXTERN template bool tiny_dot_general<A>(const A*, const std::vector<int64_t>&, const A*,                  \
                                           const std::vector<int64_t>&, const AxisPair&, const AxisPair&, A*); \
  EXTERN template void general_dot_general<A>(const A*, const std::vector<int64_t>&, const A*,               \
                                              const std::vector<int64_t>&, const AxisPair&, const AxisPair&, \
                                              A*);                                                           \
  FLUXION_GEMM_THIN(EXTERN, A, false, false) FLUXION_GEMM_THIN(EXTERN, A, false, true)                       \
  FLUXION_GEMM_THIN(EXTERN, A, true, false) FLUXION_GEMM_THIN(EXTERN, A, true, true)
#define FLUXION_GEMM_ALL_KERNELS(EXTERN)                                            \
  FLUXION_GEMM_KERNELS(EXTERN, float) FLUXION_GEMM_KERNELS(EXTERN, double)          \
  FLUXION_GEMM_KERNELS(EXTERN, uint32_t) FLUXION_GEMM_KERNELS(EXTERN, uint64_t)
#ifndef FLUXION_GEMM_DEFINE_KERNELS
FLUXION_GEMM_ALL_KERNELS(extern)
#endif

}  // namespace gemm_detail

/// out = dot_general(lhs, rhs) with validated `contract` and `batch` pairs: output dims are batch
/// (lhs order), lhs free, rhs free. Integer products wrap.
template <class T>
void dot_general(const T* lhs_t, const std::vector<int64_t>& ls, const T* rhs_t, const std::vector<int64_t>& rs,
                 const AxisPair& contract, const AxisPair& batch, T* out_t) {
  using namespace gemm_detail;
  using A = Acc<T>;
  const A* lhs = reinterpret_cast<const A*>(lhs_t);
  const A* rhs = reinterpret_cast<const A*>(rhs_t);
  A* out = reinterpret_cast<A*>(out_t);
  if (!tiny_dot_general(lhs, ls, rhs, rs, contract, batch, out))
    general_dot_general(lhs, ls, rhs, rs, contract, batch, out);
}

}  // namespace fluxion::cpu
