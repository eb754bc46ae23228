// The tiny dot_general path of the CPU kernel (backends/cpu/gemm.hpp: no batch dims, ranks <= 2,
// dims <= kTinyDim, at most kTinyWork multiply-adds, plain loops): taken exactly where it should be, and equal to the general
// (GEMM) path and to the reference kernel over every contracting layout of rank-0..2 operands,
// in f32, f64, i32 and i64 (integers wrap, so they must match exactly).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/reference/dot_general.hpp"
#include "samples.hpp"

namespace fx = fluxion;
using Dims = std::vector<int64_t>;

namespace {

/// One dot_general problem: shapes and contracting pairs (never batch dims: the tiny path's domain).
struct Case {
  Dims ls, rs;
  fx::AxisPair contract;
};

std::string describe(const Case& c) {
  std::ostringstream os;
  auto list = [&](const Dims& d) {
    os << "(";
    for (int64_t x : d) os << x << ",";
    os << ")";
  };
  list(c.ls), os << " x ", list(c.rs), os << " contract ", list(c.contract.first), os << "-", list(c.contract.second);
  return os.str();
}

int64_t count(const Dims& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Every ordered choice of `n` distinct dims out of `rank` (n <= rank <= 2).
std::vector<Dims> choices(int64_t rank, size_t n) {
  std::vector<Dims> out;
  if (n == 0) return {Dims{}};
  for (int64_t a = 0; a < rank; ++a) {
    if (n == 1) {
      out.push_back({a});
      continue;
    }
    for (int64_t b = 0; b < rank; ++b)
      if (b != a) out.push_back({a, b});
  }
  return out;
}

/// All layouts of rank-0..2 operands with 0..2 contracting pairs; pair p has size pair[p], the
/// free dims of the lhs (rhs) have sizes lfree (rfree).
std::vector<Case> layouts(const Dims& pair, int64_t lfree, int64_t rfree) {
  std::vector<Case> out;
  for (int64_t rl = 0; rl <= 2; ++rl)
    for (int64_t rr = 0; rr <= 2; ++rr)
      for (size_t np = 0; np <= static_cast<size_t>(std::min(rl, rr)); ++np)
        for (const Dims& lc : choices(rl, np))
          for (const Dims& rc : choices(rr, np)) {
            Case c{Dims(static_cast<size_t>(rl), lfree), Dims(static_cast<size_t>(rr), rfree), {lc, rc}};
            for (size_t p = 0; p < np; ++p) c.ls[lc[p]] = c.rs[rc[p]] = pair[p];
            out.push_back(c);
          }
  return out;
}

template <class T> std::vector<T> values(int64_t n, int seed) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 7 + seed * 13) % 11 - 5;
    if constexpr (std::is_integral_v<T>) v[static_cast<size_t>(i)] = static_cast<T>(k) * (T(1) << (sizeof(T) * 8 - 6));
    else v[static_cast<size_t>(i)] = static_cast<T>(k) * T(0.37) + T(0.01) * static_cast<T>(i);
  }
  return v;
}

/// Runs `c` through the tiny path, the general path and the reference; checks that the tiny path
/// is taken exactly within its limits and then agrees with both. Returns whether it was taken.
/// Integer values are large so that products wrap.
template <class T> bool check_case(const Case& c) {
  using A = fx::cpu::gemm_detail::Acc<T>;
  const fx::AxisPair batch;
  Dims out_shape;
  std::vector<bool> lused(c.ls.size()), rused(c.rs.size());
  for (int64_t d : c.contract.first) lused[static_cast<size_t>(d)] = true;
  for (int64_t d : c.contract.second) rused[static_cast<size_t>(d)] = true;
  for (size_t d = 0; d < c.ls.size(); ++d)
    if (!lused[d]) out_shape.push_back(c.ls[d]);
  for (size_t d = 0; d < c.rs.size(); ++d)
    if (!rused[d]) out_shape.push_back(c.rs[d]);
  const size_t n_out = static_cast<size_t>(count(out_shape));
  int64_t work = static_cast<int64_t>(n_out), largest = 0;
  for (int64_t d : c.contract.first) work *= c.ls[static_cast<size_t>(d)];
  for (int64_t d : c.ls) largest = std::max(largest, d);
  for (int64_t d : c.rs) largest = std::max(largest, d);
  const bool tiny = c.ls.size() <= 2 && c.rs.size() <= 2 && largest <= fx::cpu::kProductThresholds.tiny_dim &&
                    work <= fx::cpu::kProductThresholds.tiny_work;
  const std::vector<T> l = values<T>(count(c.ls), 1), r = values<T>(count(c.rs), 2);
  std::vector<T> fast(n_out, T(-99)), general(n_out, T(-77)), ref(n_out, T(-55));
  const bool took = fx::cpu::gemm_detail::tiny_dot_general(reinterpret_cast<const A*>(l.data()), c.ls,
                                                           reinterpret_cast<const A*>(r.data()), c.rs, c.contract,
                                                           batch, reinterpret_cast<A*>(fast.data()));
  CHECK_MESSAGE(took == tiny, describe(c));
  if (!took) return false;
  fx::cpu::gemm_detail::general_dot_general(reinterpret_cast<const A*>(l.data()), c.ls,
                                            reinterpret_cast<const A*>(r.data()), c.rs, c.contract, batch,
                                            reinterpret_cast<A*>(general.data()));
  fx::reference::dot_general(l.data(), c.ls, r.data(), c.rs, c.contract, batch, ref.data());
  // The first element where the tiny path differs from the reference or the general path.
  size_t bad = n_out;
  for (size_t i = 0; i < n_out && bad == n_out; ++i) {
    if constexpr (std::is_integral_v<T>) {
      if (fast[i] != ref[i] || fast[i] != general[i]) bad = i;
    } else {
      const double tol = (std::is_same_v<T, float> ? 1e-5 : 1e-13) * (1.0 + std::fabs(double(ref[i])));
      if (std::fabs(double(fast[i]) - double(ref[i])) > tol || std::fabs(double(fast[i]) - double(general[i])) > tol)
        bad = i;
    }
  }
  CHECK_MESSAGE(bad == n_out, describe(c), " differs at element ", bad);
  return true;
}

template <class T> void check_all_layouts() {
  int cases = 0, tiny = 0;
  // Typical sizes, sizes 1, the largest tiny dim, products just within and beyond kTinyWork,
  // and empty free or contracting dims.
  for (const auto& [pair, lfree, rfree] : std::vector<std::tuple<Dims, int64_t, int64_t>>{{{4, 3}, 2, 5},
                                                                                          {{1, 1}, 1, 1},
                                                                                          {{8, 8}, 4, 4},
                                                                                          {{4, 4}, 4, 4},
                                                                                          {{16, 16}, 16, 16},
                                                                                          {{16, 2}, 3, 16},
                                                                                          {{0, 3}, 2, 2},
                                                                                          {{3, 2}, 0, 4}})
    for (const Case& c : layouts(pair, lfree, rfree)) {
      tiny += check_case<T>(c);
      ++cases;
    }
  CHECK(tiny > 150);
  CHECK(tiny < cases);
}

}  // namespace

TEST_CASE("dot_general tiny path: every rank-0..2 layout equals the general path and the reference") {
  SUBCASE("f64") { check_all_layouts<double>(); }
  SUBCASE("f32") { check_all_layouts<float>(); }
  SUBCASE("i32") { check_all_layouts<int32_t>(); }
  SUBCASE("i64") { check_all_layouts<int64_t>(); }
}

TEST_CASE("dot_general tiny path: batch dims, rank 3, dims above kTinyDim and large products take the general path") {
  constexpr int64_t big = fx::cpu::kProductThresholds.tiny_dim + 1;
  CHECK_FALSE(check_case<double>({{big, 1}, {1, 1}, {{1}, {0}}}));
  CHECK_FALSE(check_case<double>({{1, big}, {big}, {{1}, {0}}}));
  CHECK_FALSE(check_case<double>({{2, 3, 4}, {4}, {{2}, {0}}}));
  CHECK_FALSE(check_case<float>({{3}, {big, 2}, {{}, {}}}));
  CHECK_FALSE(check_case<double>({{8, 8}, {8, 8}, {{1}, {0}}}));  // 512 multiply-adds
  CHECK(check_case<double>({{8, 4}, {4, 8}, {{1}, {0}}}));        // 256
  // Batch dims: the tiny path declines even for small operands.
  const std::vector<double> l = values<double>(6, 1), r = values<double>(6, 2);
  std::vector<double> out(2);
  CHECK_FALSE(
      fx::cpu::gemm_detail::tiny_dot_general(l.data(), {2, 3}, r.data(), {2, 3}, {{1}, {1}}, {{0}, {0}}, out.data()));
}

TEST_CASE("dot_general: matmul of small matrices and vectors through the public op") {
  fx::Tensor a = fx::reshape(fx::tensor<double>({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}), {2, 3});
  fx::Tensor v = fx::tensor<double>({1.0, -1.0, 2.0});
  CHECK(fx::matmul(a, v).to_vector<double>() == std::vector<double>{5, 11});
  CHECK(fx::matmul(v, fx::transpose(a, {1, 0})).to_vector<double>() == std::vector<double>{5, 11});
  fx::Tensor outer = fx::lax::dot_general(v, fx::tensor<double>({2.0, 3.0}), {{}, {}});
  CHECK(outer.to_vector<double>() == std::vector<double>{2, 3, -2, -3, 4, 6});
}

namespace {

/// The thin-product path (m rows, n and k in [2, 4]) and the short-product path (m and n in
/// [2, 4], any k) in the layout <TransA, TransB> against the
/// reference kernel, for every n, k and a few row counts; false once a difference is found.
template <bool TransA, bool TransB, class T> void check_thin_layout() {
  // Thin (many rows, k in [2, 4]) and short (m in [2, 4], a long contraction) shapes.
  std::vector<std::pair<int64_t, int64_t>> mk;
  for (int64_t m : {2, 5, 64, 1001})
    for (int64_t k = 2; k <= 4; ++k) mk.push_back({m, k});
  for (int64_t m = 2; m <= 4; ++m)
    for (int64_t k : {5, 300}) mk.push_back({m, k});
  for (const auto& [m, k] : mk)
    for (int64_t n = 2; n <= 4; ++n) {
      const Dims ls = TransA ? Dims{k, m} : Dims{m, k}, rs = TransB ? Dims{n, k} : Dims{k, n};
      const fx::AxisPair contract{{TransA ? 0 : 1}, {TransB ? 1 : 0}};
      const std::vector<T> l = values<T>(m * k, 3), r = values<T>(k * n, 4);
      std::vector<T> thin(static_cast<size_t>(m * n), T(-99)), ref(static_cast<size_t>(m * n), T(-55));
      REQUIRE(fx::cpu::gemm_detail::thin_dispatch<TransA, TransB>(l.data(), r.data(), thin.data(), m, n, k));
      fx::reference::dot_general(l.data(), ls, r.data(), rs, contract, {}, ref.data());
      size_t bad = thin.size();
      for (size_t i = 0; i < thin.size() && bad == thin.size(); ++i)
        if (std::fabs(double(thin[i]) - double(ref[i])) >
            (sizeof(T) == 4 ? 1e-5 : 1e-13) * (1 + std::fabs(double(ref[i]))))
          bad = i;
      CHECK_MESSAGE(bad == thin.size(), "m=", m, " n=", n, " k=", k, " TransA=", TransA, " TransB=", TransB,
                    " differs at ", bad);
    }
}

}  // namespace

namespace {

/// The register kernels (n up to kRegisterCols, and k or m as small) in the layout
/// <TransA, TransB> against the reference kernel; the elements after the m x n result (where the
/// kernels' full-packet row stores would spill) must be left alone.
template <bool TransA, bool TransB, class T> void check_register_layout() {
  constexpr int64_t most = fx::cpu::gemm_detail::kRegisterCols<T>;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes;  // m, n, k
  for (int64_t n : {2, 3, 5, 8, 9, 10, 15, 16})
    for (int64_t m : {1, 2, 3, 5, 7, 64, 1001})
      for (int64_t k : {1, 5, 10, 16})
        if (n <= most && k <= most) shapes.push_back({m, n, k});
  if (!TransB)  // short: small m, long contraction (9..16 rows: one pass of 12 or 16 rows)
    for (int64_t n : {5, 10, 16})
      for (int64_t m : {2, 5, 8, 9, 10, 12, 13, 16})
        for (int64_t k : {17, 300})
          if (n <= most && m <= most) shapes.push_back({m, n, k});
  for (const auto& [m, n, k] : shapes) {
    const Dims ls = TransA ? Dims{k, m} : Dims{m, k}, rs = TransB ? Dims{n, k} : Dims{k, n};
    const fx::AxisPair contract{{TransA ? 0 : 1}, {TransB ? 1 : 0}};
    const std::vector<T> l = values<T>(m * k, 3), r = values<T>(k * n, 4);
    const size_t size = static_cast<size_t>(m * n), guard = 40;
    std::vector<T> got(size + guard, T(-99)), ref(size, T(-55)), scale(size);
    REQUIRE(fx::cpu::gemm_detail::thin_dispatch<TransA, TransB>(l.data(), r.data(), got.data(), m, n, k));
    fx::reference::dot_general(l.data(), ls, r.data(), rs, contract, {}, ref.data());
    // Rounding is relative to the sum of |terms| (the values cancel): the product of |l| and |r|.
    std::vector<T> la(l), ra(r);
    for (T& v : la) v = std::fabs(v);
    for (T& v : ra) v = std::fabs(v);
    fx::reference::dot_general(la.data(), ls, ra.data(), rs, contract, {}, scale.data());
    size_t bad = got.size();
    for (size_t i = 0; i < size && bad == got.size(); ++i)
      if (std::fabs(double(got[i]) - double(ref[i])) > (sizeof(T) == 4 ? 1e-5 : 1e-13) * (1 + double(scale[i])))
        bad = i;
    for (size_t i = size; i < got.size() && bad == got.size(); ++i)
      if (got[i] != T(-99)) bad = i;
    CHECK_MESSAGE(bad == got.size(), "m=", m, " n=", n, " k=", k, " TransA=", TransA, " TransB=", TransB,
                  " differs at ", bad, " (result size ", size, ")");
  }
}

}  // namespace

TEST_CASE(
    "dot_general register kernels: up to 16 wide products of many rows or long contractions, every layout, equal the "
    "reference and write nothing past the result") {
  check_register_layout<false, false, double>();
  check_register_layout<false, true, double>();
  check_register_layout<true, false, double>();
  check_register_layout<true, true, double>();
  check_register_layout<false, false, float>();
  check_register_layout<true, false, float>();
}

TEST_CASE(
    "dot_general thin and short paths: 2..4 wide products of many rows or long contractions, every layout, equal the "
    "reference") {
  check_thin_layout<false, false, double>();
  check_thin_layout<false, true, double>();
  check_thin_layout<true, false, double>();
  check_thin_layout<true, true, double>();
  check_thin_layout<false, true, float>();
  check_thin_layout<true, false, float>();
  // Outside its domain (n of 1 or above kRegisterCols, both m and k above it, a transposed b
  // with a long contraction, integers) it declines and leaves the output alone.
  constexpr int64_t wide = fx::cpu::gemm_detail::kRegisterCols<double> + 1;
  std::vector<double> a(40 * wide, 1.0), b(40 * wide, 1.0), c(40 * wide, -1.0);
  CHECK_FALSE(fx::cpu::gemm_detail::thin_dispatch<false, false>(a.data(), b.data(), c.data(), 8, wide, 2));
  CHECK_FALSE(fx::cpu::gemm_detail::thin_dispatch<false, false>(a.data(), b.data(), c.data(), wide, 2, wide));
  CHECK_FALSE(fx::cpu::gemm_detail::thin_dispatch<false, true>(a.data(), b.data(), c.data(), 8, 5, wide));
  CHECK_FALSE(fx::cpu::gemm_detail::thin_dispatch<false, false>(a.data(), b.data(), c.data(), 8, 1, 2));
  std::vector<int32_t> ia(40, 1), ib(40, 1), ic(40, -1);
  CHECK_FALSE(fx::cpu::gemm_detail::thin_dispatch<false, false>(ia.data(), ib.data(), ic.data(), 8, 2, 2));
  CHECK(c[0] == -1.0);
  // Through the public op: a [7, 3] times a [3, 2] matrix.
  fx::Tensor x = fx::reshape(fx::arange(21.0), {7, 3});
  fx::Tensor w = fx::reshape(fx::tensor<double>({1.0, 0.5, -1.0, 2.0, 0.0, 3.0}), {3, 2});
  std::vector<double> got = fx::matmul(x, w).to_vector<double>();
  CHECK(got[0] == 0 * 1 + 1 * -1 + 2 * 0);
  CHECK(got[13] == 18 * 0.5 + 19 * 2 + 20 * 3);
}

TEST_CASE(
    "threads: OpenBLAS stays on the calling thread; large products on more threads run as slices over Fluxion's "
    "pool") {
  // One thread pool only: OpenBLAS's workers and a second team awake together waited for each
  // other's cores (bench W2 at 2 threads took 4.6x its 1-thread time).
  const int before = fx::num_threads();
  constexpr int64_t m = 160, k = 170, n = 160;  // m k n >= kLargeWork: a "large" product
  static_assert(double(m * k * n) >= fx::cpu::gemm_detail::kLargeWork);
  std::vector<double> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37 * double(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11 * double(i));
  std::vector<double> want(m * n);
  fx::reference::dot_general(a.data(), {m, k}, b.data(), {k, n}, {{1}, {0}}, {}, want.data());
  for (int threads : {2, 1}) {
    CAPTURE(threads);
    fx::set_num_threads(threads);
#if FLUXION_WITH_BLAS
    CHECK(openblas_get_num_threads() == 1);
    const fx::cpu::ProductChoice choice = fx::cpu::choose_product(m, n, k, fx::f64, fx::cpu::kernel_threads(), {});
    CHECK((choice.path == fx::cpu::ProductPath::blas) == (threads == 1 && fx::cpu::blas_usable()));
#endif
    std::vector<double> got(m * n, -1.0);
    fx::cpu::gemm_detail::general_dot_general(a.data(), {m, k}, b.data(), {k, n}, {{1}, {0}}, {}, got.data());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    CHECK(worst < 1e-10);
  }
  fx::set_num_threads(before);
}

namespace {

struct ProductShape {
  int64_t m, n, k;
};

/// m x n x k products in every transpose layout through general_dot_general at each thread
/// count, against the reference kernel (operands: sin and cos ramps); |error| < tol * k.
template <class T> void check_product_layouts(const std::vector<ProductShape>& shapes,
                                              std::initializer_list<int> thread_counts, double tol) {
  const int before = fx::num_threads();
  for (const ProductShape& s : shapes) {
    for (int ta : {0, 1}) {
      for (int tb : {0, 1}) {
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(ta);
        CAPTURE(tb);
        // lhs stored [m, k] (or [k, m]: read transposed), rhs [k, n] (or [n, k]).
        const Dims ls = ta ? Dims{s.k, s.m} : Dims{s.m, s.k}, rs = tb ? Dims{s.n, s.k} : Dims{s.k, s.n};
        const fx::AxisPair contract{{ta ? 0 : 1}, {tb ? 1 : 0}};
        std::vector<T> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(std::sin(0.37 * double(i)));
        for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<T>(std::cos(0.11 * double(i)));
        std::vector<T> want(static_cast<size_t>(s.m * s.n));
        fx::reference::dot_general(a.data(), ls, b.data(), rs, contract, {}, want.data());
        for (int threads : thread_counts) {
          CAPTURE(threads);
          fx::set_num_threads(threads);
          std::vector<T> got(want.size(), T(-7));
          fx::cpu::gemm_detail::general_dot_general(a.data(), ls, b.data(), rs, contract, {}, got.data());
          double worst = 0;
          for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
          CHECK(worst < tol * double(s.k));
        }
      }
    }
  }
  fx::set_num_threads(before);
}

}  // namespace

TEST_CASE("threads: large f64 products that are skinny or short run as slices over the pool, every layout") {
  // strided_gemm's split_product: slices of c's rows (or columns when c is wider than tall),
  // through the register panels for k <= kPanelMaxK, else Eigen's product on each thread.
  // Skinny with a long contraction (both orientations), short contractions (both), an odd row
  // count that does not split evenly, and one neither skinny nor short (`eigen`, sliced too).
  const std::vector<ProductShape> shapes = {
      {1000, 32, 800}, {31, 900, 700}, {1001, 300, 20}, {90, 2000, 64}, {333, 333, 129}};
  for (const ProductShape& s : shapes)
    REQUIRE(double(s.m) * double(s.n) * double(s.k) >= fx::cpu::gemm_detail::kLargeWork);
  check_product_layouts<double>(shapes, {2, 3, 1}, 1e-12);
}

TEST_CASE(
    "f64 products on one thread through the register panels: narrow results of short contractions, small results of "
    "long ones, every layout") {
  // strided_gemm on the calling thread: n <= kPanelNarrow with k <= kPanelMaxK (W8's 1000 x d x d
  // per-component products), or also m <= kPanelNarrow with k past kPanelMaxK (its d x d results
  // of 1000-long contractions: k blocks added into c). Partial panels (n not a multiple of 32),
  // row counts that leave 1..5 rows after the 6-row groups, k one past a block, and shapes just
  // outside the rule (n = 65, or m = 65 with a long k) that stay on Eigen.
  const std::vector<ProductShape> shapes = {{1000, 32, 32}, {1000, 64, 128}, {999, 33, 100},
                                            {32, 32, 1000}, {5, 40, 300},    {64, 64, 129},
                                            {61, 17, 257},  {200, 65, 64},   {65, 48, 400}};
  check_product_layouts<double>(shapes, {1}, 1e-12);
}

TEST_CASE("threads: batches of small products that are large together are split over the threads, every layout") {
  // batched_product: 40 products of 200 x 32 x 24 (each below kLargeWork, together above) run as
  // a share of the batches per thread; GEMV, outer-product and dot batches take the same split.
  using fx::cpu::gemm_detail::kLargeWork;
  const int before = fx::num_threads();
  struct Shape {
    int64_t batch, m, n, k;
  };
  const Shape shapes[] = {
      {40, 200, 32, 24}, {7, 300, 300, 9}, {4000, 64, 1, 64}, {3000, 40, 40, 1}, {300000, 1, 1, 20}};
  for (const Shape& s : shapes) {
    REQUIRE(double(s.m) * double(s.n) * double(s.k) < kLargeWork);
    REQUIRE(double(s.batch) * double(s.m) * double(s.n) * double(s.k) >= kLargeWork);
    for (int ta : {0, 1}) {
      for (int tb : {0, 1}) {
        CAPTURE(s.batch);
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(ta);
        CAPTURE(tb);
        // lhs [batch, m, k] (or [batch, k, m]), rhs [batch, k, n] (or [batch, n, k]).
        const Dims ls = ta ? Dims{s.batch, s.k, s.m} : Dims{s.batch, s.m, s.k};
        const Dims rs = tb ? Dims{s.batch, s.n, s.k} : Dims{s.batch, s.k, s.n};
        const fx::AxisPair contract{{ta ? 1 : 2}, {tb ? 2 : 1}}, batch{{0}, {0}};
        std::vector<float> a(static_cast<size_t>(s.batch * s.m * s.k)), b(static_cast<size_t>(s.batch * s.k * s.n));
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(std::sin(0.37 * double(i)));
        for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(std::cos(0.11 * double(i)));
        std::vector<float> want(static_cast<size_t>(s.batch * s.m * s.n));
        fx::reference::dot_general(a.data(), ls, b.data(), rs, contract, batch, want.data());
        std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end()), wantd(want.size());
        fx::reference::dot_general(ad.data(), ls, bd.data(), rs, contract, batch, wantd.data());
        for (int threads : {2, 1}) {
          CAPTURE(threads);
          fx::set_num_threads(threads);
          std::vector<float> got(want.size(), -7.0f);
          fx::cpu::gemm_detail::general_dot_general(a.data(), ls, b.data(), rs, contract, batch, got.data());
          std::vector<double> gotd(wantd.size(), -7.0);
          fx::cpu::gemm_detail::general_dot_general(ad.data(), ls, bd.data(), rs, contract, batch, gotd.data());
          double worst = 0, worstd = 0;
          for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
          for (size_t i = 0; i < gotd.size(); ++i) worstd = std::max(worstd, std::fabs(gotd[i] - wantd[i]));
          CHECK(worst < 1e-5 * double(s.k));
          CHECK(worstd < 1e-12 * double(s.k));
        }
      }
    }
  }
  fx::set_num_threads(before);
}

TEST_CASE("threads: large matrix-vector products are split by slices of the result, every layout and dtype") {
  // gemm.hpp's gemv: rows of a (y = a x) or its columns (y = a^T x) per thread, from kParallelGemv
  // matrix elements on; fewer than 2 * kGemvSlice results stay on one thread.
  const int before = fx::num_threads();
  struct Shape {
    int64_t m, k;
  };
  // 700 x 300 and 37 x 4000 are split (37: slices of 16 and 21); 20 x 7000 has too few results.
  const Shape shapes[] = {{700, 300}, {37, 4000}, {20, 7000}, {300, 700}};
  static_assert(700 * 300 >= fx::cpu::kProductThresholds.parallel_gemv);
  for (const Shape& sh : shapes) {
    for (int lhs_is_vector : {0, 1}) {
      for (int mat_transposed : {0, 1}) {
        // The matrix is stored [m, k] or [k, m]; the vector has k elements; the result m.
        const int64_t m = sh.m, k = sh.k;
        const Dims mat = mat_transposed ? Dims{k, m} : Dims{m, k}, vec{k};
        const int64_t mat_contract = mat_transposed ? 0 : 1;
        Dims ls = lhs_is_vector ? vec : mat, rs = lhs_is_vector ? mat : vec;
        fx::AxisPair contract = lhs_is_vector ? fx::AxisPair{{0}, {mat_contract}} : fx::AxisPair{{mat_contract}, {0}};
        auto check = [&](auto zero) {
          using T = decltype(zero);
          const size_t bytes = sizeof(T);
          CAPTURE(m);
          CAPTURE(k);
          CAPTURE(lhs_is_vector);
          CAPTURE(mat_transposed);
          CAPTURE(bytes);
          std::vector<T> a(static_cast<size_t>(m * k)), x(static_cast<size_t>(k));
          for (size_t i = 0; i < a.size(); ++i)
            a[i] = static_cast<T>(std::is_integral_v<T> ? int64_t(i * 7919 % 23) - 11 : std::sin(0.37 * double(i)));
          for (size_t i = 0; i < x.size(); ++i)
            x[i] = static_cast<T>(std::is_integral_v<T> ? int64_t(i % 5) - 2 : std::cos(0.11 * double(i)));
          const T* l = lhs_is_vector ? x.data() : a.data();
          const T* r = lhs_is_vector ? a.data() : x.data();
          std::vector<T> want(static_cast<size_t>(m));
          fx::reference::dot_general(l, ls, r, rs, contract, {}, want.data());
          for (int threads : {2, 1}) {
            CAPTURE(threads);
            fx::set_num_threads(threads);
            std::vector<T> got(static_cast<size_t>(m), T(-1));
            fx::cpu::gemm_detail::general_dot_general(l, ls, r, rs, contract, {}, got.data());
            double worst = 0, scale = 0;
            for (size_t i = 0; i < got.size(); ++i) {
              worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
              scale = std::max(scale, std::fabs(double(want[i])));
            }
            if constexpr (std::is_integral_v<T>) CHECK(worst == 0);
            else CHECK(worst <= (sizeof(T) == 4 ? 1e-4 : 1e-12) * std::max(scale, 1.0) * std::sqrt(double(k)));
          }
        };
        check(0.0), check(0.0f), check(int32_t{0});
      }
    }
  }
  fx::set_num_threads(before);
}

TEST_CASE("f32 products through oneDNN (when linked): every transpose pair, 1 and 2 threads") {
  // strided_gemm sends f32 products of kDnnlWork multiply-adds and more to oneDNN's row-major
  // sgemm: its 'N'/'T' flags and leading dims must mean what ours do. (Leading dims wider than
  // the rows: the tiled products of test_jit, whose tiles write into wider rows.)
  // 48^3 is just above kDnnlWork, 160 x 160 x 170 is "large" (num_threads() threads), 16^3 stays on Eigen.
  static_assert(48.0 * 48 * 48 >= fx::cpu::kProductThresholds.dnnl_work &&
                16.0 * 16 * 16 < fx::cpu::kProductThresholds.dnnl_work);
  check_product_layouts<float>({{48, 48, 48}, {37, 90, 41}, {160, 160, 170}, {16, 16, 16}}, {2, 1}, 1e-5);
}

namespace {

/// product_tile on f64 (panel_product up to kPanelMaxK, Eigen's product above) in the layout
/// <TransA, TransB>: tiles [r0, r1) x [c0, c1) of an m x n x k product written into a buffer with
/// wider rows equal the reference's, and the buffer's other elements are left alone.
template <bool TransA, bool TransB> void check_product_tiles() {
  constexpr int64_t kPanelMaxK = fx::cpu::kProductThresholds.panel_max_k;
  struct Shape {
    int64_t m, n, k;
  };
  // Row counts around the register block's rows, column counts around a panel's 32 (AVX-512),
  // contractions of 1, odd ones, kPanelMaxK and one above it (Eigen's product), more rows than
  // one block of rows.
  const Shape shapes[] = {{1, 1, 1},
                          {13, 33, 7},
                          {143, 95, 64},
                          {25, 64, kPanelMaxK},
                          {11, 40, kPanelMaxK + 1},
                          {7, 5, 3},
                          {fx::cpu::gemm_detail::kPanelRowBlock + 17, 40, 9}};
  for (const Shape& s : shapes) {
    const Dims ls = TransA ? Dims{s.k, s.m} : Dims{s.m, s.k}, rs = TransB ? Dims{s.n, s.k} : Dims{s.k, s.n};
    const fx::AxisPair contract{{TransA ? 0 : 1}, {TransB ? 1 : 0}};
    const std::vector<double> a = values<double>(s.m * s.k, 5), b = values<double>(s.k * s.n, 6);
    std::vector<double> want(static_cast<size_t>(s.m * s.n)), scale(want.size());
    fx::reference::dot_general(a.data(), ls, b.data(), rs, contract, {}, want.data());
    // Rounding is relative to the sum of |terms|: the product of |a| and |b|.
    std::vector<double> a_abs(a), b_abs(b);
    for (double& x : a_abs) x = std::fabs(x);
    for (double& x : b_abs) x = std::fabs(x);
    fx::reference::dot_general(a_abs.data(), ls, b_abs.data(), rs, contract, {}, scale.data());
    fx::cpu::gemm_detail::MatrixView v;
    v.ok = true, v.trans_a = TransA, v.trans_b = TransB, v.m = s.m, v.n = s.n, v.k = s.k;
    // The whole product, then a tile that starts inside it, each into rows 3 wider than the tile.
    const int64_t tiles[2][4] = {{0, s.m, 0, s.n}, {s.m / 3, s.m, s.n / 2, s.n}};
    for (const auto& t : tiles) {
      const int64_t rows = t[1] - t[0], cols = t[3] - t[2], ld = cols + 3;
      std::vector<double> got(static_cast<size_t>(rows * ld + 5), -99.0);
      fx::cpu::gemm_detail::product_tile<TransA, TransB>(v, a.data(), b.data(), t[0], t[1], t[2], t[3], got.data(), ld);
      std::string bad;
      for (int64_t i = 0; i < rows && bad.empty(); ++i)
        for (int64_t j = 0; j < ld && bad.empty(); ++j) {
          const double g = got[static_cast<size_t>(i * ld + j)];
          const size_t at = static_cast<size_t>((t[0] + i) * s.n + t[2] + std::min(j, cols - 1));
          if (j >= cols ? g != -99.0 : std::fabs(g - want[at]) > 1e-14 * (1 + scale[at]))
            bad = "at row " + std::to_string(i) + " column " + std::to_string(j);
        }
      for (size_t i = static_cast<size_t>(rows * ld); i < got.size() && bad.empty(); ++i)
        if (got[i] != -99.0) bad = "past the tile";
      CHECK_MESSAGE(bad.empty(), "m=", s.m, " n=", s.n, " k=", s.k, " tile rows ", t[0], "..", t[1], " columns ", t[2],
                    "..", t[3], " TransA=", TransA, " TransB=", TransB, ": ", bad);
    }
  }
}

}  // namespace

TEST_CASE(
    "f64 product tiles through the register panels: every layout, tiles inside wider rows, k up to and past "
    "kPanelMaxK") {
  check_product_tiles<false, false>();
  check_product_tiles<false, true>();
  check_product_tiles<true, false>();
  check_product_tiles<true, true>();
}

namespace {

/// panel_product<TransA, TransB> on op(b)s with zero rows: upper-triangular blocks, zero leading
/// and trailing rows, an all-zero op(b); then inf and NaN in op(a)'s columns that meet only zero
/// rows of op(b), where the product must be NaN (0 inf), as the reference's is.
template <bool TransA, bool TransB> void check_zero_row_panels() {
  const int64_t m = 50, n = 70, k = 64;  // 70 columns: two whole panels and a partial one
  auto op_b = [&](int pattern, int64_t l, int64_t j) {
    const double v = 0.25 + 0.001 * static_cast<double>((l * 7 + j * 3) % 11);
    switch (pattern) {
      case 0: return l <= j % 32 ? v : 0.0;        // upper triangular per 32 x 32 block
      case 1: return l >= 10 && l < 50 ? v : 0.0;  // zero rows at both ends
      default: return 0.0;                         // all zero
    }
  };
  for (int pattern = 0; pattern < 3; ++pattern)
    for (bool poison : {false, true}) {
      std::vector<double> a = values<double>(m * k, 7), b(static_cast<size_t>(k * n));
      auto a_at = [&](int64_t i, int64_t l) -> double& {
        return a[static_cast<size_t>(TransA ? l * m + i : i * k + l)];
      };
      for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < n; ++j) b[static_cast<size_t>(TransB ? j * k + l : l * n + j)] = op_b(pattern, l, j);
      if (poison) a_at(3, 60) = INFINITY, a_at(7, 61) = NAN;  // rows 60, 61 of op(b): zero in patterns 1 and 2
      const Dims ls = TransA ? Dims{k, m} : Dims{m, k}, rs = TransB ? Dims{n, k} : Dims{k, n};
      std::vector<double> want(static_cast<size_t>(m * n)), got(want.size(), -99.0);
      fx::reference::dot_general(a.data(), ls, b.data(), rs, {{TransA ? 0 : 1}, {TransB ? 1 : 0}}, {}, want.data());
      fx::cpu::gemm_detail::panel_product<TransA, TransB>(a.data(), TransA ? m : k, b.data(), TransB ? k : n,
                                                          got.data(), n, m, n, k);
      std::string bad;
      for (size_t e = 0; e < got.size() && bad.empty(); ++e) {
        const bool same =
            std::isnan(want[e]) ? std::isnan(got[e]) : std::fabs(got[e] - want[e]) <= 1e-13 * (1 + std::fabs(want[e]));
        if (!same)
          bad = "element " + std::to_string(e) + ": " + std::to_string(got[e]) + " for " + std::to_string(want[e]);
      }
      if (poison && pattern > 0) CHECK(std::isnan(want[3 * n]));  // the case checks what it means to
      CHECK_MESSAGE(bad.empty(), "pattern ", pattern, " poison ", poison, " TransA=", TransA, " TransB=", TransB, ": ",
                    bad);
    }
}

}  // namespace

TEST_CASE(
    "f64 register panels on op(b)s with zero rows: triangular blocks, zero ends, all zero, every layout, NaN from 0 "
    "inf "
    "kept") {
  check_zero_row_panels<false, false>();
  check_zero_row_panels<false, true>();
  check_zero_row_panels<true, false>();
  check_zero_row_panels<true, true>();
}

TEST_CASE("2..4-column products of long rows read the lhs once (stacked_gemv), every layout, 1 and 2 threads") {
  // Rows in groups of 4 and the rest, contractions with packet tails, n = 2, 3, 4; the large one
  // is split over the threads like a GEMV.
  const std::vector<ProductShape> shapes = {{1000, 2, 1000}, {37, 3, 333}, {1001, 4, 67}, {18, 2, 17}};
  check_product_layouts<double>(shapes, {1, 2}, 1e-12);
  check_product_layouts<float>(shapes, {1, 2}, 1e-4);
}
