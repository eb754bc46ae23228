/// CPU dot_general: operands viewed as per-batch row-major matrices (copied into that layout only
/// when their dims are not already in it), then each product computed by the path that
/// choose_product (gemm_choice.hpp) picks: plain loops, a dot, a GEMV, register kernels, panels,
/// or Eigen's, OpenBLAS's or oneDNN's product. The entry points are here: dot_general,
/// strided_gemm (gram's block rows) and product_tile (tiles); the kernels are in gemm_*.hpp.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cpu/gemm_choice.hpp"
#include "backends/cpu/gemm_dot_general.hpp"
#include "backends/cpu/gemm_libraries.hpp"
#include "backends/cpu/gemm_panel.hpp"
#include "backends/cpu/gemm_register.hpp"
#include "backends/cpu/gemm_vector.hpp"
#include "backends/cpu/kernel_threads.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion::cpu {
namespace gemm_detail {

using cpu::kernel_threads;
using cpu::kLargeWork;

/// c (m x n, leading dim ldc) = op(a) op(b) for row-major a stored m x k (k x m when TransA,
/// leading dim lda) and b stored k x n (n x k when TransB, leading dim ldb) by one of the large
/// paths `choice` names (dnnl, blas, split_panels, split_eigen, panel, eigen). A library that
/// declines the call (sizes past its int arguments, an error) leaves the product to Eigen's. On
/// several threads, dnnl and eigen run as slices over the pool (split_product), like split_*.
template <bool TransA, bool TransB, class A> void run_strided(const ProductChoice& choice, const A* a, int64_t lda,
                                                              const A* b, int64_t ldb, A* c, int64_t ldc, int64_t m,
                                                              int64_t n, int64_t k) {
  switch (choice.path) {
    case ProductPath::dnnl:
      if (choice.threads > 1)
        return split_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, choice.threads, SliceKernel::dnnl);
      if (dnnl_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k)) return;
      break;
    case ProductPath::blas:
      if (blas_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k)) return;
      break;
    case ProductPath::split_panels:
    case ProductPath::split_eigen:  // f64 only (the panels are compiled for f64 alone)
      if constexpr (std::is_same_v<A, double>)
        return split_product<TransA, TransB>(
            a, lda, b, ldb, c, ldc, m, n, k, choice.threads,
            choice.path == ProductPath::split_panels ? SliceKernel::panels : SliceKernel::eigen);
      break;
    case ProductPath::panel:
      if constexpr (std::is_same_v<A, double>) return panel_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k);
      break;
    default: break;
  }
  if (choice.threads > 1)
    return split_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k, choice.threads, SliceKernel::eigen);
  eigen_product<TransA, TransB>(a, lda, b, ldb, c, ldc, m, n, k);
}

/// run_strided's product, m, n, k >= 1, on up to kernel_threads() threads, by the path
/// choose_product picks for a strided product.
template <bool TransA, bool TransB, class A> void strided_gemm(const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                                                               int64_t ldc, int64_t m, int64_t n, int64_t k) {
  ProductLayout layout;
  layout.source = ProductSource::strided, layout.trans_a = TransA, layout.trans_b = TransB;
  const ProductChoice choice = choose_product(m, n, k, kAccDType<A>, kernel_threads(), layout);
  run_strided<TransA, TransB>(choice, a, lda, b, ldb, c, ldc, m, n, k);
}

/// c = op(a) op(b) for one batch (contiguous blocks, m, n, k >= 1) by `choice`'s path.
template <bool TransA, bool TransB, class A>
void run_matrices(const ProductChoice& choice, const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  switch (choice.path) {
    case ProductPath::dot:  // vector . vector (both blocks are plain k-vectors)
      c[0] = Eigen::Map<const ColVec<A>>(a, k).dot(Eigen::Map<const ColVec<A>>(b, k));
      return;
    case ProductPath::gemv:
    case ProductPath::blas_gemv:
    case ProductPath::split_gemv:
      // matrix * vector (the lhs is stored m x k, or k x m when TransA), or vector * matrix:
      // c = op(b)ᵀ a (the rhs is stored k x n, or n x k when TransB).
      if (n == 1) gemv(choice, TransA, a, TransA ? k : m, TransA ? m : k, b, c);
      else gemv(choice, !TransB, b, TransB ? n : k, TransB ? k : n, a, c);
      return;
    case ProductPath::outer:  // no packing
      Eigen::Map<RowMajorMat<A>>(c, m, n).noalias() =
          Eigen::Map<const ColVec<A>>(a, m) * Eigen::Map<const RowVec<A>>(b, n);
      return;
    case ProductPath::thin_fixed:
    case ProductPath::short_fixed:
    case ProductPath::thin_register:
    case ProductPath::short_register: return run_register_product<TransA, TransB>(choice.path, a, b, c, m, n, k);
    case ProductPath::lazy:
      Eigen::Map<RowMajorMat<A>>(c, m, n).noalias() =
          lhs_matrix<TransA>(a, m, k).lazyProduct(rhs_matrix<TransB>(b, k, n));
      return;
    case ProductPath::stacked_gemv:
      if constexpr (!TransA && std::is_floating_point_v<A>)
        return stacked_gemv<TransB>(a, b, c, m, n, k, choice.threads);
      break;
    default: break;
  }
  run_strided<TransA, TransB>(choice, a, TransA ? m : k, b, TransB ? k : n, c, n, m, n, k);
}

/// c[b] = lhs[b] * rhs[b] for every batch b; blocks are contiguous and m, n, k >= 1. One choice
/// for all batches; batches shared out over the pool's threads (batch_threads), each on one.
template <bool TransA, bool TransB, class A>
void batched_product(const A* a, const A* b, A* c, int64_t batch, int64_t m, int64_t n, int64_t k) {
  ProductLayout layout;
  layout.trans_a = TransA, layout.trans_b = TransB, layout.batch = batch;
  const ProductChoice choice = choose_product(m, n, k, kAccDType<A>, kernel_threads(), layout);
  auto one = [&](int64_t i) {
    run_matrices<TransA, TransB>(choice, a + i * m * k, b + i * k * n, c + i * m * n, m, n, k);
  };
  if (choice.batch_threads > 1) {
    const int64_t grain = std::max<int64_t>(1, batch / (int64_t{choice.batch_threads} * kRangesPerThread));
    return parallel_for(batch, choice.batch_threads, grain, [&](int64_t i, int) { one(i); });
  }
  for (int64_t i = 0; i < batch; ++i) one(i);
}

/// dot_general through one (batched) GEMM / GEMV / dot after choosing the operand layouts.
template <class A> void general_dot_general(const A* lhs, const std::vector<int64_t>& ls, const A* rhs,
                                            const std::vector<int64_t>& rs, const AxisPair& contract,
                                            const AxisPair& batch, A* out) {
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

/// c = rows [r0, r1) x columns [c0, c1) of the product `v` (leading dim ldc), on the calling
/// thread, by the path choose_product picks for a tile.
template <bool TransA, bool TransB, class A> void product_tile(const MatrixView& v, const A* lhs, const A* rhs,
                                                               int64_t r0, int64_t r1, int64_t c0, int64_t c1, A* c,
                                                               int64_t ldc) {
  const int64_t m = r1 - r0, n = c1 - c0, k = v.k;
  const A* a = lhs + (TransA ? r0 : r0 * k);
  const A* b = rhs + (TransB ? c0 * k : c0);
  const int64_t lda = TransA ? v.m : k, ldb = TransB ? k : v.n;
  ProductLayout layout;
  layout.source = ProductSource::tile, layout.trans_a = TransA, layout.trans_b = TransB;
  run_strided<TransA, TransB>(choose_product(m, n, k, kAccDType<A>, 1, layout), a, lda, b, ldb, c, ldc, m, n, k);
}

/// The kernels for the element types of dot_general (Acc of i32, i64, f32, f64) are compiled
/// once, in primitives/dot_general.cpp (FLUXION_GEMM_ALL_KERNELS() there). Other files that
/// include this header only declare them (`extern template`) and link to those, instead of
/// compiling Eigen's products again (tests/test_dot_tiny.cpp took 80 s at -O3, 98 s under ASan).
// clang-format off
#define FLUXION_GEMM_THIN(EXTERN, A, TA, TB) \
  EXTERN template bool thin_dispatch<TA, TB, A>(const A*, const A*, A*, int64_t, int64_t, int64_t);
#define FLUXION_GEMM_KERNELS(EXTERN, A)                                                                           \
  EXTERN template bool tiny_dot_general<A>(const A*, const std::vector<int64_t>&, const A*,                       \
                                           const std::vector<int64_t>&, const AxisPair&, const AxisPair&, A*);    \
  EXTERN template void general_dot_general<A>(const A*, const std::vector<int64_t>&, const A*,                    \
                                              const std::vector<int64_t>&, const AxisPair&, const AxisPair&, A*); \
  FLUXION_GEMM_THIN(EXTERN, A, false, false)                                                                      \
  FLUXION_GEMM_THIN(EXTERN, A, false, true)                                                                       \
  FLUXION_GEMM_THIN(EXTERN, A, true, false)                                                                       \
  FLUXION_GEMM_THIN(EXTERN, A, true, true)
#define FLUXION_GEMM_ALL_KERNELS(EXTERN) \
  FLUXION_GEMM_KERNELS(EXTERN, float)    \
  FLUXION_GEMM_KERNELS(EXTERN, double)   \
  FLUXION_GEMM_KERNELS(EXTERN, uint32_t) \
  FLUXION_GEMM_KERNELS(EXTERN, uint64_t)
// clang-format on
#ifndef FLUXION_GEMM_DEFINE_KERNELS
FLUXION_GEMM_ALL_KERNELS(extern)
#endif

}  // namespace gemm_detail

/// out = dot_general(lhs, rhs) with validated `contract` and `batch` pairs: output dims are batch
/// (lhs order), lhs free, rhs free. Integer products wrap.
template <class T> void dot_general(const T* lhs_t, const std::vector<int64_t>& ls, const T* rhs_t,
                                    const std::vector<int64_t>& rs, const AxisPair& contract, const AxisPair& batch,
                                    T* out_t) {
  using namespace gemm_detail;
  using A = Acc<T>;
  const A* lhs = reinterpret_cast<const A*>(lhs_t);
  const A* rhs = reinterpret_cast<const A*>(rhs_t);
  A* out = reinterpret_cast<A*>(out_t);
  if (!tiny_dot_general(lhs, ls, rhs, rs, contract, batch, out))
    general_dot_general(lhs, ls, rhs, rs, contract, batch, out);
}

}  // namespace fluxion::cpu
