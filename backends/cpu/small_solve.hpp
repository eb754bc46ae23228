/// Small linear systems (n <= kSmallSolveMax) solved with the size fixed at compile time: Gaussian
/// elimination with partial pivoting on the stack, loops the compiler unrolls. A batch of 4x4
/// systems (vmap of a solve) otherwise pays a dynamic-size LU object per matrix, whose setup costs
/// more than the arithmetic. Same pivot rule as the reference kernel (largest magnitude, first on
/// ties), so both fail on the same singular matrices, at the same column.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cpu/kernel_threads.hpp"

namespace fluxion::cpu {

inline constexpr int64_t kSmallSolveMax = 8;

namespace small_solve_detail {

/// Solves one N x N system a x = b with k right-hand-side columns (all row-major). Returns the
/// column of the first zero pivot (the matrix is singular; x is then left unwritten), or -1.
template <class T, int N> int64_t solve_fixed(const T* a, const T* b, T* x, int64_t k) {
  T m[N][N];
  int perm[N];
  for (int i = 0; i < N; ++i) {
    perm[i] = i;
    for (int j = 0; j < N; ++j) m[i][j] = a[i * N + j];
  }
  for (int c = 0; c < N; ++c) {
    int p = c;
    T best = std::abs(m[c][c]);
    for (int i = c + 1; i < N; ++i)
      if (std::abs(m[i][c]) > best) best = std::abs(m[i][c]), p = i;
    if (best == T(0)) return c;
    if (p != c) {
      for (int j = 0; j < N; ++j) std::swap(m[p][j], m[c][j]);
      std::swap(perm[p], perm[c]);
    }
    for (int i = c + 1; i < N; ++i) {
      const T f = m[i][c] / m[c][c];
      m[i][c] = f;  // L below the diagonal
      for (int j = c + 1; j < N; ++j) m[i][j] -= f * m[c][j];
    }
  }
  for (int64_t col = 0; col < k; ++col) {
    T y[N];
    for (int i = 0; i < N; ++i) {  // L y = P b
      T acc = b[perm[i] * k + col];
      for (int q = 0; q < i; ++q) acc -= m[i][q] * y[q];
      y[i] = acc;
    }
    for (int i = N - 1; i >= 0; --i) {  // U x = y
      T acc = y[i];
      for (int q = i + 1; q < N; ++q) acc -= m[i][q] * y[q];
      y[i] = acc / m[i][i];
    }
    for (int i = 0; i < N; ++i) x[i * k + col] = y[i];
  }
  return -1;
}

/// Calls f(std::integral_constant<int, n>{}) for 1 <= n <= kSmallSolveMax (nothing otherwise).
template <class F> void with_fixed_size(int64_t n, const F& f) {
  static_assert(kSmallSolveMax == 8, "one case per size");
  switch (n) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: return;
  }
}

}  // namespace small_solve_detail

/// Solves matrices [begin, end) of a batch of n x n systems (1 <= n <= kSmallSolveMax), each with
/// k right-hand sides. On a singular matrix stops there and sets *singular_index (the batch
/// index) and *singular_column (the zero pivot's column); both are left alone otherwise.
template <class T> void solve_small_batch(const T* a, const T* b, T* x, int64_t n, int64_t k, int64_t begin,
                                          int64_t end, int64_t* singular_index, int64_t* singular_column) {
  small_solve_detail::with_fixed_size(n, [&](auto size) {
    constexpr int N = decltype(size)::value;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = small_solve_detail::solve_fixed<T, N>(a + i * N * N, b + i * N * k, x + i * N * k, k);
      if (c >= 0) {
        *singular_index = i, *singular_column = c;
        return;
      }
    }
  });
}

/// Runs `run(begin, end)` over ranges of [0, batch) of n x n matrices with k columns each, on the
/// pool when the batch is large enough (ranges of ~2^15 multiply-adds, so waking a worker pays).
/// `run` returns the first failing matrix of its range or -1; the result is the first failing
/// matrix of the batch or -1, whichever threads ran what (a range stops at its first failure, and
/// none before the batch's first failure has one).
template <class F> int64_t parallel_small_batch(int64_t batch, int64_t n, int64_t k, const F& run) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / (n * n * (n + k) + 1));
  const int threads = batch >= 2 * grain ? kernel_threads() : 1;
  std::atomic<int64_t> first{-1};
  parallel_ranges(batch, threads, grain, 1, [&](int64_t begin, int64_t end, int) {
    const int64_t f = run(begin, end);
    if (f < 0) return;
    int64_t seen = first.load(std::memory_order_relaxed);
    while ((seen < 0 || f < seen) && !first.compare_exchange_weak(seen, f, std::memory_order_relaxed)) {}
  });
  return first.load(std::memory_order_relaxed);  // the pool's join orders it before this read
}

}  // namespace fluxion::cpu
