// fx::linalg::cholesky, triangular_solve and cho_solve beyond the registry samples: known factors,
// L Lᵀ = a at n = 200 (LAPACK's path when OpenBLAS is linked) within 1e-10 of the long-double
// reference, the symmetrization, the NaN mode and the errors under jit and vmap, the unread triangle,
// cho_solve against solve, and the log-determinant gradient a⁻¹ with its hessian.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "primitives/linalg_triangular.hpp"
#include "runtime/switches.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
namespace la = fluxion::linalg;
using doctest::Contains;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }

using fluxion::testing::max_diff;

fx::Tensor mT(const fx::Tensor& x) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return fx::transpose(x, perm);
}

// B Bᵀ + n I, B random in [-1, 1): symmetric positive definite, well conditioned.
fx::Tensor spd(std::vector<int64_t> shape, uint64_t seed, fx::DType dt = fx::f64) {
  const int64_t n = shape.back();
  fx::Tensor b = fx::testing::random_tensor(fx::Shape(shape), dt, seed, -1, 1);
  return fx::matmul(b, mT(b)) + fx::eye(n, dt) * static_cast<double>(n);
}

fx::Tensor log_det(const fx::Tensor& a) {
  fx::Tensor l = la::cholesky(a);
  const int64_t n = a.shape()[0];
  return fx::sum(fx::log(l * fx::eye(n) + (1.0 - fx::eye(n)))) * 2.0;
}

}  // namespace

TEST_CASE("cholesky: a known factor, zeros above the diagonal") {
  fx::Tensor a = fx::from_vector(std::vector<double>{4, 2, 2, 3}, {2, 2});
  std::vector<double> l = vals(la::cholesky(a));
  CHECK(l[0] == 2.0);
  CHECK(l[1] == 0.0);
  CHECK(l[2] == 1.0);
  CHECK(l[3] == doctest::Approx(std::sqrt(2.0)).epsilon(1e-15));
}

TEST_CASE("cholesky: L Lᵀ = a at n = 200 (f64, batched), and the CPU kernel within 1e-10 of the reference") {
  fx::Tensor a = spd({2, 200, 200}, 7);
  fx::Tensor l = la::cholesky(a);
  CHECK(max_diff(fx::matmul(l, mT(l)), a) < 1e-10 * 200);
  auto ref = fx::eval_primitive(*fx::find_primitive("cholesky"), {a},
                                fx::primitives::triangular_detail::CholeskyParams(false), fx::Backend::reference);
  CHECK(max_diff(l, ref[0]) < 1e-10);
  fx::Tensor b = fx::testing::random_tensor({2, 200, 3}, fx::f64, 8);
  fx::Tensor x = la::cho_solve(l, b);
  CHECK(max_diff(fx::matmul(a, x), b) < 1e-10);
  auto ref_x = fx::eval_primitive(*fx::find_primitive("triangular_solve"), {l, b},
                                  fx::primitives::triangular_detail::TriangularSolveParams(true, true, false, false),
                                  fx::Backend::reference);
  CHECK(max_diff(la::triangular_solve(l, b), ref_x[0]) < 1e-10);
}

TEST_CASE("cholesky: the input is symmetrized, so the gradient of a symmetric input is symmetric") {
  fx::Tensor a = spd({3, 3}, 11);
  fx::Tensor skew = fx::testing::random_tensor({3, 3}, fx::f64, 12, -1, 1);
  skew = skew - mT(skew);
  CHECK(max_diff(la::cholesky(a + skew * 0.1), la::cholesky(a)) < 1e-14);
  // d/da log det a = a⁻¹ (symmetric), the gradient JAX returns for jnp.linalg.cholesky.
  fx::Tensor g = fx::grad(log_det)(a);
  CHECK(max_diff(g, fx::inv(a)) < 1e-12);
  CHECK(max_diff(g, mT(g)) == 0.0);
}

TEST_CASE("cholesky: the hessian of log det equals -a⁻¹ ⊗ a⁻¹ on symmetric directions") {
  fx::Tensor a = spd({3, 3}, 13);
  fx::Tensor e = fx::testing::random_tensor({3, 3}, fx::f64, 14, -1, 1);
  e = e + mT(e);
  // d²/dt² log det(a + t e) = -tr(a⁻¹ e a⁻¹ e).
  fx::Tensor ai = fx::inv(a);
  fx::Tensor m = fx::matmul(ai, e);
  const double want = -fx::sum(m * mT(m)).item<double>();
  fx::Tensor hv = fx::hvp(log_det, a, e);
  CHECK(fx::sum(hv * e).item<double>() == doctest::Approx(want).epsilon(1e-10));
  fx::Tensor h = fx::reshape(fx::hessian(log_det)(a), {9, 9});
  CHECK(fx::sum(fx::reshape(fx::matmul(h, fx::reshape(e, {9})), {3, 3}) * e).item<double>() ==
        doctest::Approx(want).epsilon(1e-10));
}

TEST_CASE("cholesky: OnFailure::nan gives NaNs for the failing matrix only, also under jit and vmap") {
  fx::Tensor a = fx::from_vector(std::vector<double>{2, 0, 0, 2, 1, 2, 2, 1}, {2, 2, 2});
  auto f = [](const fx::Tensor& x) { return la::cholesky(x, la::OnFailure::nan); };
  for (const fx::Tensor& l : {f(a), fx::jit(f)(a), fx::vmap(f)(a)}) {
    std::vector<double> v = vals(l);
    CHECK(v[0] == doctest::Approx(std::sqrt(2.0)));
    CHECK(v[1] == 0.0);
    for (int i = 4; i < 8; ++i) CHECK(std::isnan(v[static_cast<size_t>(i)]));
  }
}

TEST_CASE("cholesky: the not-positive-definite error names the batch index, eager, jit and vmap") {
  fx::Tensor a = fx::from_vector(std::vector<double>{2, 0, 0, 2, 1, 2, 2, 1}, {2, 2, 2});
  auto f = [](const fx::Tensor& x) { return la::cholesky(x); };
  const std::string want = "[cholesky] the matrix at batch index 1 of f64[2,2,2] is not positive definite";
  CHECK_THROWS_WITH_AS(f(a), Contains(want.c_str()), fx::Error);
  CHECK_THROWS_WITH_AS(fx::jit(f)(a), Contains(want.c_str()), fx::Error);
  CHECK_THROWS_WITH_AS(fx::vmap(f)(a), Contains(want.c_str()), fx::Error);
  // Large matrices (LAPACK's potrf when OpenBLAS is linked) fail the same way; NaN mode fills them.
  fx::Tensor big = fx::eye(100) - fx::eye(100) * 2.0 * (fx::arange(100, fx::f64) >= 50.0);
  CHECK_THROWS_WITH_AS(f(big), Contains("[cholesky] the matrix f64[100,100] is not positive definite"), fx::Error);
  CHECK(std::isnan(vals(la::cholesky(big, la::OnFailure::nan))[0]));
  // A good call afterwards still works (nothing left broken).
  CHECK(vals(f(fx::eye(2)))[0] == 1.0);
}

TEST_CASE("cholesky and triangular_solve: the fixed-size kernels (n <= 8) equal the reference and the general kernel") {
  namespace td = fx::primitives::triangular_detail;
  const fx::Primitive& chol = *fx::find_primitive("cholesky");
  const fx::Primitive& tri = *fx::find_primitive("triangular_solve");
  auto three_ways = [](auto&& run) {  // reference, cpu with the small kernels, cpu without
    auto ref = run(fx::Backend::reference);
    auto fixed = run(fx::Backend::cpu);
    fx::runtime::set_disabled("small_linalg");
    auto general = run(fx::Backend::cpu);
    fx::runtime::set_disabled("");
    return std::make_tuple(ref, fixed, general);
  };
  for (fx::DType dt : {fx::f64, fx::f32}) {
    const double tol = dt == fx::f64 ? 1e-12 : 1e-4;
    for (int64_t n = 1; n <= 9; ++n) {
      CAPTURE(n);
      CAPTURE(fx::dtype_name(dt));
      // Not symmetric on purpose: the kernels factor (a + aᵀ) / 2. Matrix 2 is not positive definite.
      std::vector<double> v = vals(spd({5, n, n}, 30 + static_cast<uint64_t>(n)) +
                                   fx::testing::random_tensor({5, n, n}, fx::f64, 50, -0.1, 0.1));
      v[static_cast<size_t>(2 * n * n)] = -1.0;
      fx::Tensor a = fx::astype(fx::from_vector(v, {5, n, n}), dt);
      auto [ref, fixed, general] =
          three_ways([&](fx::Backend b) { return fx::eval_primitive(chol, {a}, td::CholeskyParams(true), b); });
      for (size_t i = 0; i < static_cast<size_t>(5 * n * n); ++i) {
        const double r = vals(ref[0])[i], f = vals(fixed[0])[i], g = vals(general[0])[i];
        CHECK(std::isnan(r) == std::isnan(f));
        CHECK(std::isnan(g) == std::isnan(f));
        if (!std::isnan(r)) CHECK(std::abs(f - r) < tol * (1 + std::abs(r)));
      }
      CHECK(fx::testing::message_of<fx::Error>([&] {
              fx::eval_primitive(chol, {a}, td::CholeskyParams(false), fx::Backend::cpu);
            }).find("batch index 2") != std::string::npos);
      fx::Tensor l = fx::astype(fx::testing::random_tensor({5, n, n}, fx::f64, 60, -1, 1) + fx::eye(n) * 3.0, dt);
      for (int flags = 0; flags < 16; ++flags) {
        const bool left = flags & 1, lower = flags & 2, trans = flags & 4, unit = flags & 8;
        CAPTURE(flags);
        fx::Tensor b = fx::testing::random_tensor(left ? fx::Shape{5, n, 3} : fx::Shape{5, 3, n}, dt, 70 + flags);
        auto [tref, tfixed, tgeneral] = three_ways([&](fx::Backend be) {
          return fx::eval_primitive(tri, {l, b}, td::TriangularSolveParams(left, lower, trans, unit), be);
        });
        CHECK(max_diff(tfixed[0], tref[0]) < tol);
        CHECK(max_diff(tfixed[0], tgeneral[0]) < tol);
      }
    }
  }
}

TEST_CASE("triangular_solve: only the named triangle is read, and a unit diagonal is not read") {
  fx::Tensor a = fx::testing::random_tensor({4, 4}, fx::f64, 21, -1, 1) + fx::eye(4) * 5.0;
  fx::Tensor b = fx::testing::random_tensor({4, 2}, fx::f64, 22);
  fx::Tensor lower_only =
      a * fx::from_vector(std::vector<double>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}, {4, 4});
  CHECK(max_diff(la::triangular_solve(a, b), la::triangular_solve(lower_only, b)) == 0.0);
  CHECK(max_diff(la::triangular_solve(lower_only, b), fx::solve(lower_only, b)) < 1e-14);
  fx::Tensor unit = lower_only * (1.0 - fx::eye(4)) + fx::eye(4);
  CHECK(max_diff(la::triangular_solve(a, b, true, true, false, true), fx::solve(unit, b)) < 1e-14);
  // Right side, transposed, upper: x op(a) = b with op(a) = aᵀ read from the upper triangle.
  fx::Tensor upper = mT(lower_only);
  fx::Tensor br = fx::testing::random_tensor({3, 4}, fx::f64, 23);
  fx::Tensor x = la::triangular_solve(upper, br, /*left_side=*/false, /*lower=*/false, /*transpose_a=*/true);
  CHECK(max_diff(fx::matmul(x, mT(upper)), br) < 1e-14);
}

TEST_CASE("triangular_solve: a zero on the diagonal names the batch index and row, eager and jit") {
  fx::Tensor a = fx::from_vector(std::vector<double>{1, 0, 1, 1, 1, 0, 1, 0}, {2, 2, 2});
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return la::triangular_solve(x, y); };
  const std::string want =
      "[triangular_solve] the matrix at batch index 1 of f64[2,2,2] has a zero on its diagonal (row 1)";
  CHECK_THROWS_WITH_AS(f(a, fx::ones({2, 2, 1})), Contains(want.c_str()), fx::Error);
  CHECK_THROWS_WITH_AS(fx::jit(f)(a, fx::ones({2, 2, 1})), Contains(want.c_str()), fx::Error);
  // unit_diagonal never reads the diagonal.
  CHECK_NOTHROW(la::triangular_solve(a, fx::ones({2, 2, 1}), true, true, false, true));
}

TEST_CASE("cho_solve: equals solve for matrix and vector right-hand sides, batched, with gradients") {
  fx::Tensor a = spd({2, 4, 4}, 31);
  fx::Tensor b = fx::testing::random_tensor({2, 4, 3}, fx::f64, 32);
  fx::Tensor l = la::cholesky(a);
  CHECK(max_diff(la::cho_solve(l, b), fx::solve(a, b)) < 1e-13);
  fx::Tensor v = fx::testing::random_tensor({4}, fx::f64, 33);
  fx::Tensor a0 = spd({4, 4}, 34);
  CHECK(max_diff(la::cho_solve(la::cholesky(a0), v), fx::solve(a0, v)) < 1e-13);
  // d/da of bᵀ a⁻¹ b through cholesky + cho_solve equals the same through solve (both symmetric in a
  // after symmetrizing the solve's gradient).
  auto quad_chol = [&](const fx::Tensor& m) { return fx::sum(v * la::cho_solve(la::cholesky(m), v)); };
  auto quad_solve = [&](const fx::Tensor& m) { return fx::sum(v * fx::solve(m, v)); };
  fx::Tensor gs = fx::grad(quad_solve)(a0);
  CHECK(max_diff(fx::grad(quad_chol)(a0), (gs + mT(gs)) * 0.5) < 1e-13);
  CHECK(max_diff(fx::jit(fx::grad(quad_chol))(a0), fx::grad(quad_chol)(a0)) < 1e-13);
}

TEST_CASE("linalg ops: the jaxprs name the primitives and their params") {
  auto f = [](const fx::Tensor& a, const fx::Tensor& b) { return la::triangular_solve(la::cholesky(a), b, false); };
  std::string text = fx::testing::jaxpr_text(f, fx::eye(3), fx::ones({2, 3}));
  INFO(text);
  CHECK(text.find("cholesky[nan_on_failure=False]") != std::string::npos);
  CHECK(text.find("triangular_solve[left_side=False lower=True transpose_a=False unit_diagonal=False]") !=
        std::string::npos);
}
