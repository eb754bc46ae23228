/// How a dot_general runs as one cuBLAS strided-batched GEMM: a pure function of the operand
/// shapes and dimension numbers, host C++ only (no CUDA header), so that it is tested on any
/// machine by executing the mapped call with a column-major reference GEMM
/// (tests/test_cuda_gemm_mapping.cpp).
///
/// Fluxion's arrays are row-major and cuBLAS is column-major. A row-major M x N matrix is the
/// column-major N x M matrix of the same bytes, so the row-major product C = A B of each batch is
/// computed as the column-major Cᵀ = Bᵀ Aᵀ: cuBLAS's first operand is dot_general's rhs, its
/// second the lhs, with m = N, n = M. An operand whose dims are not in the order
/// [batch, free, contracting] (lhs) or [batch, contracting, free] (rhs), or these with free and
/// contracting swapped (read transposed), is first permuted into that order (`*_perm`).
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace fluxion::cuda {

/// The arguments of cublas<t>gemmStridedBatched (or cublasGemmStridedBatchedEx) after the handle:
/// column-major C[b] (m x n, leading dimension ldc) = op(A[b]) (m x k) op(B[b]) (k x n), with
/// X[b] = X + b * stride_x. `trans_*` is CUBLAS_OP_T when true, CUBLAS_OP_N when false.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t batch = 1;
};

/// A dot_general as one GemmCall. A is the rhs and B the lhs (see the file comment), each read
/// in place when its permutation is empty, else after a transpose of the operand to `*_perm`
/// (output dim i = input dim perm[i]). The output is written in place: dot_general's output
/// dims are [batch, lhs free, rhs free], row-major. `empty`: the output has no elements (no call).
struct DotGeneralGemm {
  std::vector<int64_t> lhs_perm, rhs_perm;
  GemmCall call;
  bool empty = false;
};

namespace gemm_mapping_detail {

/// Dims of `rank` in neither `a` nor `b`, in increasing order.
inline std::vector<int64_t> free_dims(int64_t rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) f.push_back(d);
  return f;
}

inline int64_t extent(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[static_cast<size_t>(d)];
  return n;
}

inline std::vector<int64_t> concat(std::initializer_list<const std::vector<int64_t>*> parts) {
  std::vector<int64_t> r;
  for (const std::vector<int64_t>* p : parts) r.insert(r.end(), p->begin(), p->end());
  return r;
}

/// True when reading `shape`'s dims in `order` walks its bytes in row-major order: the order is
/// the identity once dims of extent 1 (which move nothing) are left out.
inline bool in_place_order(const std::vector<int64_t>& shape, const std::vector<int64_t>& order) {
  int64_t last = -1;
  for (int64_t d : order) {
    if (shape[static_cast<size_t>(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

/// How one operand is read: in place (possibly transposed) or after a permute to `direct`.
struct OperandRead {
  bool copy = false, trans = false;
};

/// `direct` is the operand's [batch, rows, cols] order, `swapped` the transposed one.
inline OperandRead read_operand(const std::vector<int64_t>& shape, const std::vector<int64_t>& direct,
                                const std::vector<int64_t>& swapped) {
  if (in_place_order(shape, direct)) return {false, false};
  if (in_place_order(shape, swapped)) return {false, true};
  return {true, false};
}

}  // namespace gemm_mapping_detail

/// The mapping of dot_general(lhs, rhs) with contracting dims `contract` (lhs dims, rhs dims,
/// paired by position) and batch dims `batch` (the same): dims validated by the shape rule.
/// The contracting pairs are tried in the given order, then sorted by the lhs's and by the rhs's
/// dims (pairs kept together), and the order that reads the most operands in place wins.
inline DotGeneralGemm map_dot_general(const std::vector<int64_t>& lhs, const std::vector<int64_t>& rhs,
                                      const std::pair<std::vector<int64_t>, std::vector<int64_t>>& contract,
                                      const std::pair<std::vector<int64_t>, std::vector<int64_t>>& batch) {
  using namespace gemm_mapping_detail;
  const std::vector<int64_t>&lb = batch.first, &rb = batch.second;
  const std::vector<int64_t> lf = free_dims(static_cast<int64_t>(lhs.size()), contract.first, lb);
  const std::vector<int64_t> rf = free_dims(static_cast<int64_t>(rhs.size()), contract.second, rb);
  DotGeneralGemm g;
  const int64_t b = extent(lhs, lb), m = extent(lhs, lf), n = extent(rhs, rf), k = extent(lhs, contract.first);
  g.empty = b == 0 || m == 0 || n == 0;
  // The pair orders to try; the first that reads both operands in place (else the fewest copies).
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> orders{contract};
  for (bool by_rhs : {false, true}) {
    std::vector<size_t> idx(contract.first.size());
    std::iota(idx.begin(), idx.end(), size_t(0));
    const std::vector<int64_t>& key = by_rhs ? contract.second : contract.first;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t i, size_t j) { return key[i] < key[j]; });
    std::pair<std::vector<int64_t>, std::vector<int64_t>> o;
    for (size_t i : idx) o.first.push_back(contract.first[i]), o.second.push_back(contract.second[i]);
    orders.push_back(std::move(o));
  }
  OperandRead best_l, best_r;
  std::vector<int64_t> lc, rc;
  int best_copies = 3;
  for (const auto& [olc, orc] : orders) {
    const OperandRead l = read_operand(lhs, concat({&lb, &lf, &olc}), concat({&lb, &olc, &lf}));
    const OperandRead r = read_operand(rhs, concat({&rb, &orc, &rf}), concat({&rb, &rf, &orc}));
    const int copies = int(l.copy) + int(r.copy);
    if (copies < best_copies) best_copies = copies, best_l = l, best_r = r, lc = olc, rc = orc;
  }
  if (best_l.copy) g.lhs_perm = concat({&lb, &lf, &lc});
  if (best_r.copy) g.rhs_perm = concat({&rb, &rc, &rf});
  // Column-major Cᵀ (n x m of the row-major output) = op(A) op(B), A = rhs, B = lhs.
  GemmCall& c = g.call;
  c.m = n, c.n = m, c.k = k, c.batch = b;
  // rhs row-major [k, n] is column-major n x k (ld n): op N; [n, k] is k x n (ld k): op T.
  c.trans_a = best_r.trans;
  c.lda = std::max<int64_t>(1, best_r.trans ? k : n);
  // lhs row-major [m, k] is column-major k x m (ld k): op N; [k, m] is m x k (ld m): op T.
  c.trans_b = best_l.trans;
  c.ldb = std::max<int64_t>(1, best_l.trans ? m : k);
  c.ldc = std::max<int64_t>(1, n);
  c.stride_a = k * n, c.stride_b = m * k, c.stride_c = m * n;
  return g;
}

}  // namespace fluxion::cuda
