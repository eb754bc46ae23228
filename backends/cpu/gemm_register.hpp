/// The register kernels of the CPU GEMM paths: small products whose op(b) (thin: few columns,
/// short contraction) or whose result (short: few rows and columns, long contraction) fits in
/// vector registers, where packing for Eigen's blocked kernel costs more than the product.
/// choose_register_product (gemm_choice.hpp) picks among them.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cpu/gemm_choice.hpp"
#include "backends/cpu/gemm_libraries.hpp"

namespace fluxion::cpu::gemm_detail {

/// c = op(a) op(b) for a long thin product with a tiny inner product: N result columns and K
/// contracted elements (2..4 each, compile-time), any number m of rows; b is held in registers.
/// The blocked kernel packs and pads b to its register tile: 7.7 µs for 1000x2x2 in f64 against
/// 0.7 µs here (4x4: 9.6 vs 3.5 µs).
template <int K, int N, bool TransA, bool TransB, class A> void thin_product(const A* a, const A* b, A* c, int64_t m) {
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
template <int M, int N, bool TransA, bool TransB, class A> void short_product(const A* a, const A* b, A* c, int64_t k) {
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
static_assert(kProductThresholds.register_cols_f32 == kRegisterCols<float> &&
                  kProductThresholds.register_cols_f64 == kRegisterCols<double>,
              "choose_register_product must not pick a product wider than the register tiles");

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

/// Rows of c that register_product's one-pass form (kOnePass) computes in one group: as many
/// rows of accumulators as the vector registers hold beside op(b)'s packets and a broadcast, a
/// multiple of 4 (12 with AVX-512's 32 registers and two packets a row, 16 with one).
template <int NP>
inline constexpr int kOnePassRows = std::min(16, (static_cast<int>(EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS) - NP - 2) /
                                                     NP / 4 * 4);

/// Runs register_rows over all m rows of c (m x n, contiguous) in groups of up to kMaxRows rows
/// (as many accumulators as half the vector registers hold), so a short product passes over b
/// once or twice. With kOnePass, m rows from 9 to kOnePassRows run as one group of kOnePassRows
/// (rows past m read row m - 1 of op(a) and are never stored): a short product's contraction
/// (10 x 10 results of 1000-long contractions) then passes over its operands once, not twice
/// (8 rows, then 2: a quarter of its time). Full-packet stores run past a row's n entries
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
  if constexpr (kOnePass && kOnePassRows < NP >> kTop) {
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
  if constexpr (kTop > 4)
    if (m - i >= 4) group(std::integral_constant<int, 4>());
  if constexpr (kTop > 2)
    if (m - i >= 2) group(std::integral_constant<int, 2>());
  if (m - i >= 1) group(std::integral_constant<int, 1>());
}

/// c = op(a) op(b) for many rows and a small op(b) (k, n <= kRegisterCols): op(b) padded into a
/// tile, result rows accumulated in registers. 1000x10x10 f64: 10 µs against 20 µs for Eigen's
/// blocked product, which packs both operands.
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
  auto row_b = [&](int64_t l) { return l < first_tail ? b + l * n : static_cast<const A*>(padded[l - first_tail]); };
  auto a_at = [&](int64_t i, int64_t l) { return TransA ? a[l * m + i] : a[i * k + l]; };
  if (n <= kPacketSize<A>) register_product<1, true>(c, m, n, k, row_b, a_at);
  else if constexpr (W > kPacketSize<A>) register_product<2, true>(c, m, n, k, row_b, a_at);
}

/// Calls f(std::integral_constant<int, v>) for v in [2, 4]; false for other v.
template <class F> bool with_small(int64_t v, F&& f) {
  switch (v) {
    case 2: f(std::integral_constant<int, 2>()); return true;
    case 3: f(std::integral_constant<int, 3>()); return true;
    case 4: f(std::integral_constant<int, 4>()); return true;
    default: return false;
  }
}

/// Runs the register kernel `path` (thin_fixed, short_fixed, thin_register or short_register, as
/// choose_register_product chose it for these sizes and a floating A).
template <bool TransA, bool TransB, class A>
void run_register_product(ProductPath path, const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (path) {
      case ProductPath::thin_fixed:
        with_small(k, [&](auto kk) {
          with_small(
              n, [&](auto nn) { thin_product<decltype(kk)::value, decltype(nn)::value, TransA, TransB>(a, b, c, m); });
        });
        return;
      case ProductPath::short_fixed:
        with_small(m, [&](auto mm) {
          with_small(
              n, [&](auto nn) { short_product<decltype(mm)::value, decltype(nn)::value, TransA, TransB>(a, b, c, k); });
        });
        return;
      case ProductPath::thin_register: thin_register_product<TransA, TransB>(a, b, c, m, n, k); return;
      case ProductPath::short_register:
        if constexpr (!TransB) short_register_product<TransA>(a, b, c, m, n, k);
        return;
      default: return;
    }
  }
  (void)path, (void)a, (void)b, (void)c, (void)m, (void)n, (void)k;
}

/// c = op(a) op(b) through the register kernel choose_register_product picks; false (nothing
/// written) when none takes the product.
template <bool TransA, bool TransB, class A>
bool thin_dispatch(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  const ProductPath path = choose_register_product(m, n, k, kAccDType<A>, TransB);
  if (path == ProductPath::none) return false;
  run_register_product<TransA, TransB>(path, a, b, c, m, n, k);
  return true;
}

}  // namespace fluxion::cpu::gemm_detail
