/// How the CPU dot_general sees its operands: the layout planning that views each batch as
/// row-major matrices (in place, possibly transposed, or after a permute copy), the tiny products
/// (plain loops over the shapes) and the matrix view of a batch-free product that tiles compute
/// by rectangles.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <utility>
#include <vector>

#include "backends/cpu/gemm_choice.hpp"
#include "backends/cpu/gemm_libraries.hpp"
#include "backends/cpu/permute.hpp"
#include "backends/cpu/small_vector.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion::cpu::gemm_detail {

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

/// How a tiny product reads one operand: the element stride of its free index (free dims
/// flattened: none, one, or both dims of a rank-2 operand, which are then contiguous) and of each
/// contracting pair.
struct TinyOperand {
  int64_t free_extent = 1, free_stride = 0;
  int64_t pair_stride[2] = {0, 0};
};

/// `op` for an operand of shape `s` (rank <= 2) contracted over `c` (validated dims).
inline void tiny_operand(const std::vector<int64_t>& s, const std::vector<int64_t>& c, TinyOperand& op) {
  int64_t strides[2] = {1, 1};
  if (s.size() == 2) strides[0] = s[1];
  bool contracted[2] = {false, false};
  for (size_t p = 0; p < c.size(); ++p) {
    contracted[c[p]] = true;
    op.pair_stride[p] = strides[c[p]];
  }
  int free_count = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    if (contracted[d]) continue;
    op.free_extent *= s[d];
    if (free_count++ == 0) op.free_stride = strides[d];
  }
  if (free_count == 2) op.free_stride = 1;  // row-major: the flattened index walks both dims
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

/// dot_general through tiny_product when choose_product would pick `tiny` (tiny_product_fits); false (nothing done)
/// otherwise. The operands' sizes are read only where the rule can apply (no batch dims, ranks
/// <= 2): the rule itself rejects the others from the layout alone.
template <class A> bool tiny_dot_general(const A* lhs, const std::vector<int64_t>& ls, const A* rhs,
                                         const std::vector<int64_t>& rs, const AxisPair& contract,
                                         const AxisPair& batch, A* out) {
  ProductLayout layout;
  layout.source = ProductSource::dot_general;
  layout.batch_dims = !batch.first.empty();
  layout.max_rank = static_cast<int64_t>(std::max(ls.size(), rs.size()));
  TinyOperand l, r;
  int64_t k[2] = {1, 1};
  if (!layout.batch_dims && layout.max_rank <= 2) {
    tiny_operand(ls, contract.first, l);
    tiny_operand(rs, contract.second, r);
    for (size_t p = 0; p < contract.first.size(); ++p) k[p] = ls[static_cast<size_t>(contract.first[p])];
    for (int64_t d : ls) layout.max_dim = std::max(layout.max_dim, d);
    for (int64_t d : rs) layout.max_dim = std::max(layout.max_dim, d);
  }
  if (!tiny_product_fits(l.free_extent, r.free_extent, k[0] * k[1], layout)) return false;
  if (contract.first.size() < 2) tiny_product<true>(lhs, rhs, out, l, r, k);  // the common case, k[1] == 1
  else tiny_product<false>(lhs, rhs, out, l, r, k);
  return true;
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

}  // namespace fluxion::cpu::gemm_detail
