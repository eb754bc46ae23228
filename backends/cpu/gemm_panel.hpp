/// The register panels of the CPU GEMM paths (f64 products of short contractions, narrow
/// results, tiles): op(b) packed a panel at a time into L1, op(a) read in place, result rows
/// accumulated in registers; and split_product, slices of a product over the thread pool.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

#include "backends/cpu/gemm_choice.hpp"
#include "backends/cpu/gemm_libraries.hpp"
#include "backends/cpu/gemm_register.hpp"
#include "backends/cpu/thread_pool.hpp"

namespace fluxion::cpu::gemm_detail {

/// Rows and packets of panel_product's register block: as many accumulators as 3/4 of the
/// vector registers hold (6 x 4 with AVX-512's 32 registers, 3 x 4 with 16), the rest for one
/// packed row of b and the broadcast element of a.
inline constexpr int kPanelPackets = 4;
inline constexpr int kPanelRows = static_cast<int>(EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS) >= 32 ? 6 : 3;
/// Contraction steps of one panel: the choice's panel_max_k, so that a product it sends here has
/// one block of k.
inline constexpr int64_t kPanelDepth = kProductThresholds.panel_max_k;
/// Rows of op(a) run against each panel in turn: at most 384 x 128 f64 (384 KB, in L2) are read
/// again per panel, however many rows the product has (tiles have up to about 250).
inline constexpr int64_t kPanelRowBlock = 64 * kPanelRows;

/// c (m x n, leading dim ldc) = op(a) op(b) on the calling thread: op(b)'s columns are packed
/// kPanelPackets packets at a time into a panel of at most kPanelDepth x W (zero padded; it stays
/// in L1), and each group of kPanelRows result rows is accumulated over the panel's rows in
/// registers against it, then stored once. Unlike Eigen's product, c is not zero filled first and
/// op(a) is read in place (register_rows broadcasts its elements), so nothing but the panel is
/// packed. Contractions longer than kPanelDepth run in blocks of it, each block after the first
/// added into c (through `spill`).
template <bool TransA, bool TransB, class A> void panel_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                                                                int64_t ldc, int64_t m, int64_t n, int64_t k) {
  constexpr int NP = kPanelPackets, W = NP * kPacketSize<A>;
  alignas(64) A panel[kPanelDepth * W];
  alignas(64) A spill[kPanelRows * W];  // rows of a narrower panel or a later k block, before c
  for (int64_t i0 = 0; i0 < m; i0 += kPanelRowBlock) {
    const int64_t i1 = std::min(m, i0 + kPanelRowBlock);
    for (int64_t j0 = 0; j0 < n; j0 += W) {
      const int64_t w = std::min<int64_t>(W, n - j0);
      for (int64_t l0 = 0; l0 < k; l0 += kPanelDepth) {
        const int64_t kb = std::min(kPanelDepth, k - l0);
        // Whole panels of a row-major op(b) are read where they are (a copy per row was a call
        // to memmove of 32 elements: 8 % of a 1000 x 32 x 32 batched product).
        const bool in_place = !TransB && w == W;
        if constexpr (TransB) {
          // Row by row of b: one sequential read of w rows. Column by column (32 rows at once)
          // the reads of a b not in cache stalled: a 1000 x 6400 x 64 product (3.3 MB of b,
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
        int64_t i = i0;
        auto rows = [&](auto count) {
          constexpr int R = decltype(count)::value;
          if (w == W && l0 == 0) {
            register_rows<R, NP>(i, kb, row_b, a_at, c + i * ldc + j0, ldc);
          } else {
            register_rows<R, NP>(i, kb, row_b, a_at, spill, W);
            for (int r = 0; r < R; ++r) {
              A* out = c + (i + r) * ldc + j0;
              const A* in = spill + r * W;
              if (l0 == 0) std::copy(in, in + w, out);
              else
                for (int64_t j = 0; j < w; ++j) out[j] += in[j];
            }
          }
          i += R;
        };
        while (i1 - i >= kPanelRows) rows(std::integral_constant<int, kPanelRows>());
        if constexpr (kPanelRows > 4)
          if (i1 - i >= 4) rows(std::integral_constant<int, 4>());
        if (i1 - i >= 2) rows(std::integral_constant<int, 2>());
        if (i1 - i >= 1) rows(std::integral_constant<int, 1>());
      }
    }
  }
}

inline constexpr int64_t kPanelNarrow = 64;

/// What computes each slice of split_product, on the thread that claimed it.
enum class SliceKernel : uint8_t { panels, eigen, dnnl };

/// Slices are at least this many rows (or columns) and start on multiples of kSliceAlign (whole
/// 64-byte lines of f32 results when sliced by columns).
inline constexpr int64_t kMinSlice = 32;
inline constexpr int64_t kSliceAlign = 16;

/// blas_product's product on `threads` threads of the pool, as slices of c (rows, or columns when
/// c is wider than tall), each computed on its own by `kernel` (panel_product for f64 only; dnnl
/// for f32, falling back to Eigen's when oneDNN declines). Several slices per thread
/// (parallel_ranges): a thread that starts late leaves one slice to wait for, not half the product.
/// The libraries pack all of the other operand per call, so their slices are at least 1/2 of a
/// thread's share (the panels pack nothing but one L1 panel at a time).
template <bool TransA, bool TransB, class A> void split_product(const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                                                                int64_t ldc, int64_t m, int64_t n, int64_t k,
                                                                int threads, SliceKernel kernel) {
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t min_slice =
      kernel == SliceKernel::panels ? kMinSlice : std::max(kMinSlice, extent / (2 * int64_t{std::max(threads, 1)}));
  parallel_ranges(extent, threads, min_slice, kSliceAlign, [&](int64_t s0, int64_t s1, int) {
    const A* as = by_rows ? a + (TransA ? s0 : s0 * lda) : a;
    const A* bs = by_rows ? b : b + (TransB ? s0 * ldb : s0);
    A* cs = by_rows ? c + s0 * ldc : c + s0;
    const int64_t ms = by_rows ? s1 - s0 : m, ns = by_rows ? n : s1 - s0;
    if constexpr (std::is_same_v<A, double>)
      if (kernel == SliceKernel::panels) return panel_product<TransA, TransB>(as, lda, bs, ldb, cs, ldc, ms, ns, k);
    if (kernel == SliceKernel::dnnl && dnnl_product<TransA, TransB>(as, lda, bs, ldb, cs, ldc, ms, ns, k)) return;
    eigen_product<TransA, TransB>(as, lda, bs, ldb, cs, ldc, ms, ns, k);
  });
}

}  // namespace fluxion::cpu::gemm_detail
