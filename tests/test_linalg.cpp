// fx::solve / fx::inv and the linalg_solve primitive: known answers, residuals, numpy semantics
// (vector b, broadcast batch dims, promotion), gradients against the closed forms, vmap against a
// loop (one batched solve, no loop), jit, hessian, and the singular-matrix and shape/dtype errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "runtime/switches.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using doctest::Contains;
using fluxion::testing::jaxpr_text;
using fluxion::testing::message_of;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }

using fluxion::testing::max_diff;

// Random (batch..., n, n) in [-1, 1) plus (n + 1) I: diagonally dominant, well conditioned.
fx::Tensor well_conditioned(std::vector<int64_t> shape, uint64_t seed, fx::DType dt = fx::f64) {
  const int64_t n = shape.back();
  return fx::testing::random_tensor(fx::Shape(shape), dt, seed, -1, 1) + fx::eye(n, dt) * static_cast<double>(n + 1);
}
fx::Tensor random(std::vector<int64_t> shape, uint64_t seed, fx::DType dt = fx::f64) {
  return fx::testing::random_tensor(fx::Shape(shape), dt, seed);
}

int count(const std::string& text, const std::string& what) {
  int c = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++c;
  return c;
}

}  // namespace

// ---- values ----

TEST_CASE("solve: known answers for a vector and a matrix right-hand side, f64 and f32") {
  // 2x + y = 3, x + 3y = 5  ->  x = 0.8, y = 1.4 (and a second column 1, 0 -> 0.6, -0.2).
  fx::Tensor a = fx::tensor({{2.0, 1.0}, {1.0, 3.0}});
  fx::Tensor x = fx::solve(a, fx::tensor({3.0, 5.0}));
  CHECK(x.shape() == std::vector<int64_t>{2});
  CHECK(max_diff(x, fx::tensor({0.8, 1.4})) < 1e-15);
  fx::Tensor xm = fx::solve(a, fx::tensor({{3.0, 1.0}, {5.0, 0.0}}));
  CHECK(xm.shape() == std::vector<int64_t>{2, 2});
  CHECK(max_diff(xm, fx::tensor({{0.8, 0.6}, {1.4, -0.2}})) < 1e-15);
  fx::Tensor x32 = fx::solve(fx::astype(a, fx::f32), fx::tensor({3.f, 5.f}));
  CHECK(x32.dtype() == fx::f32);
  CHECK(max_diff(x32, fx::tensor({0.8, 1.4})) < 1e-6);
  // A permutation matrix needs pivoting: [[0, 1], [1, 0]] x = (1, 2) -> x = (2, 1).
  CHECK(vals(fx::solve(fx::tensor({{0.0, 1.0}, {1.0, 0.0}}), fx::tensor({1.0, 2.0}))) == std::vector<double>{2, 1});
}

TEST_CASE("solve: a · solve(a, b) equals b, batched and unbatched, f64 and f32, up to n = 200") {
  for (fx::DType dt : {fx::f64, fx::f32}) {
    const double tol = dt == fx::f64 ? 1e-12 : 1e-4;
    for (std::vector<int64_t> batch : {std::vector<int64_t>{}, {4}, {2, 3}}) {
      for (int64_t n : {1, 2, 7, 33}) {
        CAPTURE(dt);
        CAPTURE(n);
        std::vector<int64_t> as = batch, bs = batch;
        as.insert(as.end(), {n, n});
        bs.insert(bs.end(), {n, 3});
        fx::Tensor a = well_conditioned(as, 10 + n, dt), b = random(bs, 20 + n, dt);
        fx::Tensor x = fx::solve(a, b);
        CHECK(x.aval() == b.aval());
        CHECK(max_diff(fx::matmul(a, x), b) < tol * n);
      }
    }
  }
  // Large enough for the threaded path of the CPU kernel (a blocked LU).
  fx::Tensor a = fx::testing::random_tensor({200, 200}, fx::f64, 3, -1, 1) + fx::eye(200) * 4.0;
  fx::Tensor b = random({200, 5}, 4);
  CHECK(max_diff(fx::matmul(a, fx::solve(a, b)), b) < 1e-10);
}

TEST_CASE("solve: the cpu kernel equals the reference kernel on larger and batched systems") {
  const fx::Primitive* p = fx::find_primitive("linalg_solve");
  REQUIRE(p != nullptr);
  for (fx::DType dt : {fx::f64, fx::f32}) {
    fx::Tensor a = well_conditioned({3, 40, 40}, 5, dt), b = random({3, 40, 4}, 6, dt);
    auto ref = fx::eval_primitive(*p, {a, b}, fx::no_params(), fx::Backend::reference);
    auto cpu = fx::eval_primitive(*p, {a, b}, fx::no_params(), fx::Backend::cpu);
    CHECK(max_diff(cpu[0], ref[0]) < (dt == fx::f64 ? 1e-13 : 1e-5));
  }
}

TEST_CASE("solve: the fixed-size kernels (n <= 8) equal the reference and the general kernel, pivoting included") {
  const fx::Primitive* p = fx::find_primitive("linalg_solve");
  REQUIRE(p != nullptr);
  for (fx::DType dt : {fx::f64, fx::f32}) {
    for (int64_t n = 1; n <= 9; ++n) {
      for (int64_t k : {1, 3}) {
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(fx::dtype_name(dt));
        // Rows reversed: the largest candidate of the first column is in the last row, so elimination pivots.
        std::vector<double> v = vals(well_conditioned({37, n, n}, 40 + static_cast<uint64_t>(n)));
        for (int64_t m = 0; m < 37; ++m)
          for (int64_t i = 0; i < n / 2; ++i)
            for (int64_t j = 0; j < n; ++j)
              std::swap(v[static_cast<size_t>((m * n + i) * n + j)],
                        v[static_cast<size_t>((m * n + n - 1 - i) * n + j)]);
        fx::Tensor a = fx::astype(fx::from_vector(v, {37, n, n}), dt);
        fx::Tensor b = random({37, n, k}, 60 + static_cast<uint64_t>(n), dt);
        auto ref = fx::eval_primitive(*p, {a, b}, fx::no_params(), fx::Backend::reference);
        auto fixed = fx::eval_primitive(*p, {a, b}, fx::no_params(), fx::Backend::cpu);
        fx::runtime::set_disabled("small_linalg");
        auto general = fx::eval_primitive(*p, {a, b}, fx::no_params(), fx::Backend::cpu);
        fx::runtime::set_disabled("");
        const double tol = dt == fx::f64 ? 1e-13 : 2e-5;
        CHECK(max_diff(fixed[0], ref[0]) < tol);
        CHECK(max_diff(fixed[0], general[0]) < tol);
      }
    }
  }
  // NaN in one matrix gives NaN in its solution only (no throw: NaN is not a zero pivot).
  std::vector<double> v = vals(well_conditioned({3, 4, 4}, 70));
  v[16 + 5] = std::nan("");
  auto x = vals(fx::solve(fx::from_vector(v, {3, 4, 4}), fx::ones({3, 4, 1})));
  for (int i = 0; i < 12; ++i) CHECK(std::isnan(x[static_cast<size_t>(i)]) == (i >= 4 && i < 8));
}

TEST_CASE("solve: numpy semantics — vector b, broadcast batch dims, dtype promotion, inv") {
  fx::Tensor a = well_conditioned({2, 3, 3}, 30);
  // A stack of vectors (b.ndim() == a.ndim() - 1) and one shared 1-d vector.
  fx::Tensor bv = random({2, 3}, 31);
  fx::Tensor xv = fx::solve(a, bv);
  CHECK(xv.shape() == std::vector<int64_t>{2, 3});
  for (int64_t i = 0; i < 2; ++i) {
    fx::Tensor ai = fx::squeeze(fx::slice(a, {i, 0, 0}, {i + 1, 3, 3}), {0});
    fx::Tensor bi = fx::squeeze(fx::slice(bv, {i, 0}, {i + 1, 3}), {0});
    fx::Tensor xi = fx::squeeze(fx::slice(xv, {i, 0}, {i + 1, 3}), {0});
    CHECK(max_diff(xi, fx::solve(ai, bi)) < 1e-15);
  }
  fx::Tensor b1 = random({3}, 32);
  CHECK(fx::solve(a, b1).shape() == std::vector<int64_t>{2, 3});
  // Broadcast batch dims: a (2, 1, 3, 3) with b (1, 4, 3, 2) -> (2, 4, 3, 2); a (3, 3) with b (4, 3, 2).
  fx::Tensor a4 = fx::reshape(a, {2, 1, 3, 3});
  fx::Tensor b4 = random({1, 4, 3, 2}, 33);
  fx::Tensor x4 = fx::solve(a4, b4);
  CHECK(x4.shape() == std::vector<int64_t>{2, 4, 3, 2});
  CHECK(max_diff(fx::matmul(a4, x4), fx::broadcast_to(b4, {2, 4, 3, 2})) < 1e-13);
  fx::Tensor a2 = well_conditioned({3, 3}, 34);
  fx::Tensor b3 = fx::reshape(b4, {4, 3, 2});
  fx::Tensor x3 = fx::solve(a2, b3);
  CHECK(x3.shape() == std::vector<int64_t>{4, 3, 2});
  CHECK(max_diff(fx::matmul(a2, x3), b3) < 1e-13);
  // Promotion: ints become f64, f32 with f64 is f64, f32 stays f32.
  fx::Tensor ai = fx::tensor({{2, 1}, {1, 3}});
  fx::Tensor x = fx::solve(ai, fx::tensor({3, 5}));
  CHECK(x.dtype() == fx::f64);
  CHECK(max_diff(x, fx::tensor({0.8, 1.4})) < 1e-15);
  CHECK(fx::solve(fx::astype(ai, fx::f32), fx::tensor({3.0, 5.0})).dtype() == fx::f64);
  CHECK(fx::solve(fx::astype(ai, fx::f32), fx::tensor({3, 5})).dtype() == fx::f32);
  // inv: batched, and a · inv(a) = I.
  fx::Tensor inv = fx::inv(a);
  CHECK(inv.aval() == a.aval());
  CHECK(max_diff(fx::matmul(a, inv), fx::broadcast_to(fx::eye(3), {2, 3, 3})) < 1e-14);
  CHECK(max_diff(fx::inv(ai), fx::tensor({{0.6, -0.2}, {-0.2, 0.4}})) < 1e-15);
  // The op binds exactly one linalg_solve.
  std::string text = jaxpr_text([](const fx::Tensor& m, const fx::Tensor& v) { return fx::solve(m, v); }, a, bv);
  CHECK(count(text, "linalg_solve") == 1);
}

TEST_CASE("solve: empty systems (n = 0, k = 0, batch 0) give empty results") {
  CHECK(fx::solve(fx::zeros({0, 0}), fx::zeros({0, 2})).shape() == std::vector<int64_t>{0, 2});
  CHECK(fx::solve(fx::eye(3), fx::zeros({3, 0})).shape() == std::vector<int64_t>{3, 0});
  CHECK(fx::solve(fx::zeros({0, 3, 3}), fx::zeros({0, 3})).shape() == std::vector<int64_t>{0, 3});
}

// ---- derivatives ----

TEST_CASE("grad of solve: wrt b is a⁻ᵀ w and wrt a is -a⁻ᵀ w xᵀ") {
  fx::Tensor a = well_conditioned({4, 4}, 40), b = random({4, 2}, 41), w = random({4, 2}, 42);
  auto f = [&](const fx::Tensor& m, const fx::Tensor& v) { return fx::sum(w * fx::solve(m, v)); };
  auto [ga, gb] = fx::grad(f, fx::argnums<0, 1>)(a, b);
  fx::Tensor x = fx::solve(a, b);
  fx::Tensor gb_want = fx::solve(fx::transpose(a), w);
  CHECK(max_diff(gb, gb_want) < 1e-14);
  CHECK(max_diff(ga, -fx::matmul(gb_want, fx::transpose(x))) < 1e-14);
  // Vector b, batched a: the same closed forms per matrix.
  fx::Tensor ab = well_conditioned({3, 4, 4}, 43), bb = random({3, 4}, 44), wb = random({3, 4}, 45);
  auto fb = [&](const fx::Tensor& m, const fx::Tensor& v) { return fx::sum(wb * fx::solve(m, v)); };
  auto [gab, gbb] = fx::grad(fb, fx::argnums<0, 1>)(ab, bb);
  fx::Tensor lam = fx::solve(fx::transpose(ab, {0, 2, 1}), wb);  // (3, 4)
  CHECK(max_diff(gbb, lam) < 1e-14);
  fx::Tensor xb = fx::solve(ab, bb);
  CHECK(max_diff(gab, -fx::expand_dims(lam, 2) * fx::expand_dims(xb, 1)) < 1e-14);
  // f32 too.
  fx::Tensor a32 = fx::astype(a, fx::f32);
  fx::Tensor g32 = fx::grad([&](const fx::Tensor& v) { return fx::sum(fx::astype(w, fx::f32) * fx::solve(a32, v)); })(
      fx::astype(b, fx::f32));
  CHECK(g32.dtype() == fx::f32);
  CHECK(max_diff(g32, gb_want) < 1e-5);
}

TEST_CASE("jvp of solve: da and db tangents against a central difference") {
  fx::Tensor a = well_conditioned({3, 3}, 50), b = random({3, 2}, 51);
  fx::Tensor da = random({3, 3}, 52), db = random({3, 2}, 53);
  auto f = [](const fx::Tensor& m, const fx::Tensor& v) { return fx::solve(m, v); };
  fx::Tensor t = fx::jvp(f, std::make_tuple(a, b), std::make_tuple(da, db)).second;
  const double eps = 1e-6;
  fx::Tensor fd = (fx::solve(a + da * eps, b + db * eps) - fx::solve(a - da * eps, b - db * eps)) / (2 * eps);
  CHECK(max_diff(t, fd) < 1e-8);
  // Only db: the tangent is solve(a, db).
  fx::Tensor tb =
      fx::jvp([&](const fx::Tensor& v) { return fx::solve(a, v); }, std::make_tuple(b), std::make_tuple(db)).second;
  CHECK(max_diff(tb, fx::solve(a, db)) < 1e-15);
}

TEST_CASE("vmap of solve equals a loop and binds one batched solve") {
  fx::Tensor as = well_conditioned({4, 3, 3}, 60), bs = random({4, 3, 2}, 61);
  fx::Tensor a0 = well_conditioned({3, 3}, 62), b0 = random({3, 2}, 63);
  auto f = [](const fx::Tensor& m, const fx::Tensor& v) { return fx::solve(m, v); };
  auto row = [](const fx::Tensor& t, int64_t i) {
    std::vector<int64_t> lo(static_cast<size_t>(t.ndim()), 0), hi = t.shape().dims();
    lo[0] = i, hi[0] = i + 1;
    return fx::squeeze(fx::slice(t, lo, hi), {0});
  };
  fx::Tensor both = fx::vmap(f)(as, bs);
  fx::Tensor only_a = fx::vmap(f, fx::in_axes(0, fx::none))(as, b0);
  fx::Tensor only_b = fx::vmap(f, fx::in_axes(fx::none, 0))(a0, bs);
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(max_diff(row(both, i), f(row(as, i), row(bs, i))) < 1e-14);
    CHECK(max_diff(row(only_a, i), f(row(as, i), b0)) < 1e-14);
    CHECK(max_diff(row(only_b, i), f(a0, row(bs, i))) < 1e-14);
  }
  // Right-hand sides mapped on a later axis, out_axes 1, vector b.
  fx::Tensor bv = random({3, 5}, 64);  // five vectors, mapped along axis 1
  fx::Tensor xv = fx::vmap(f, fx::in_axes(fx::none, 1), fx::out_axes(1))(a0, bv);
  CHECK(max_diff(xv, fx::solve(a0, bv)) < 1e-14);
  // No per-example loop: one linalg_solve in each Jaxpr.
  CHECK(count(jaxpr_text(fx::vmap(f), as, bs), "linalg_solve") == 1);
  CHECK(count(jaxpr_text(fx::vmap(f, fx::in_axes(fx::none, 0)), a0, bs), "linalg_solve") == 1);
}

TEST_CASE("jit of solve and of its gradient equals the eager results") {
  fx::Tensor a = well_conditioned({2, 4, 4}, 70), b = random({2, 4, 3}, 71);
  auto f = [](const fx::Tensor& m, const fx::Tensor& v) { return fx::solve(m, v); };
  CHECK(max_diff(fx::jit(f)(a, b), f(a, b)) < 1e-15);
  auto loss = [](const fx::Tensor& m, const fx::Tensor& v) { return fx::sum(fx::square(fx::solve(m, v))); };
  auto [ga, gb] = fx::grad(loss, fx::argnums<0, 1>)(a, b);
  auto [ja, jb] = fx::jit(fx::grad(loss, fx::argnums<0, 1>))(a, b);
  CHECK(max_diff(ja, ga) < 1e-13);
  CHECK(max_diff(jb, gb) < 1e-13);
}

TEST_CASE("hessian of |solve(a, b)|² in b is 2 a⁻ᵀ a⁻¹, and in a it is symmetric") {
  fx::Tensor a = well_conditioned({3, 3}, 80), b = random({3}, 81);
  fx::Tensor h = fx::hessian([&](const fx::Tensor& v) { return fx::sum(fx::square(fx::solve(a, v))); })(b);
  fx::Tensor ai = fx::inv(a);
  CHECK(max_diff(h, 2.0 * fx::matmul(fx::transpose(ai), ai)) < 1e-13);
  auto in_a = [&](const fx::Tensor& m) { return fx::sum(fx::square(fx::solve(m, b))); };
  fx::Tensor ha = fx::reshape(fx::hessian(in_a)(a), {9, 9});
  CHECK(max_diff(ha, fx::transpose(ha)) < 1e-12);
  // Against a difference of gradients along one direction.
  fx::Tensor t = random({3, 3}, 82);
  const double eps = 1e-6;
  fx::Tensor fd = (fx::grad(in_a)(a + t * eps) - fx::grad(in_a)(a - t * eps)) / (2 * eps);
  CHECK(max_diff(fx::reshape(fx::matmul(ha, fx::reshape(t, {9})), {3, 3}), fd) < 1e-6);
}

// ---- errors ----

TEST_CASE("solve: a singular matrix throws an Error naming linalg_solve, the batch index and the shape") {
  std::string m = message_of<fx::Error>([] {
    fx::solve(fx::tensor({{1.0, 2.0}, {2.0, 4.0}}), fx::tensor({1.0, 1.0}));
  });
  CHECK(m.find("[linalg_solve] the matrix f64[2,2] is singular (zero pivot in column 1") == 0);
  // Batch index 3 of five: two equal rows.
  fx::Tensor a = well_conditioned({5, 4, 4}, 90);
  std::vector<double> v = vals(a);
  for (int j = 0; j < 4; ++j) v[3 * 16 + 4 + j] = v[3 * 16 + j];
  fx::Tensor bad = fx::from_vector(v, {5, 4, 4});
  fx::Tensor b = random({5, 4, 1}, 91);
  for (fx::Backend backend : {fx::Backend::cpu, fx::Backend::reference}) {
    CAPTURE(backend_name(backend));
    std::string mb = message_of<fx::Error>([&] {
      fx::eval_primitive(*fx::find_primitive("linalg_solve"), {bad, b}, fx::no_params(), backend);
    });
    CHECK(mb.find("[linalg_solve] the matrix at batch index 3 of f64[5,4,4] is singular") == 0);
  }
  CHECK(message_of<fx::Error>([&] { fx::solve(bad, b); }).find("batch index 3 of f64[5,4,4]") != std::string::npos);
  // Several batch dims: the multi-index; a zero column in f32; under jit.
  CHECK(message_of<fx::Error>([&] {
          fx::solve(fx::reshape(bad, {1, 5, 4, 4}), fx::reshape(b, {1, 5, 4, 1}));
        }).find("the matrix at batch index (0,3) of f64[1,5,4,4] is singular") != std::string::npos);
  fx::Tensor zc = fx::tensor({{1.f, 0.f, 2.f}, {3.f, 0.f, 1.f}, {4.f, 0.f, 5.f}});
  CHECK(message_of<fx::Error>([&] {
          fx::solve(zc, fx::ones({3}, fx::f32));
        }).find("[linalg_solve] the matrix f32[3,3] is singular (zero pivot in column 1") == 0);
  CHECK(message_of<fx::Error>([&] {
          fx::jit([](const fx::Tensor& m, const fx::Tensor& v) { return fx::solve(m, v); })(bad, b);
        }).find("batch index 3 of f64[5,4,4] is singular") != std::string::npos);
  CHECK(message_of<fx::Error>([&] { fx::inv(fx::zeros({2, 2})); }).find("is singular") != std::string::npos);
}

TEST_CASE("solve: shape and dtype errors name the op and the operands") {
  using fx::ShapeError, fx::DTypeError;
  CHECK(message_of<ShapeError>([] {
          fx::solve(fx::zeros({3, 4}), fx::zeros({3}));
        }) ==
        "[solve] a must be a square matrix or a stack of them (..., n, n), got f64[3,4]. Only square systems have a "
        "unique solution.");
  CHECK(message_of<ShapeError>([] { fx::solve(fx::zeros({3}), fx::zeros({3})); }).find("got f64[3].") !=
        std::string::npos);
  CHECK(message_of<ShapeError>([] { fx::solve(fx::eye(3), fx::zeros({4})); }) ==
        "[solve] a f64[3,3] is 3x3 but b f64[4] has 4 rows (b is read as a vector (..., n)). b needs n = 3 rows.");
  CHECK(message_of<ShapeError>([] {
          fx::solve(fx::eye(3), fx::zeros({4, 2}));
        }).find("b f64[4,2] has 4 rows (b is read as a matrix (..., n, k))") != std::string::npos);
  CHECK(message_of<ShapeError>([] { fx::solve(fx::eye(3), fx::scalar(1.0)); }).find("[solve] b must be a vector") == 0);
  CHECK(message_of<ShapeError>([] {
          fx::solve(fx::zeros({2, 3, 3}), fx::zeros({4, 3, 1}));
        }) ==
        "[solve] batch dimensions [2] of f64[2,3,3] and [4] of f64[4,3,1] do not broadcast. They must be equal or 1, "
        "aligned from the right.");
  CHECK(message_of<ShapeError>([] { fx::inv(fx::zeros({2, 3})); }).find("[inv] a must be a square matrix") == 0);
  // The primitive itself: exact shapes and one float dtype.
  CHECK(message_of<DTypeError>([] {
          fx::lax::linalg_solve(fx::eye(2), fx::ones({2, 1}, fx::f32));
        }) ==
        "[linalg_solve] operand dtypes differ: a f64[2,2] and b f32[2,1]. Convert one with fx::astype (fx::solve "
        "promotes automatically).");
  CHECK(message_of<DTypeError>([] {
          fx::lax::linalg_solve(fx::ones({2, 2}, fx::i32), fx::ones({2, 1}, fx::i32));
        }).find("[linalg_solve] needs floating operands (f32 or f64)") == 0);
  CHECK(message_of<ShapeError>([] {
          fx::lax::linalg_solve(fx::eye(2), fx::ones({2}));
        }).find("[linalg_solve] b f64[2] must have the rank of a f64[2,2] (2)") == 0);
}
