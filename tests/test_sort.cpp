// The sort family: stability and the key order (NaN last, -0.0 == 0.0), top_k's tie rule, the CPU
// kernel against the reference on large inputs with ties, derivatives and transforms of sort, and
// associative_scan with the cumulative ops built on it: a non-commutative fn on a pytree, derivatives
// of cumprod at zeros and of cummax at ties, logcumsumexp's stability; the errors of each op.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "primitives/sort.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fluxion::testing::message_of;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }
fx::Tensor vec(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return fx::from_vector(std::move(v), {n});
}
using fluxion::testing::max_diff;
// `message == has("part")`: the message contains part.
struct Has {
  std::string part;
};
bool operator==(const std::string& message, const Has& h) { return message.find(h.part) != std::string::npos; }
Has has(const char* part) { return Has{part}; }
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("sort: argsort is stable, ascending and descending") {
  fx::Tensor x = vec({3, 1, 2, 1, 3, 2});
  fx::Tensor idx = fx::argsort(x);
  CHECK(idx.dtype() == fx::i32);
  CHECK(vals(idx) == std::vector<double>{1, 3, 2, 5, 0, 4});
  CHECK(vals(fx::argsort(x, -1, true)) == std::vector<double>{0, 4, 2, 5, 1, 3});
  CHECK(vals(fx::sort(x)) == std::vector<double>{1, 1, 2, 2, 3, 3});
  CHECK(vals(fx::sort(x, 0, true)) == std::vector<double>{3, 3, 2, 2, 1, 1});
  // Along axis 0 of a matrix, each column on its own.
  fx::Tensor m = fx::from_vector(std::vector<double>{2, 0, 1, 5, 2, 4}, {3, 2});
  CHECK(vals(fx::sort(m, 0)) == std::vector<double>{1, 0, 2, 4, 2, 5});
  CHECK(vals(fx::argsort(m, 0)) == std::vector<double>{1, 0, 0, 2, 2, 1});
}

TEST_CASE("sort: NaN of either sign sorts last in original order, -0.0 equals 0.0") {
  fx::Tensor x = vec({kNaN, 1, -kInf, -kNaN, 0.0, -0.0, kInf, -1});
  std::vector<double> s = vals(fx::sort(x));
  CHECK(s[0] == -kInf);
  CHECK(s[1] == -1);
  CHECK(s[4] == 1);
  CHECK(s[5] == kInf);
  CHECK(std::isnan(s[6]));
  CHECK(std::isnan(s[7]));
  CHECK(vals(fx::argsort(x)) == std::vector<double>{2, 7, 4, 5, 1, 6, 0, 3});
  // Descending: NaNs first, still in order; equal zeros keep their order.
  CHECK(vals(fx::argsort(x, -1, true)) == std::vector<double>{0, 3, 6, 1, 4, 5, 7, 2});
  CHECK(std::signbit(vals(fx::sort(vec({-0.0, 0.0})))[0]));
  CHECK(!std::signbit(vals(fx::sort(vec({0.0, -0.0})))[0]));
  // f32 keys follow the same order.
  CHECK(vals(fx::argsort(fx::astype(x, fx::f32))) == std::vector<double>{2, 7, 4, 5, 1, 6, 0, 3});
}

TEST_CASE("sort: top_k gives the largest first, ties in index order, NaN as the largest") {
  auto [v, i] = fx::top_k(vec({1, 3, 3, 2, 3}), 2);
  CHECK(vals(v) == std::vector<double>{3, 3});
  CHECK(vals(i) == std::vector<double>{1, 2});
  CHECK(i.dtype() == fx::i32);
  auto [v2, i2] = fx::top_k(fx::from_vector(std::vector<double>{1, kNaN, 2, 5, 5, 0}, {2, 3}), 2);
  CHECK(v2.shape() == std::vector<int64_t>{2, 2});
  CHECK(vals(i2) == std::vector<double>{1, 2, 0, 1});
  auto [v0, i0] = fx::top_k(vec({1, 2}), 0);
  CHECK(v0.shape() == std::vector<int64_t>{0});
  CHECK(i0.shape() == std::vector<int64_t>{0});
  // Integer inputs keep their dtype.
  auto [vi, ii] = fx::top_k(fx::arange(5), 3);
  CHECK(vi.dtype() == fx::i32);
  CHECK(vals(vi) == std::vector<double>{4, 3, 2});
}

TEST_CASE("sort: the CPU and emulated CUDA kernels equal the reference on large inputs with ties") {
  const fx::Primitive* p = fx::find_primitive("sort");
  REQUIRE(p);
  // Coarse keys (many ties) and a second key; 64 rows of 1000: the CPU kernel's parallel path.
  fx::Tensor k1 = fx::round(fx::testing::random_tensor({64, 1000}, fx::f64, 3, -5, 5));
  fx::Tensor k2 = fx::testing::random_tensor({64, 1000}, fx::i32, 4, -20, 20);
  for (int64_t axis : {0, 1})
    for (bool descending : {false, true})
      for (int64_t keys : {1, 2}) {
        CAPTURE(axis);
        CAPTURE(descending);
        CAPTURE(keys);
        std::vector<fx::Tensor> p_in{k1, k2, fx::lax::iota(fx::i64, {64, 1000}, axis)};
        fx::primitives::sort_detail::SortParams params(axis, keys, descending);
        auto ref = fx::eval_primitive(*p, p_in, params, fx::Backend::reference);
        auto cpu = fx::eval_primitive(*p, p_in, params, fx::Backend::cpu);
        auto emu = fx::eval_primitive(*p, p_in, params, fx::Backend::cuda_emulated);
        for (size_t k = 0; k < ref.size(); ++k) {
          CHECK(vals(cpu[k]) == vals(ref[k]));
          CHECK(vals(emu[k]) == vals(ref[k]));
        }
        // A lone operand (the CPU kernel's in-place path).
        fx::primitives::sort_detail::SortParams one(axis, 1, descending);
        CHECK(vals(fx::eval_primitive(*p, {k1}, one, fx::Backend::cpu)[0]) ==
              vals(fx::eval_primitive(*p, {k1}, one, fx::Backend::reference)[0]));
      }
}

TEST_CASE("sort: derivatives permute the cotangent back; jit, vmap and hessian agree") {
  fx::Tensor x = vec({0.3, -1.2, 2.5, 0.7, -0.1});
  fx::Tensor w = vec({1, 2, 3, 4, 5});
  auto f = [&](const fx::Tensor& v) { return fx::sum(fx::sort(v) * w); };
  // sorted order: -1.2 (1), -0.1 (4), 0.3 (0), 0.7 (3), 2.5 (2): element k gets the weight of its rank.
  CHECK(vals(fx::grad(f)(x)) == std::vector<double>{3, 1, 5, 4, 2});
  CHECK(vals(fx::jit(fx::grad(f))(x)) == std::vector<double>{3, 1, 5, 4, 2});
  // Descending top_k values: only the selected elements get gradient.
  auto g = [](const fx::Tensor& v) { return fx::sum(fx::top_k(v, 2).first * vec({10, 1})); };
  CHECK(vals(fx::grad(g)(x)) == std::vector<double>{0, 0, 10, 1, 0});
  // Hessian of sum(sort(x)^3) is diag(6 x).
  auto cube = [](const fx::Tensor& v) { return fx::sum(fx::sort(v) * fx::sort(v) * fx::sort(v)); };
  CHECK(max_diff(fx::hessian(cube)(x), fx::eye(5) * (x * 6.0)) < 1e-12);
  // vmap of top_k over rows equals the rows' results.
  fx::Tensor m = fx::testing::random_tensor({4, 6}, fx::f64, 9);
  auto [bv, bi] = fx::vmap([](const fx::Tensor& r) { return fx::top_k(r, 3); })(m);
  for (int64_t r = 0; r < 4; ++r) {
    fx::Tensor row = fx::squeeze(fx::slice(m, {r, 0}, {r + 1, 6}), {0});
    auto [rv, ri] = fx::top_k(row, 3);
    CHECK(vals(fx::squeeze(fx::slice(bv, {r, 0}, {r + 1, 3}), {0})) == vals(rv));
    CHECK(vals(fx::squeeze(fx::slice(bi, {r, 0}, {r + 1, 3}), {0})) == vals(ri));
  }
  // vmap over axis 1 of argsort along axis 0.
  fx::Tensor cols = fx::vmap([](const fx::Tensor& c) { return fx::argsort(c); }, fx::in_axes(1))(m);
  CHECK(vals(cols) == vals(fx::transpose(fx::argsort(m, 0))));
}

// ---- associative_scan and the cumulative ops ----

namespace {
// Affine maps x -> a x + b composed left to right (first the earlier one): not commutative.
using Affine = std::pair<fx::Tensor, fx::Tensor>;
Affine compose(const Affine& first, const Affine& then) {
  return {then.first * first.first, then.first * first.second + then.second};
}
}  // namespace

TEST_CASE("associative_scan: a non-commutative fn on a pytree equals the sequential scan, any length") {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 16}) {
    CAPTURE(n);
    fx::Tensor a = fx::testing::random_tensor({n, 2}, fx::f64, 10 + static_cast<uint64_t>(n), 0.5, 1.5);
    fx::Tensor b = fx::testing::random_tensor({n, 2}, fx::f64, 40 + static_cast<uint64_t>(n));
    for (bool reverse : {false, true}) {
      CAPTURE(reverse);
      Affine got = fx::associative_scan(compose, Affine{a, b}, 0, reverse);
      // The sequential scan (reverse: from the end, the later elements first).
      std::vector<fx::Tensor> ga(static_cast<size_t>(n)), gb(static_cast<size_t>(n));
      auto row = [](const fx::Tensor& t, int64_t i) { return fx::squeeze(fx::slice(t, {i, 0}, {i + 1, 2}), {0}); };
      Affine acc;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t i = reverse ? n - 1 - s : s;
        Affine e{row(a, i), row(b, i)};
        acc = s == 0 ? e : compose(acc, e);
        ga[static_cast<size_t>(i)] = acc.first;
        gb[static_cast<size_t>(i)] = acc.second;
      }
      CHECK(max_diff(got.first, fx::stack(ga, 0)) < 1e-12);
      CHECK(max_diff(got.second, fx::stack(gb, 0)) < 1e-12);
    }
  }
  // Along axis 1 (negative), and under jit and vmap.
  fx::Tensor a = fx::testing::random_tensor({3, 6}, fx::f64, 70, 0.5, 1.5),
             b = fx::testing::random_tensor({3, 6}, fx::f64, 71);
  Affine by_axis = fx::associative_scan(compose, Affine{a, b}, -1);
  Affine by_rows = fx::associative_scan(compose, Affine{fx::transpose(a), fx::transpose(b)}, 0);
  CHECK(max_diff(by_axis.second, fx::transpose(by_rows.second)) < 1e-12);
  auto scan_b = [](const fx::Tensor& p, const fx::Tensor& q) {
    return fx::associative_scan(compose, Affine{p, q}, 0).second;
  };
  CHECK(max_diff(fx::jit(scan_b)(a, b), scan_b(a, b)) < 1e-12);
  fx::Tensor mapped = fx::vmap(scan_b)(a, b);  // rows mapped: each row scanned on its own
  CHECK(max_diff(mapped, by_axis.second) < 1e-12);
  // Gradients through the parallel composition equal those through the sequential scan.
  auto sequential_b = [](const fx::Tensor& p, const fx::Tensor& q) {
    Affine acc{fx::slice(p, {0}, {1}), fx::slice(q, {0}, {1})};
    std::vector<fx::Tensor> outs{acc.second};
    for (int64_t i = 1; i < p.shape()[0]; ++i) {
      acc = compose(acc, Affine{fx::slice(p, {i}, {i + 1}), fx::slice(q, {i}, {i + 1})});
      outs.push_back(acc.second);
    }
    return fx::concatenate(outs, 0);
  };
  fx::Tensor a1 = fx::testing::random_tensor({7}, fx::f64, 72, 0.5, 1.5),
             b1 = fx::testing::random_tensor({7}, fx::f64, 73);
  fx::Tensor w = fx::testing::random_tensor({7}, fx::f64, 74);
  auto loss = [&](auto scan) {
    return [scan, w](const fx::Tensor& p, const fx::Tensor& q) { return fx::sum(fx::sin(scan(p, q)) * w); };
  };
  auto parallel_grads = fx::grad(loss(scan_b), fx::argnums<0, 1>)(a1, b1);
  auto sequential_grads = fx::grad(loss(sequential_b), fx::argnums<0, 1>)(a1, b1);
  CHECK(max_diff(std::get<0>(parallel_grads), std::get<0>(sequential_grads)) < 1e-12);
  CHECK(max_diff(std::get<1>(parallel_grads), std::get<1>(sequential_grads)) < 1e-12);
}

TEST_CASE("cumulative ops: values against explicit loops, reverse, axes, dtypes") {
  fx::Tensor x = vec({2, -1, 0.5, 3, -2});
  CHECK(vals(fx::cumprod(x)) == std::vector<double>{2, -2, -1, -3, 6});
  CHECK(vals(fx::cumprod(x, 0, true)) == std::vector<double>{6, 3, -3, -6, -2});
  CHECK(vals(fx::cummax(x)) == std::vector<double>{2, 2, 2, 3, 3});
  CHECK(vals(fx::cummin(x, 0, true)) == std::vector<double>{-2, -2, -2, -2, -2});
  CHECK(vals(fx::cummin(x)) == std::vector<double>{2, -1, -1, -1, -2});
  fx::Tensor m = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals(fx::cumprod(m, 1)) == std::vector<double>{1, 2, 6, 4, 20, 120});
  CHECK(vals(fx::cummax(m, -2)) == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(fx::cumprod(fx::arange(1, 5)).dtype() == fx::i32);
  CHECK(vals(fx::cumprod(fx::arange(1, 5))) == std::vector<double>{1, 2, 6, 24});
  CHECK(vals(fx::cummax(vec({1, kNaN, 0}))).size() == 3);
  // logcumsumexp: against log(cumsum(exp)), stable for large values, -inf stays -inf.
  fx::Tensor y = vec({0.5, -1, 2, 0.25});
  CHECK(max_diff(fx::logcumsumexp(y), fx::log(fx::cumsum(fx::exp(y)))) < 1e-14);
  CHECK(max_diff(fx::logcumsumexp(vec({1000, 1000})), vec({1000, 1000 + std::log(2.0)})) < 1e-12);
  std::vector<double> inf = vals(fx::logcumsumexp(vec({-kInf, -kInf, 0})));
  CHECK(inf[0] == -kInf);
  CHECK(inf[1] == -kInf);
  CHECK(inf[2] == 0);
  CHECK(fx::logcumsumexp(fx::arange(3)).dtype() == fx::f64);
}

TEST_CASE("cumulative ops: cumprod's derivatives at zeros are the products of the other factors") {
  fx::Tensor x = vec({2, 0, 3, 0, 5, 1.5});
  const std::vector<double> xs = vals(x);
  const size_t n = xs.size();
  // d/dx_k sum_i prod_{j<=i} x_j = sum_{i>=k} prod_{j<=i, j!=k} x_j.
  std::vector<double> want(n, 0);
  for (size_t k = 0; k < n; ++k)
    for (size_t i = k; i < n; ++i) {
      double p = 1;
      for (size_t j = 0; j <= i; ++j)
        if (j != k) p *= xs[j];
      want[k] += p;
    }
  auto f = [](const fx::Tensor& v) { return fx::sum(fx::cumprod(v)); };
  CHECK(max_diff(fx::grad(f)(x), vec(want)) < 1e-12);
  CHECK(max_diff(fx::jit(fx::grad(f))(x), vec(want)) < 1e-12);
  // Second derivatives: d2/dx_k dx_l = sum_{i>=max(k,l)} prod_{j<=i, j!=k,l} x_j (k != l), 0 on the diagonal.
  std::vector<double> h(n * n, 0);
  for (size_t k = 0; k < n; ++k)
    for (size_t l = 0; l < n; ++l) {
      if (k == l) continue;
      for (size_t i = std::max(k, l); i < n; ++i) {
        double p = 1;
        for (size_t j = 0; j <= i; ++j)
          if (j != k && j != l) p *= xs[j];
        h[k * n + l] += p;
      }
    }
  const int64_t ni = static_cast<int64_t>(n);
  CHECK(max_diff(fx::hessian(f)(x), fx::from_vector(h, {ni, ni})) < 1e-12);
  auto cp = [](const fx::Tensor& v) { return fx::cumprod(v); };
  CHECK(max_diff(fx::jacfwd(cp)(x), fx::jacrev(cp)(x)) < 1e-12);
}

TEST_CASE("cumulative ops: cummax's derivative at ties splits between the tied elements") {
  // Distinct values: each output's derivative is one-hot on the running argmax.
  auto cm = [](const fx::Tensor& v) { return fx::cummax(v); };
  fx::Tensor jd = fx::jacrev(cm)(vec({1, 3, 2, 4}));
  CHECK(vals(jd) == std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1});
  // Ties: every row of the Jacobian sums to 1, weights only on elements equal to the running max.
  fx::Tensor x = vec({1, 3, 3, 2, 3, 0});
  fx::Tensor j = fx::jacrev(cm)(x);
  CHECK(max_diff(j, fx::jacfwd(cm)(x)) < 1e-15);
  std::vector<double> jv = vals(j), xs = vals(x), out = vals(fx::cummax(x));
  for (size_t i = 0; i < 6; ++i) {
    double row = 0;
    for (size_t k = 0; k < 6; ++k) {
      const double w = jv[i * 6 + k];
      row += w;
      CHECK(w >= 0);
      if (k > i || xs[k] != out[i]) CHECK(w == 0);
    }
    CHECK(row == doctest::Approx(1.0));
  }
  // cummin mirrors it.
  fx::Tensor jm = fx::jacrev([](const fx::Tensor& v) { return fx::cummin(v); })(-x);
  CHECK(max_diff(jm, j) < 1e-15);
}

TEST_CASE("cumulative ops: logcumsumexp's gradient is the softmax weights, to second order") {
  fx::Tensor x = vec({0.5, -1, 2, 0.25, 0.25});
  auto f = [](const fx::Tensor& v) { return fx::sum(fx::logcumsumexp(v) * vec({1, 0.5, -1, 2, 1})); };
  auto plain = [](const fx::Tensor& v) { return fx::sum(fx::log(fx::cumsum(fx::exp(v))) * vec({1, 0.5, -1, 2, 1})); };
  CHECK(max_diff(fx::grad(f)(x), fx::grad(plain)(x)) < 1e-13);
  CHECK(max_diff(fx::hessian(f)(x), fx::hessian(plain)(x)) < 1e-12);
  CHECK(max_diff(fx::vmap(fx::grad(f))(fx::stack({x, x * 2.0}, 0)),
                 fx::stack({fx::grad(plain)(x), fx::grad(plain)(x * 2.0)}, 0)) < 1e-13);
}

TEST_CASE("sort family: errors name the op and the fix") {
  CHECK(message_of<fx::ShapeError>([] {
          fx::top_k(vec({1, 2, 3}), 4);
        }) == "[top_k] k=4 is out of range for f64[3], whose last axis has 3 elements. Use 0 <= k <= 3.");
  CHECK(message_of<fx::ShapeError>([] { fx::top_k(vec({1, 2, 3}), -1); }) == has("k=-1 is out of range"));
  CHECK(message_of<fx::AxisError>([] { fx::top_k(fx::scalar(1.0), 1); }) ==
        has("[top_k] needs an operand of rank >= 1, got f64[]"));
  CHECK(message_of<fx::AxisError>([] { fx::sort(fx::scalar(1.0)); }) == has("[sort] needs an operand of rank >= 1"));
  CHECK(message_of<fx::AxisError>([] { fx::argsort(vec({1, 2}), 1); }) == has("[argsort]"));
  CHECK(message_of<fx::DTypeError>([] {
          fx::cummax(fx::astype(vec({1, 0}), fx::boolean));
        }) == has("[cummax] does not take bool tensors"));
  CHECK(message_of<fx::ShapeError>([] {
          fx::associative_scan(compose, Affine{fx::zeros({3}), fx::zeros({4})});
        }) == has("[associative_scan] leaves have different lengths along axis 0"));
  CHECK(message_of<fx::ShapeError>([] {
          fx::associative_scan([](const fx::Tensor& p, const fx::Tensor&) { return fx::sum(p, {0}, true); },
                               fx::zeros({4, 2}));
        }) == has("[associative_scan] fn returned f64[1,2] for leaf 0 of operands f64[2,2]"));
  CHECK(message_of<fx::AxisError>([] {
          fx::associative_scan(compose, Affine{fx::scalar(1.0), fx::scalar(1.0)});
        }) == has("[associative_scan] leaf 0 of elems is rank 0"));
}
