/// Cholesky factors and triangular solves of small matrices (n <= kSmallSolveMax) with the size
/// fixed at compile time, for batches of them (vmap): the dynamic-size Eigen objects cost more to
/// set up per matrix than the arithmetic. Same formulas as the reference kernels, so both fail on
/// the same matrices.
#pragma once
#include <cmath>
#include <cstdint>

#include "backends/cpu/small_solve.hpp"

namespace fluxion::cpu {

namespace small_triangular_detail {

/// The lower Cholesky factor of (a + aᵀ) / 2 into l (row-major, zeros above the diagonal); false
/// when a pivot is not > 0 (NaN included), with l then unwritten.
template <class T, int N> bool cholesky_fixed(const T* a, T* l) {
  T f[N][N];
  for (int i = 0; i < N; ++i)
    for (int j = 0; j <= i; ++j) f[i][j] = (a[i * N + j] + a[j * N + i]) * T(0.5);
  for (int j = 0; j < N; ++j) {
    T d = f[j][j];
    for (int k = 0; k < j; ++k) d -= f[j][k] * f[j][k];
    if (!(d > T(0))) return false;
    f[j][j] = std::sqrt(d);
    for (int i = j + 1; i < N; ++i) {
      T s = f[i][j];
      for (int k = 0; k < j; ++k) s -= f[i][k] * f[j][k];
      f[i][j] = s / f[j][j];
    }
  }
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) l[i * N + j] = j <= i ? f[i][j] : T(0);
  return true;
}

/// One triangular system per vector: m x = v, m lower or upper, read from a copy of the triangle.
/// `v` has `count` vectors of N values, value q of vector c at v[c * vector_stride + q * value_stride].
template <class T, int N> void triangular_fixed(const T (&m)[N][N], bool lower, bool unit, const T* b, T* x,
                                                int64_t count, int64_t vector_stride, int64_t value_stride) {
  for (int64_t c = 0; c < count; ++c) {
    T y[N];
    for (int q = 0; q < N; ++q) y[q] = b[c * vector_stride + q * value_stride];
    if (lower) {
      for (int i = 0; i < N; ++i) {
        T acc = y[i];
        for (int q = 0; q < i; ++q) acc -= m[i][q] * y[q];
        y[i] = unit ? acc : acc / m[i][i];
      }
    } else {
      for (int i = N - 1; i >= 0; --i) {
        T acc = y[i];
        for (int q = i + 1; q < N; ++q) acc -= m[i][q] * y[q];
        y[i] = unit ? acc : acc / m[i][i];
      }
    }
    for (int q = 0; q < N; ++q) x[c * vector_stride + q * value_stride] = y[q];
  }
}

/// Matrix `a` (row-major N x N) solved against b (rows x cols, row-major) into x, in the layout of
/// the triangular_solve primitive: op(a) x = b (left side) or x op(a) = b, op = transpose or not.
/// A right-side solve is op(a)ᵀ xᵀ = bᵀ, so each row of b is one vector.
template <class T, int N> void triangular_matrix_fixed(const T* a, const T* b, T* x, int64_t rhs, bool left_side,
                                                       bool lower, bool transpose_a, bool unit) {
  const bool transpose_m = transpose_a != !left_side;  // m = op(a) left, op(a)ᵀ right
  T m[N][N];
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m[i][j] = transpose_m ? a[j * N + i] : a[i * N + j];
  const bool m_lower = lower != transpose_m;
  if (left_side) triangular_fixed<T, N>(m, m_lower, unit, b, x, rhs, 1, rhs);  // columns of (N x rhs)
  else triangular_fixed<T, N>(m, m_lower, unit, b, x, rhs, N, 1);              // rows of (rhs x N)
}

}  // namespace small_triangular_detail

/// Cholesky factors of matrices [begin, end) of a batch of n x n ones (1 <= n <= kSmallSolveMax);
/// `failed(i)` is called for each matrix whose factor does not exist (its l left unwritten).
template <class T, class Failed>
void cholesky_small_batch(const T* a, T* l, int64_t n, int64_t begin, int64_t end, const Failed& failed) {
  using namespace small_triangular_detail;
  auto run = [&](auto size) {
    constexpr int N = decltype(size)::value;
    for (int64_t i = begin; i < end; ++i)
      if (!cholesky_fixed<T, N>(a + i * N * N, l + i * N * N)) failed(i);
  };
  small_solve_detail::with_fixed_size(n, run);
}

/// Triangular solves of matrices [begin, end) of a batch (1 <= n <= kSmallSolveMax): b and x hold
/// n x rhs (left side) or rhs x n blocks per matrix. Zero diagonals are the caller's to check.
template <class T> void triangular_small_batch(const T* a, const T* b, T* x, int64_t n, int64_t rhs, int64_t begin,
                                               int64_t end, bool left_side, bool lower, bool transpose_a, bool unit) {
  using namespace small_triangular_detail;
  auto run = [&](auto size) {
    constexpr int N = decltype(size)::value;
    for (int64_t i = begin; i < end; ++i)
      triangular_matrix_fixed<T, N>(a + i * N * N, b + i * N * rhs, x + i * N * rhs, rhs, left_side, lower, transpose_a,
                                    unit);
  };
  small_solve_detail::with_fixed_size(n, run);
}

}  // namespace fluxion::cpu
