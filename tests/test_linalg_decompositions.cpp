// lu, qr, det, slogdet, matrix_power and expm: known answers (LAPACK's pivots and signs), the
// factorizations' identities on random tall, wide and batched matrices, singular matrices (no
// error from lu, det exactly 0), gradients against closed forms, jit, and f64 CPU kernels within
// 1e-10 of the long-double reference kernels, including sizes where Eigen's blocked paths run.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "sample_eval.hpp"
#include "test_util.hpp"

namespace fx = fluxion;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return fx::astype(t, fx::f64).to_vector<double>(); }

using fluxion::testing::max_diff;

fx::Tensor random(std::vector<int64_t> shape, uint64_t seed, double lo = -2, double hi = 2) {
  return fx::testing::random_tensor(fx::Shape(shape), fx::f64, seed, lo, hi);
}

fx::Tensor mT(const fx::Tensor& a) {
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < a.ndim(); ++i) axes.push_back(i);
  std::swap(axes[axes.size() - 1], axes[axes.size() - 2]);
  return fx::transpose(a, axes);
}

// L (m x k, unit diagonal) and U (k x n) of one packed m x n factorization.
std::pair<fx::Tensor, fx::Tensor> unpack(const fx::Tensor& lu) {
  const int64_t m = lu.shape()[0], n = lu.shape()[1], k = std::min(m, n);
  std::vector<double> v = vals(lu), l(static_cast<size_t>(m * k), 0.0), u(static_cast<size_t>(k * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) l[static_cast<size_t>(i * k + j)] = i == j ? 1 : i > j ? v[i * n + j] : 0;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = i; j < n; ++j) u[static_cast<size_t>(i * n + j)] = v[i * n + j];
  return {fx::from_vector(l, fx::Shape{m, k}), fx::from_vector(u, fx::Shape{k, n})};
}

// Rows perm of a.
fx::Tensor rows(const fx::Tensor& a, const fx::Tensor& perm) { return fx::take(a, perm, 0); }

}  // namespace

// ---- lu ----

TEST_CASE("lu: LAPACK's packed factors, pivots and permutation on a known matrix") {
  auto [lu, pivots, perm] = fx::linalg::lu(fx::tensor({{1.0, 2.0}, {3.0, 4.0}}));
  CHECK(max_diff(lu, fx::tensor({{3.0, 4.0}, {1.0 / 3.0, 2.0 / 3.0}})) < 1e-15);
  CHECK(pivots.dtype() == fx::i32);
  CHECK(pivots.to_vector<int32_t>() == std::vector<int32_t>{1, 1});
  CHECK(perm.to_vector<int32_t>() == std::vector<int32_t>{1, 0});
  // Ties go to the first candidate: |-2| = |2| keeps row 0 as the pivot row.
  auto [lu2, pivots2, perm2] = fx::linalg::lu(fx::tensor({{-2.0, 1.0}, {2.0, 5.0}}));
  CHECK(pivots2.to_vector<int32_t>() == std::vector<int32_t>{0, 1});
  CHECK(max_diff(lu2, fx::tensor({{-2.0, 1.0}, {-1.0, 6.0}})) == 0);
}

TEST_CASE("lu: a[perm] = L U with |L| <= 1 for square, tall, wide and batched matrices") {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 5}, {7, 3}, {3, 6}, {40, 40}, {50, 20}}) {
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    fx::Tensor a = random(shape, 10 + shape[0]);
    auto [lu, pivots, perm] = fx::linalg::lu(a);
    auto [l, u] = unpack(lu);
    CHECK(max_diff(fx::matmul(l, u), rows(a, perm)) < 1e-12);
    for (double x : vals(l)) CHECK(std::fabs(x) <= 1.0);
  }
  fx::Tensor batch = random({2, 3, 4, 4}, 3);
  auto [lu, pivots, perm] = fx::linalg::lu(batch);
  CHECK(pivots.shape() == fx::Shape{2, 3, 4});
  CHECK(perm.shape() == fx::Shape{2, 3, 4});
  fx::Tensor one = fx::squeeze(fx::slice(batch, {1, 2, 0, 0}, {2, 3, 4, 4}), {0, 1});
  auto [lu1, pivots1, perm1] = fx::linalg::lu(one);
  CHECK(max_diff(fx::squeeze(fx::slice(lu, {1, 2, 0, 0}, {2, 3, 4, 4}), {0, 1}), lu1) == 0);
  CHECK(vals(fx::squeeze(fx::slice(perm, {1, 2, 0}, {2, 3, 4}), {0, 1})) == vals(perm1));
}

TEST_CASE("lu: singular matrices factor without error (a zero pivot), and det is exactly 0") {
  fx::Tensor rank1 = fx::tensor({{1.0, 2.0, 3.0}, {2.0, 4.0, 6.0}, {-1.0, -2.0, -3.0}});
  auto [lu, pivots, perm] = fx::linalg::lu(rank1);
  CHECK(vals(lu)[4] == 0);  // U[1, 1]
  CHECK(fx::linalg::det(rank1).item<double>() == 0);
  CHECK(fx::linalg::det(fx::zeros({3, 3})).item<double>() == 0);
  auto [zlu, zpiv, zperm] = fx::linalg::lu(fx::zeros({3, 3}, fx::f32));
  CHECK(zpiv.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2});  // nothing to swap
  auto [sign, logabsdet] = fx::linalg::slogdet(rank1);
  CHECK(sign.item<double>() == 0);
  CHECK(logabsdet.item<double>() == -std::numeric_limits<double>::infinity());
  // The derivative needs U nonsingular (lu's jvp solves with it): at a singular matrix det's
  // gradient raises the singular-matrix error instead of returning inf/NaN (documented).
  auto det = [](const fx::Tensor& x) { return fx::linalg::det(x); };
  CHECK_THROWS_WITH_AS(fx::grad(det)(rank1), doctest::Contains("is singular"), fx::Error);
}

// ---- det, slogdet ----

TEST_CASE("det and slogdet: known values, pivot parity, batches, integers and 0x0") {
  CHECK(fx::linalg::det(fx::tensor({{1.0, 2.0}, {3.0, 4.0}})).item<double>() == doctest::Approx(-2.0).epsilon(1e-15));
  // A permutation matrix: det is the sign of the permutation (one swap: -1; a 3-cycle: +1).
  CHECK(fx::linalg::det(fx::tensor({{0.0, 1.0}, {1.0, 0.0}})).item<double>() == -1.0);
  CHECK(fx::linalg::det(fx::tensor({{0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {1.0, 0.0, 0.0}})).item<double>() == 1.0);
  fx::Tensor ints = fx::tensor({{2, 1}, {7, 4}});
  fx::Tensor d = fx::linalg::det(ints);
  CHECK(d.dtype() == fx::f64);
  CHECK(d.item<double>() == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(fx::linalg::det(fx::zeros({0, 0})).item<double>() == 1.0);
  // 3x3 against the rule of Sarrus, batched.
  fx::Tensor a = random({4, 3, 3}, 21);
  std::vector<double> v = vals(a), got = vals(fx::linalg::det(a));
  auto [sign, logabsdet] = fx::linalg::slogdet(a);
  std::vector<double> s = vals(sign), la = vals(logabsdet);
  for (int b = 0; b < 4; ++b) {
    const double* m = v.data() + 9 * b;
    double want =
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    CHECK(got[b] == doctest::Approx(want).epsilon(1e-13));
    CHECK(s[b] == (want > 0 ? 1.0 : -1.0));
    CHECK(la[b] == doctest::Approx(std::log(std::fabs(want))).epsilon(1e-13));
  }
}

TEST_CASE("det and slogdet: gradients det a⁻ᵀ and a⁻ᵀ, the logdet Hessian, under jit too") {
  fx::Tensor a = random({3, 3}, 5) + fx::eye(3) * 4.0;
  fx::Tensor inv_t = mT(fx::inv(a));
  fx::Tensor g = fx::grad([](const fx::Tensor& x) { return fx::linalg::det(x); })(a);
  CHECK(max_diff(g, inv_t * fx::linalg::det(a)) < 1e-12);
  auto logdet = [](const fx::Tensor& x) { return std::get<1>(fx::linalg::slogdet(x)); };
  CHECK(max_diff(fx::grad(logdet)(a), inv_t) < 1e-13);
  CHECK(max_diff(fx::jit(fx::grad(logdet))(a), inv_t) < 1e-13);
  // d² logdet [e, e] = -tr(a⁻¹ e a⁻¹ e).
  fx::Tensor e = random({3, 3}, 6);
  fx::Tensor hv = fx::hvp(logdet, a, e);
  fx::Tensor ae = fx::matmul(fx::inv(a), e);
  CHECK(fx::sum(hv * e).item<double>() == doctest::Approx(-fx::sum(ae * mT(ae)).item<double>()).epsilon(1e-12));
  // det of a 2x2 matrix is ad - bc: its Hessian is the constant pairing a with d and b with c.
  fx::Tensor h =
      fx::hessian([](const fx::Tensor& x) { return fx::linalg::det(x); })(fx::tensor({{2.0, 1.0}, {-1.0, 3.0}}));
  CHECK(
      max_diff(fx::reshape(h, {4, 4}),
               fx::tensor({{0.0, 0.0, 0.0, 1.0}, {0.0, 0.0, -1.0, 0.0}, {0.0, -1.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}})) <
      1e-14);
  // Batched: vmap of det's gradient equals the per-matrix closed form.
  fx::Tensor batch = random({2, 3, 3}, 7) + fx::eye(3) * 4.0;
  fx::Tensor gb = fx::vmap(fx::grad([](const fx::Tensor& x) { return fx::linalg::det(x); }))(batch);
  CHECK(max_diff(gb, mT(fx::inv(batch)) * fx::expand_dims(fx::linalg::det(batch), {1, 2})) < 1e-11);
}

// ---- qr ----

TEST_CASE("qr: LAPACK's signs (r's diagonal -sign(x0) |x|) on known columns") {
  auto [q, r] = fx::linalg::qr(fx::tensor({{3.0}, {4.0}}));
  CHECK(max_diff(q, fx::tensor({{-0.6}, {-0.8}})) < 1e-15);
  CHECK(max_diff(r, fx::tensor({{-5.0}})) < 1e-15);
  auto [q2, r2] = fx::linalg::qr(fx::tensor({{-3.0}, {4.0}}));
  CHECK(max_diff(r2, fx::tensor({{5.0}})) < 1e-15);
  CHECK(max_diff(q2, fx::tensor({{-0.6}, {0.8}})) < 1e-15);
  // A column already on e0 is left alone (no reflection): r keeps the sign, q is the identity.
  auto [q3, r3] = fx::linalg::qr(fx::tensor({{2.0, 1.0}, {0.0, -3.0}}), true);
  CHECK(max_diff(q3, fx::eye(2)) == 0);
  CHECK(max_diff(r3, fx::tensor({{2.0, 1.0}, {0.0, -3.0}})) == 0);
}

TEST_CASE("qr: q r = a, orthonormal q, upper triangular r, reduced and complete, tall, wide, batched") {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 3}, {3, 5}, {4, 4}, {2, 6, 2}, {60, 30}, {30, 60}})
    for (bool full : {false, true}) {
      CAPTURE(shape[shape.size() - 2]);
      CAPTURE(shape.back());
      CAPTURE(full);
      fx::Tensor a = random(shape, 40 + shape.back());
      auto [q, r] = fx::linalg::qr(a, full);
      const int64_t m = shape[shape.size() - 2], n = shape.back(), k = full ? m : std::min(m, n);
      CHECK(q.shape().dims().back() == k);
      CHECK(r.shape()[r.ndim() - 2] == k);
      CHECK(max_diff(fx::matmul(q, r), a) < 1e-12);
      fx::Tensor qtq = fx::matmul(mT(q), q);
      CHECK(max_diff(qtq, fx::broadcast_to(fx::eye(k), qtq.shape())) < 1e-13);
      std::vector<double> rv = vals(r);
      for (size_t i = 0; i < rv.size(); ++i) {
        const int64_t row = static_cast<int64_t>(i) / n % k, col = static_cast<int64_t>(i) % n;
        if (row > col) CHECK(rv[i] == 0);
      }
    }
}

TEST_CASE("qr: the wide derivative matches finite differences; a complete tall QR has none") {
  fx::Tensor a = random({2, 4}, 50) + fx::concatenate({fx::eye(2) * 3.0, fx::zeros({2, 2})}, 1);
  fx::Tensor t = random({2, 4}, 51);
  auto f = [](const fx::Tensor& x) {
    auto [q, r] = fx::linalg::qr(x);
    return fx::sum(q * q * 0.5) + fx::sum(r * fx::tensor({{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}}));
  };
  const double eps = 1e-6;
  double fd = (f(a + t * eps).item<double>() - f(a - t * eps).item<double>()) / (2 * eps);
  CHECK(fx::sum(fx::grad(f)(a) * t).item<double>() == doctest::Approx(fd).epsilon(1e-7));
  CHECK_THROWS_AS(
      fx::grad([](const fx::Tensor& x) { return fx::sum(std::get<1>(fx::linalg::qr(x, true))); })(random({3, 2}, 52)),
      fx::NotImplementedError);
}

// ---- matrix_power ----

TEST_CASE("matrix_power: identity, repeated squaring, negative powers, integers, gradient") {
  fx::Tensor a = random({2, 3, 3}, 60) + fx::eye(3) * 3.0;
  CHECK(max_diff(fx::linalg::matrix_power(a, 0), fx::broadcast_to(fx::eye(3), a.shape())) == 0);
  CHECK(max_diff(fx::linalg::matrix_power(a, 1), a) == 0);
  fx::Tensor a2 = fx::matmul(a, a);
  CHECK(max_diff(fx::linalg::matrix_power(a, 5), fx::matmul(fx::matmul(a2, a2), a)) < 1e-10);
  fx::Tensor ai = fx::inv(a);
  CHECK(max_diff(fx::linalg::matrix_power(a, -3), fx::matmul(fx::matmul(ai, ai), ai)) < 1e-14);
  fx::Tensor ints = fx::tensor({{1, 1}, {1, 0}});
  fx::Tensor fib = fx::linalg::matrix_power(ints, 10);
  CHECK(fib.dtype() == ints.dtype());
  CHECK(vals(fib) == std::vector<double>{89, 55, 55, 34});
  CHECK(fx::linalg::matrix_power(ints, -1).dtype() == fx::f64);
  CHECK_THROWS_WITH_AS(fx::linalg::matrix_power(fx::tensor({{1.0, 2.0}, {2.0, 4.0}}), -2),
                       doctest::Contains("is singular"), fx::Error);
  auto cube = [](const fx::Tensor& x) { return fx::sum(fx::linalg::matrix_power(x, 3)); };
  auto direct = [](const fx::Tensor& x) { return fx::sum(fx::matmul(fx::matmul(x, x), x)); };
  CHECK(max_diff(fx::grad(cube)(a), fx::grad(direct)(a)) < 1e-11);
}

// ---- expm ----

TEST_CASE("expm: known exponentials, inverse pairs, large norms (scaling and squaring), jit") {
  CHECK(max_diff(fx::linalg::expm(fx::zeros({3, 3})), fx::eye(3)) == 0);
  CHECK(max_diff(fx::linalg::expm(fx::tensor({{0.0, 1.0}, {0.0, 0.0}})), fx::tensor({{1.0, 1.0}, {0.0, 1.0}})) < 1e-15);
  CHECK(max_diff(fx::linalg::expm(fx::tensor({{1.0, 0.0}, {0.0, -2.0}})),
                 fx::tensor({{std::exp(1.0), 0.0}, {0.0, std::exp(-2.0)}})) < 1e-15);
  // A rotation generator: expm([[0, -t], [t, 0]]) = [[cos t, -sin t], [sin t, cos t]], t large.
  const double t = 7.5;
  CHECK(max_diff(fx::linalg::expm(fx::tensor({{0.0, -t}, {t, 0.0}})),
                 fx::tensor({{std::cos(t), -std::sin(t)}, {std::sin(t), std::cos(t)}})) < 1e-13);
  fx::Tensor a = random({2, 4, 4}, 70, -1.5, 1.5);
  CHECK(max_diff(fx::matmul(fx::linalg::expm(a), fx::linalg::expm(-a)), fx::broadcast_to(fx::eye(4), a.shape())) <
        1e-13);
  CHECK(max_diff(fx::jit([](const fx::Tensor& x) { return fx::linalg::expm(x); })(a), fx::linalg::expm(a)) == 0);
  CHECK(fx::linalg::expm(fx::tensor({{1, 0}, {0, 1}})).dtype() == fx::f64);
  // Non-finite input: a NaN matrix from both kernels, never a finite-looking answer.
  fx::Tensor inf = fx::tensor({{std::numeric_limits<double>::infinity(), 0.0}, {0.0, 1.0}});
  for (fx::Backend b : {fx::Backend::cpu, fx::Backend::reference})
    for (double x : vals(fx::eval_primitive(*fx::find_primitive("expm"), {inf}, fx::no_params(), b)[0]))
      CHECK(std::isnan(x));
}

TEST_CASE("expm: gradient and Hessian through expm_frechet against finite differences, third order works") {
  fx::Tensor a = random({3, 3}, 80, -1, 1), w = random({3, 3}, 81), t = random({3, 3}, 82);
  auto f = [&](const fx::Tensor& x) { return fx::sum(fx::linalg::expm(x) * w); };
  const double eps = 1e-6;
  double fd = (f(a + t * eps).item<double>() - f(a - t * eps).item<double>()) / (2 * eps);
  CHECK(fx::sum(fx::grad(f)(a) * t).item<double>() == doctest::Approx(fd).epsilon(1e-8));
  auto dir = [&](const fx::Tensor& x) { return fx::sum(fx::grad(f)(x) * t); };
  double fd2 = (dir(a + t * eps).item<double>() - dir(a - t * eps).item<double>()) / (2 * eps);
  CHECK(fx::sum(fx::hvp(f, a, t) * t).item<double>() == doctest::Approx(fd2).epsilon(1e-6));
  // Third order: a jvp of the Hessian-vector product (expm_frechet of a 4n block inside).
  auto hv = [&](const fx::Tensor& x) { return fx::sum(fx::hvp(f, x, t) * t); };
  double fd3 = (hv(a + t * eps).item<double>() - hv(a - t * eps).item<double>()) / (2 * eps);
  double third = fx::jvp(hv, std::make_tuple(a), std::make_tuple(t)).second.item<double>();
  CHECK(third == doctest::Approx(fd3).epsilon(1e-5));
}

// ---- kernels ----

TEST_CASE("f64 CPU kernels are within 1e-10 of the long-double reference (samples and large sizes)") {
  // Each case: one sample (its staged equation gives the params, e.g. qr's full_matrices).
  std::vector<fx::testing::Sample> cases;
  for (const char* name : {"lu", "qr", "expm", "expm_frechet"})
    for (fx::testing::Sample& s : fx::testing::sample_registry().at(name).make(fx::f64)) cases.push_back(s);
  auto unary = [](auto f, fx::Tensor a) { return fx::testing::Sample{"", {a}, fx::testing::unary_fn(f), {}}; };
  auto lu = [](const fx::Tensor& x) { return std::get<0>(fx::lax::lu(x)); };
  cases.push_back(unary(lu, random({70, 70}, 90)));  // Eigen's blocked LU (above 16 columns)
  cases.push_back(unary(lu, random({90, 40}, 91)));
  cases.push_back(unary(lu, random({40, 90}, 92)));
  for (bool full : {false, true})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{80, 50}, {50, 80}})
      cases.push_back(
          unary([full](const fx::Tensor& x) { return std::get<0>(fx::lax::qr(x, full)); }, random(shape, 97)));
  auto expm = [](const fx::Tensor& x) { return fx::lax::expm(x); };
  cases.push_back(unary(expm, random({24, 24}, 93, -0.5, 0.5)));
  cases.push_back(unary(expm, random({3, 3}, 94, -4, 4)));  // 1-norm about 6: Padé 13 with squarings
  cases.push_back(fx::testing::Sample{
      "",
      {random({6, 6}, 95, -1, 1), random({6, 6}, 96)},
      fx::testing::binary_fn([](const fx::Tensor& a, const fx::Tensor& e) { return fx::lax::expm_frechet(a, e); }),
      {}});
  for (const fx::testing::Sample& s : cases) {
    fx::Jaxpr j = fx::testing::stage_sample(s);
    REQUIRE(j.equations.size() == 1);
    const fx::Primitive& p = *j.equations[0].primitive;
    CAPTURE(p.name);
    CAPTURE(s.inputs[0].aval());
    std::vector<fx::Tensor> in = fx::testing::equation_inputs(j, s);
    auto ref = fx::eval_primitive(p, in, *j.equations[0].params, fx::Backend::reference);
    auto cpu = fx::eval_primitive(p, in, *j.equations[0].params, fx::Backend::cpu);
    for (size_t k = 0; k < ref.size(); ++k) {
      double scale = 1;
      for (double x : vals(ref[k])) scale = std::max(scale, std::fabs(x));
      CHECK(max_diff(cpu[k], ref[k]) <= 1e-10 * scale);
    }
  }
}
