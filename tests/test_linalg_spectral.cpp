// fx::linalg::eigh, svd and svdvals: known answers, the sign and order conventions, reconstruction
// and orthogonality, the symmetric-part semantics, the LAPACK-sized CPU path against the long-double
// reference, NaN input, closed-form gradients, degenerate spectra (inf/NaN vector tangents like
// JAX), full_matrices' tangents (exact on the span of the extra vectors), vmap and jit.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "primitives/linalg_spectral.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fluxion::testing::jaxpr_text;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }

using fluxion::testing::max_diff;

fx::Tensor mT(const fx::Tensor& x) {
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return fx::transpose(x, perm);
}

// I - 2 h hᵀ / hᵀh: orthogonal and symmetric.
fx::Tensor householder(int64_t n, uint64_t seed) {
  fx::Tensor h = fx::testing::random_tensor({n}, fx::f64, seed, -1, 1) + 0.1;
  return fx::eye(n) - fx::outer(h, h) * (2.0 / fx::sum(h * h).item<double>());
}

// H diag(d) H with the given spectrum.
fx::Tensor with_spectrum(const std::vector<double>& d, uint64_t seed) {
  const int64_t n = static_cast<int64_t>(d.size());
  fx::Tensor h = householder(n, seed);
  return fx::matmul(h, fx::matmul(fx::eye(n) * fx::from_vector(d, {n}), h));
}

// H₁ [diag(s); 0] H₂, m x n, with the given singular values.
fx::Tensor with_singular_values(int64_t m, int64_t n, const std::vector<double>& s, uint64_t seed) {
  std::vector<double> d(static_cast<size_t>(m * n), 0.0);
  for (size_t j = 0; j < s.size(); ++j) d[j * static_cast<size_t>(n) + j] = s[j];
  return fx::matmul(householder(m, seed), fx::matmul(fx::from_vector(d, {m, n}), householder(n, seed + 1)));
}

std::vector<double> spread(int64_t n, double first, double step) {
  std::vector<double> d;
  for (int64_t i = 0; i < n; ++i) d.push_back(first + step * static_cast<double>(i));
  return d;
}

// Each column's leading component (first within 1e-5 of the largest magnitude) is positive.
void check_leading_positive(const fx::Tensor& v, int64_t cols) {
  const int64_t rows = v.shape()[0];
  std::vector<double> x = vals(v);
  for (int64_t j = 0; j < cols; ++j) {
    double largest = 0;
    for (int64_t i = 0; i < rows; ++i) largest = std::max(largest, std::fabs(x[i * v.shape()[1] + j]));
    for (int64_t i = 0; i < rows; ++i) {
      const double e = x[i * v.shape()[1] + j];
      if (std::fabs(e) >= largest * (1 - 1e-5)) {
        CHECK_MESSAGE(e > 0, "column " << j);
        break;
      }
    }
  }
}

}  // namespace

TEST_CASE("eigh: known answer, ascending eigenvalues, the first of tied components positive") {
  auto [w, v] = fx::linalg::eigh(fx::tensor({{2.0, 1.0}, {1.0, 2.0}}));
  const double s = 1 / std::sqrt(2.0);
  CHECK(max_diff(w, fx::tensor({1.0, 3.0})) < 1e-15);
  // Columns (1, -1)/√2 and (1, 1)/√2: the tie between |v_0| and |v_1| goes to the first.
  CHECK(max_diff(v, fx::tensor({{s, s}, {-s, s}})) < 1e-15);
  auto [w32, v32] = fx::linalg::eigh(fx::tensor({{2.f, 1.f}, {1.f, 2.f}}));
  CHECK(w32.dtype() == fx::f32);
  CHECK(max_diff(v32, fx::tensor({{s, s}, {-s, s}})) < 1e-6);
  // Integers become f64.
  CHECK(fx::linalg::eigh(fx::ones({2, 2}, fx::i32)).first.dtype() == fx::f64);
}

TEST_CASE("eigh: a v = v diag(w), vᵀ v = I, of the symmetric part of a non-symmetric input") {
  fx::Tensor sym = with_spectrum(spread(6, -3.0, 1.1), 7);
  fx::Tensor a = sym + fx::testing::random_tensor({6, 6}, fx::f64, 8, -0.2, 0.2);  // not symmetric
  fx::Tensor a_sym = (a + mT(a)) / 2.0;
  auto [w, v] = fx::linalg::eigh(a);
  auto [ws, vs] = fx::linalg::eigh(a_sym);
  CHECK(max_diff(w, ws) == 0);
  CHECK(max_diff(v, vs) == 0);
  CHECK(max_diff(fx::matmul(a_sym, v), v * fx::reshape(w, {1, 6})) < 1e-13);
  CHECK(max_diff(fx::matmul(mT(v), v), fx::eye(6)) < 1e-14);
  std::vector<double> wv = vals(w);
  for (size_t i = 1; i < wv.size(); ++i) CHECK(wv[i - 1] <= wv[i]);
  check_leading_positive(v, 6);
}

TEST_CASE("svd: reconstruction, orthogonality, descending values and signs; tall, wide, full, values only") {
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{5, 3}, {3, 5}, {4, 4}}) {
    CAPTURE(m);
    CAPTURE(n);
    fx::Tensor a = fx::testing::random_tensor({m, n}, fx::f64, static_cast<uint64_t>(10 * m + n));
    const int64_t k = std::min(m, n);
    auto [u, s, vt] = fx::linalg::svd(a);
    CHECK(u.shape() == std::vector<int64_t>{m, k});
    CHECK(vt.shape() == std::vector<int64_t>{k, n});
    CHECK(max_diff(fx::matmul(u * fx::reshape(s, {1, k}), vt), a) < 1e-13);
    CHECK(max_diff(fx::matmul(mT(u), u), fx::eye(k)) < 1e-14);
    CHECK(max_diff(fx::matmul(vt, mT(vt)), fx::eye(k)) < 1e-14);
    std::vector<double> sv = vals(s);
    for (size_t i = 1; i < sv.size(); ++i) CHECK(sv[i - 1] >= sv[i]);
    check_leading_positive(u, k);
    auto [uf, sf, vtf] = fx::linalg::svd(a, /*full_matrices=*/true);
    CHECK(uf.shape() == std::vector<int64_t>{m, m});
    CHECK(vtf.shape() == std::vector<int64_t>{n, n});
    CHECK(max_diff(fx::matmul(mT(uf), uf), fx::eye(m)) < 1e-14);
    CHECK(max_diff(fx::matmul(vtf, mT(vtf)), fx::eye(n)) < 1e-14);
    CHECK(max_diff(fx::slice(uf, {0, 0}, {m, k}), u) < 1e-14);
    CHECK(max_diff(sf, s) == 0);
    auto [un, sn, vtn] = fx::linalg::svd(a, false, /*compute_uv=*/false);
    CHECK(!un.defined());
    CHECK(!vtn.defined());
    CHECK(max_diff(sn, s) < 1e-14);
    CHECK(max_diff(fx::linalg::svdvals(a), s) < 1e-14);
  }
  // A zero matrix: zero values, and the completion's unit vectors.
  auto [u0, s0, vt0] = fx::linalg::svd(fx::zeros({3, 2}), true);
  CHECK(max_diff(s0, fx::zeros({2})) == 0);
  CHECK(max_diff(u0, fx::eye(3)) == 0);
  CHECK(max_diff(vt0, fx::eye(2)) == 0);
}

TEST_CASE("eigh and svd: the LAPACK-sized cpu kernels equal the long-double reference within 1e-10") {
  fx::Tensor a = with_spectrum(spread(130, -40.0, 0.7), 21);
  const fx::Primitive& eigh = *fx::find_primitive("eigh");
  auto cpu = fx::eval_primitive(eigh, {a}, fx::no_params(), fx::Backend::cpu);
  auto ref = fx::eval_primitive(eigh, {a}, fx::no_params(), fx::Backend::reference);
  CHECK(max_diff(cpu[0], ref[0]) < 1e-10);
  CHECK(max_diff(cpu[1], ref[1]) < 1e-10);
  fx::Tensor b = with_singular_values(60, 40, spread(40, 0.5, 0.3), 22);
  const fx::Primitive& svd = *fx::find_primitive("svd");
  fluxion::primitives::spectral_detail::SvdParams p(true, true);
  auto cpu_s = fx::eval_primitive(svd, {b}, p, fx::Backend::cpu);
  auto ref_s = fx::eval_primitive(svd, {b}, p, fx::Backend::reference);
  for (size_t i = 0; i < 3; ++i) CHECK(max_diff(cpu_s[i], ref_s[i]) < 1e-10);
}

TEST_CASE("eigh and svd: a matrix with a NaN gives NaN outputs, its batch neighbours are unaffected") {
  std::vector<double> x(2 * 3 * 3, 0.5);
  x[0] = 2, x[4] = 3, x[8] = 4;
  x[9 + 4] = std::nan("");
  fx::Tensor a = fx::from_vector(x, {2, 3, 3});
  auto [w, v] = fx::linalg::eigh(a);
  auto [u, s, vt] = fx::linalg::svd(a);
  for (const fx::Tensor& t : {w, v, u, s, vt}) {
    std::vector<double> e = vals(t);
    const size_t half = e.size() / 2;
    for (size_t i = 0; i < half; ++i) CHECK(std::isfinite(e[i]));
    for (size_t i = half; i < e.size(); ++i) CHECK(std::isnan(e[i]));
  }
}

TEST_CASE("grad of eigh and svdvals: the closed forms v_i v_iᵀ and u vᵀ") {
  fx::Tensor a = with_spectrum(spread(4, -1.0, 1.3), 31) + fx::testing::random_tensor({4, 4}, fx::f64, 32, -0.1, 0.1);
  auto [w, v] = fx::linalg::eigh(a);
  fx::Tensor g =
      fx::grad([](const fx::Tensor& x) { return fx::sum(fx::slice(fx::linalg::eigh(x).first, {3}, {4})); })(a);
  fx::Tensor v3 = fx::reshape(fx::slice(v, {0, 3}, {4, 4}), {4});
  CHECK(max_diff(g, fx::outer(v3, v3)) < 1e-13);
  CHECK(max_diff(fx::grad([](const fx::Tensor& x) { return fx::sum(fx::linalg::eigh(x).first); })(a), fx::eye(4)) <
        1e-13);
  fx::Tensor b = fx::testing::random_tensor({5, 3}, fx::f64, 33);
  auto [u, s, vt] = fx::linalg::svd(b);
  fx::Tensor gn = fx::grad([](const fx::Tensor& x) { return fx::sum(fx::linalg::svdvals(x)); })(b);
  CHECK(max_diff(gn, fx::matmul(u, vt)) < 1e-13);
}

TEST_CASE("eigh at a repeated eigenvalue: eigenvalue tangents finite, eigenvector tangents inf/NaN (as JAX)") {
  fx::Tensor a = fx::eye(3) * 2.0;
  fx::Tensor t = fx::testing::random_tensor({3, 3}, fx::f64, 41);
  auto [out, tan] =
      fx::jvp([](const fx::Tensor& x) { return fx::linalg::eigh(x); }, std::make_tuple(a), std::make_tuple(t));
  for (double e : vals(tan.first)) CHECK(std::isfinite(e));
  bool any_non_finite = false;
  for (double e : vals(tan.second)) any_non_finite |= !std::isfinite(e);
  CHECK(any_non_finite);
}

TEST_CASE("svd full_matrices: tangents keep u orthogonal, match the reduced ones, and move span(U₂) exactly") {
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{5, 2}, {2, 4}}) {
    CAPTURE(m);
    CAPTURE(n);
    const int64_t k = std::min(m, n);
    fx::Tensor a = with_singular_values(m, n, spread(k, 2.0, -0.9), 50 + static_cast<uint64_t>(m));
    fx::Tensor t = fx::testing::random_tensor({m, n}, fx::f64, 51);
    auto full = [](const fx::Tensor& x) { return fx::linalg::svd(x, true); };
    auto thin = [](const fx::Tensor& x) { return fx::linalg::svd(x, false); };
    auto [yf, df] = fx::jvp(full, std::make_tuple(a), std::make_tuple(t));
    auto [yt, dt] = fx::jvp(thin, std::make_tuple(a), std::make_tuple(t));
    // The determined parts equal the reduced tangents; Uᵀ U̇ and V̇ᵀ V are antisymmetric.
    const fx::Tensor &uf = std::get<0>(yf), &duf = std::get<0>(df), &vtf = std::get<2>(yf), &dvtf = std::get<2>(df);
    CHECK(max_diff(fx::slice(duf, {0, 0}, {m, k}), std::get<0>(dt)) < 1e-13);
    CHECK(max_diff(fx::slice(dvtf, {0, 0}, {k, n}), std::get<2>(dt)) < 1e-13);
    CHECK(max_diff(std::get<1>(df), std::get<1>(dt)) < 1e-13);
    fx::Tensor wu = fx::matmul(mT(uf), duf), wv = fx::matmul(dvtf, mT(vtf));
    CHECK(max_diff(wu, -mT(wu)) < 1e-13);
    CHECK(max_diff(wv, -mT(wv)) < 1e-13);
    // The projectors on the extra vectors, P = U₂ U₂ᵀ and Q = V₂ V₂ᵀ (flattened, concatenated):
    // forward mode against a central difference.
    auto projectors = [m, n, k](const fx::Tensor& x) {
      auto [u, s, vt] = fx::linalg::svd(x, true);
      fx::Tensor u2 = fx::slice(u, {0, k}, {m, m}), v2 = mT(fx::slice(vt, {k, 0}, {n, n}));
      return fx::concatenate(
          {fx::reshape(fx::matmul(u2, mT(u2)), {m * m}), fx::reshape(fx::matmul(v2, mT(v2)), {n * n})}, 0);
    };
    const double eps = 1e-6;
    fx::Tensor fd = (projectors(a + t * eps) - projectors(a - t * eps)) / (2 * eps);
    fx::Tensor d = fx::jvp(projectors, std::make_tuple(a), std::make_tuple(t)).second;
    CHECK(max_diff(d, fd) < 1e-7);
    // And reverse mode agrees with forward mode on it.
    fx::Tensor w = fx::testing::random_tensor({m * m + n * n}, fx::f64, 52);
    fx::Tensor gr = fx::grad([&](const fx::Tensor& x) { return fx::sum(projectors(x) * w); })(a);
    CHECK(std::fabs(fx::sum(gr * t).item<double>() - fx::sum(d * w).item<double>()) < 1e-12);
  }
}

TEST_CASE("vmap of eigh and svd binds one batched primitive; jit equals eager") {
  fx::Tensor as = fx::stack({with_spectrum(spread(3, 0.0, 1.0), 61), with_spectrum(spread(3, 1.0, 2.0), 62)}, 0);
  auto f = [](const fx::Tensor& x) {
    auto [w, v] = fx::linalg::eigh(x);
    auto [u, s, vt] = fx::linalg::svd(x);
    return fx::sum(w) + fx::sum(v) + fx::sum(u) + fx::sum(s) + fx::sum(vt);
  };
  std::string text = jaxpr_text(fx::vmap(f), as);
  CAPTURE(text);
  CHECK(text.find("f64[2,3] ") != std::string::npos);
  CHECK(text.find(":f64[2,3,3] = eigh ") != std::string::npos);
  CHECK(text.find(":f64[2,3,3] = svd[") != std::string::npos);
  fx::Tensor batched = fx::vmap(f)(as);
  for (int64_t i = 0; i < 2; ++i)
    CHECK(max_diff(fx::slice(batched, {i}, {i + 1}),
                   fx::reshape(f(fx::squeeze(fx::slice(as, {i, 0, 0}, {i + 1, 3, 3}), {0})), {1})) == 0);
  CHECK(max_diff(fx::jit(f)(as), f(as)) < 1e-13);
  auto g = fx::grad([&](const fx::Tensor& x) { return fx::sum(fx::vmap(f)(x)); });
  CHECK(max_diff(fx::jit(g)(as), g(as)) < 1e-12);
}
