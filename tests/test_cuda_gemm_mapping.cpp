// The cuBLAS argument mapping of dot_general (backends/cuda/gemm_mapping.hpp), tested without a
// GPU: the mapped call is executed by a column-major reference of cublas<t>gemmStridedBatched's
// contract (transposes, leading dimensions, batch strides) on the operands as the CUDA backend
// would pass them (permuted first where the mapping says so), and compared with the CPU's
// dot_general, for named layouts and a sweep of random ones (batch dims, several contracting
// dims, free dims in any order, extents of 1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/gemm_mapping.hpp"
#include "fluxion/fluxion.hpp"
#include "fluxion/lax.hpp"
#include "samples.hpp"

namespace fx = fluxion;
using fluxion::cuda::DotGeneralGemm;
using fluxion::cuda::GemmCall;
using fluxion::cuda::map_dot_general;

namespace {

using Dims = std::vector<int64_t>;
using Pair = std::pair<Dims, Dims>;

/// The operand's bytes as the CUDA backend passes them: permuted first when the mapping says so.
std::vector<double> operand_bytes(const fx::Tensor& x, const Dims& perm) {
  const fx::Tensor y = perm.empty() ? x : fx::lax::transpose(x, perm);
  return y.to_vector<double>();
}

/// Runs `g` on lhs and rhs and returns the output's row-major elements.
std::vector<double> run_mapped(const DotGeneralGemm& g, const fx::Tensor& lhs, const fx::Tensor& rhs, int64_t size) {
  std::vector<double> out(static_cast<size_t>(size), 0.0);
  if (g.empty) return out;
  const std::vector<double> a = operand_bytes(rhs, g.rhs_perm), b = operand_bytes(lhs, g.lhs_perm);
  fx::cuda::reference_gemm(g.call, a.data(), b.data(), out.data());  // cuBLAS's contract, its checks too
  return out;
}

/// Checks the mapping of dot_general(lhs, rhs) against the CPU's dot_general, exactly (the
/// operands are multiples of 1/16: every sum is exact). Returns the mapping.
DotGeneralGemm check_layout(const Dims& ls, const Dims& rs, const Pair& contract, const Pair& batch, uint64_t seed) {
  CAPTURE(fx::Shape(ls));
  CAPTURE(fx::Shape(rs));
  CAPTURE(fx::Shape(contract.first));
  CAPTURE(fx::Shape(contract.second));
  CAPTURE(fx::Shape(batch.first));
  CAPTURE(fx::Shape(batch.second));
  const fx::Tensor lhs = fx::testing::grid_tensor(fx::Shape(ls), fx::f64, seed);
  const fx::Tensor rhs = fx::testing::grid_tensor(fx::Shape(rs), fx::f64, seed + 1);
  const fx::Tensor want = fx::lax::dot_general(lhs, rhs, contract, batch);
  const DotGeneralGemm g = map_dot_general(ls, rs, contract, batch);
  CHECK(g.empty == (want.size() == 0));
  const std::vector<double> got = run_mapped(g, lhs, rhs, want.size());
  CHECK(got == want.to_vector<double>());
  return g;
}

}  // namespace

TEST_CASE("cuBLAS mapping: matrix products read in place, transposed or not, batched or not") {
  // x @ w: A = w (n x k column-major, op N), B = x.
  DotGeneralGemm g = check_layout({5, 3}, {3, 4}, {{1}, {0}}, {}, 1);
  CHECK(g.lhs_perm.empty());
  CHECK(g.rhs_perm.empty());
  CHECK_FALSE(g.call.trans_a);
  CHECK_FALSE(g.call.trans_b);
  CHECK(g.call.m == 4);
  CHECK(g.call.n == 5);
  CHECK(g.call.k == 3);
  // x @ wᵀ (w stored [n, k]) and xᵀ @ w (x stored [k, m]): transposes, no copies.
  g = check_layout({5, 3}, {4, 3}, {{1}, {1}}, {}, 2);
  CHECK((g.lhs_perm.empty() && g.rhs_perm.empty() && g.call.trans_a && !g.call.trans_b));
  g = check_layout({3, 5}, {3, 4}, {{0}, {0}}, {}, 3);
  CHECK((g.lhs_perm.empty() && g.rhs_perm.empty() && !g.call.trans_a && g.call.trans_b));
  // Batched [b, m, k] @ [b, k, n]: one strided-batched call.
  g = check_layout({6, 5, 3}, {6, 3, 4}, {{2}, {1}}, {{0}, {0}}, 4);
  CHECK((g.lhs_perm.empty() && g.rhs_perm.empty()));
  CHECK(g.call.batch == 6);
  CHECK(g.call.stride_a == 12);
  CHECK(g.call.stride_b == 15);
  CHECK(g.call.stride_c == 20);
  // Attention's scores q kᵀ per head: [b, h, s, d] x [b, h, s, d] contracting d.
  g = check_layout({2, 3, 5, 4}, {2, 3, 6, 4}, {{3}, {3}}, {{0, 1}, {0, 1}}, 5);
  CHECK((g.lhs_perm.empty() && g.rhs_perm.empty() && g.call.trans_a));
  CHECK(g.call.batch == 6);
  // Vectors, inner and outer products, and a batch dim that is not leading: copies.
  check_layout({7}, {7}, {{0}, {0}}, {}, 6);
  check_layout({7}, {3}, {{}, {}}, {}, 7);
  check_layout({3, 7}, {7}, {{1}, {0}}, {}, 8);
  g = check_layout({5, 6, 3}, {6, 3, 4}, {{2}, {1}}, {{1}, {0}}, 9);
  CHECK_FALSE(g.lhs_perm.empty());
  // Two contracting dims given in an order that only a sorted pairing reads in place.
  g = check_layout({5, 2, 3}, {2, 3, 4}, {{2, 1}, {1, 0}}, {}, 10);
  CHECK((g.lhs_perm.empty() && g.rhs_perm.empty()));
  CHECK(g.call.k == 6);
}

TEST_CASE("cuBLAS mapping: empty outputs make no call; k = 0 gives zeros") {
  CHECK(check_layout({0, 3}, {3, 4}, {{1}, {0}}, {}, 11).empty);
  CHECK(check_layout({2, 3}, {3, 0}, {{1}, {0}}, {}, 12).empty);
  CHECK(check_layout({0, 2, 3}, {0, 3, 4}, {{2}, {1}}, {{0}, {0}}, 13).empty);
  const DotGeneralGemm g = check_layout({2, 0}, {0, 4}, {{1}, {0}}, {}, 14);
  CHECK_FALSE(g.empty);
  CHECK(g.call.k == 0);
}

TEST_CASE("cuBLAS mapping: a sweep of random dot_general layouts gives the CPU's products") {
  std::mt19937_64 rng(2026);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int in_place = 0, cases = 0;
  for (int t = 0; t < 600; ++t) {
    const int nb = pick(0, 2), nc = pick(0, 2), nlf = pick(0, 2), nrf = pick(0, 2);
    Dims bext, cext, lfext, rfext;
    for (int i = 0; i < nb; ++i) bext.push_back(pick(1, 3));
    for (int i = 0; i < nc; ++i) cext.push_back(pick(1, 4));
    for (int i = 0; i < nlf; ++i) lfext.push_back(pick(1, 4));
    for (int i = 0; i < nrf; ++i) rfext.push_back(pick(1, 4));
    // Logical dims in the order [batch, contracting, free], placed at random physical positions.
    auto place = [&](const Dims& free_ext, Dims& batch_pos, Dims& contract_pos) {
      const int rank = nb + nc + static_cast<int>(free_ext.size());
      Dims where(static_cast<size_t>(rank));
      std::iota(where.begin(), where.end(), int64_t(0));
      if (pick(0, 3) != 0) std::shuffle(where.begin(), where.end(), rng);  // a quarter stay in order
      Dims shape(static_cast<size_t>(rank));
      int logical = 0;
      for (int i = 0; i < nb; ++i, ++logical) batch_pos.push_back(where[logical]), shape[where[logical]] = bext[i];
      for (int i = 0; i < nc; ++i, ++logical) contract_pos.push_back(where[logical]), shape[where[logical]] = cext[i];
      for (int64_t e : free_ext) shape[where[logical++]] = e;
      return shape;
    };
    Pair batch, contract;
    const Dims ls = place(lfext, batch.first, contract.first);
    const Dims rs = place(rfext, batch.second, contract.second);
    CAPTURE(t);
    const DotGeneralGemm g = check_layout(ls, rs, contract, batch, static_cast<uint64_t>(100 + t));
    in_place += g.lhs_perm.empty() && g.rhs_perm.empty();
    ++cases;
  }
  MESSAGE("[cuBLAS mapping] " << in_place << " of " << cases << " random layouts read both operands in place");
  CHECK(in_place > cases / 8);  // the in-order quarter, at least
}
