/// The matrix-vector paths of the CPU GEMMs: one GEMV on the calling thread or split by slices
/// of the result over threads, and stacked_gemv for 2..4 columns of op(b) against a tall a. A
/// GEMV is bound by reading the matrix, so each is read once, each thread reading its own part.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/gemm_choice.hpp"
#include "backends/cpu/gemm_libraries.hpp"
#include "backends/cpu/gemm_register.hpp"
#include "backends/cpu/thread_pool.hpp"

namespace fluxion::cpu::gemm_detail {

/// y = op(a) x for a matrix `a` of rows x cols stored row-major (contiguous), by `choice` (gemv,
/// blas_gemv or split_gemv). split_gemv cuts y into slices (rows of `a`, or its columns when
/// `trans`) of whole gemv_slice blocks, a few per thread (parallel_ranges), each computed by the
/// thread that claims it through the path choose_gemv_slice picks for its size; each element of y
/// is one thread's whole sum (no partial sums are combined across threads).
template <class A>
void gemv(const ProductChoice& choice, bool trans, const A* a, int64_t rows, int64_t cols, const A* x, A* y) {
  auto blas = [](int64_t r, int64_t c) {
    return choose_gemv_slice(static_cast<double>(r) * static_cast<double>(c), kAccDType<A>) == ProductPath::blas_gemv;
  };
  if (choice.path != ProductPath::split_gemv) {
    gemv_on_caller(choice.path == ProductPath::blas_gemv, trans, a, cols, rows, cols, x, y);
    return;
  }
  constexpr int64_t kSlice = kProductThresholds.gemv_slice;
  parallel_ranges(trans ? cols : rows, choice.threads, kSlice, kSlice, [&](int64_t lo, int64_t hi, int) {
    if (trans) gemv_on_caller(blas(rows, hi - lo), true, a + lo, cols, rows, hi - lo, x, y + lo);
    else gemv_on_caller(blas(hi - lo, cols), false, a + lo * cols, cols, hi - lo, cols, x, y + lo);
  });
}

/// Rows [i, i + R) of c (m x N) = a (m x k, row-major) times the N columns `cols` (N x k,
/// contiguous), R rows of a at a time: R N packet accumulators, each row of a read once.
template <int N, int R, class A> void stacked_rows(const A* a, const A* cols, A* c, int64_t i, int64_t k) {
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

/// c (m x n) = a op(b) for a row-major a (m x k) and 2..4 columns of op(b) (two matrix-vector
/// products of one matrix stacked into one): a is read once, by rows, split over `threads`
/// threads of the pool like gemv. The blocked product packed all of a first (1000 x 1000 x 2: slower than the
/// two GEMVs it replaced).
template <bool TransB, class A>
void stacked_gemv(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k, int threads) {
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
  parallel_ranges(m, threads, kProductThresholds.gemv_slice, 4, [&](int64_t r0, int64_t r1, int) { rows(r0, r1); });
}

}  // namespace fluxion::cpu::gemm_detail
