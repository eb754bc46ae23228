// The gram primitive's CPU kernel at sizes that exercise its block rows (D from 1 to 1000: one
// block, a block plus one column, several blocks and a partial last one) against a sum in long double, and
// exact symmetry of every result; plus the primitive against the composition it replaces.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "samples.hpp"

namespace fx = fluxion;

namespace {

// Largest |got - want| / (Σ_n |x[n,a] s[n] x[n,b]|) over the entries: the error relative to the
// magnitude of the terms summed (a GEMM's error bound is proportional to it). Each entry is
// computed in long double from the inputs as stored.
template <class T> double worst_scaled_error(const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor& got) {
  const int64_t n = x.shape()[0], d = x.shape()[1];
  const std::vector<T> xv = x.to_vector<T>(), sv = s.to_vector<T>(), g = got.to_vector<T>();
  double worst = 0;
  for (int64_t a = 0; a < d; ++a)
    for (int64_t b = 0; b <= a; ++b) {
      long double sum = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        const long double term = static_cast<long double>(xv[i * d + a]) * sv[i] * xv[i * d + b];
        sum += term;
        mag += std::fabs(term);
      }
      for (double v : {static_cast<double>(g[a * d + b]), static_cast<double>(g[b * d + a])}) {
        const double err = static_cast<double>(std::fabs(static_cast<long double>(v) - sum));
        worst = std::max(worst, mag > 0 ? err / static_cast<double>(mag) : err);
      }
    }
  return worst;
}

// Entries (a, b) with out[a, b] != out[b, a] (bitwise, so NaN counts too).
template <class T> int64_t asymmetric_entries(const fx::Tensor& out) {
  const int64_t d = out.shape()[0];
  const std::vector<T> g = out.to_vector<T>();
  int64_t bad = 0;
  for (int64_t a = 0; a < d; ++a)
    for (int64_t b = 0; b < a; ++b)
      if (!(g[a * d + b] == g[b * d + a])) ++bad;
  return bad;
}

template <class T> void check_kernel(fx::DType dt) {
  const double eps = std::numeric_limits<T>::epsilon();
  uint64_t seed = 4200;
  for (int64_t d : {1, 2, 7, 64, 65, 200, 333, 1000})
    for (int64_t n : {1, 3, 50, 301}) {
      CAPTURE(d);
      CAPTURE(n);
      fx::Tensor x = fx::testing::random_tensor({n, d}, dt, seed++);
      fx::Tensor s = fx::testing::random_tensor({n}, dt, seed++);
      fx::Tensor out = fx::lax::gram(x, s);
      REQUIRE(out.shape() == std::vector<int64_t>{d, d});
      CHECK(asymmetric_entries<T>(out) == 0);
      // A blocked sum of n terms errs by at most about n eps times the terms' magnitude.
      const double err = worst_scaled_error<T>(x, s, out);
      CHECK_MESSAGE(err <= 2.0 * static_cast<double>(n + 2) * eps, "scaled error " << err);
    }
}

}  // namespace

TEST_CASE("gram: the CPU kernel equals a long-double sum and is exactly symmetric, f64") {
  check_kernel<double>(fx::f64);
}

TEST_CASE("gram: the CPU kernel equals a long-double sum and is exactly symmetric, f32") {
  check_kernel<float>(fx::f32);
}

TEST_CASE("gram: size-0 dims give zeros [D, D] or an empty [0, 0]") {
  fx::Tensor z = fx::lax::gram(fx::ones({0, 3}), fx::ones({0}));
  CHECK(z.shape() == std::vector<int64_t>{3, 3});
  for (double v : z.to_vector<double>()) CHECK(v == 0.0);
  CHECK(fx::lax::gram(fx::ones({4, 0}), fx::ones({4})).shape() == std::vector<int64_t>{0, 0});
}

TEST_CASE("gram: equals xᵀ diag(s) x as a dot_general, and its gradient in s is the row-wise quadratic form") {
  fx::Tensor x = fx::testing::random_tensor({40, 9}, fx::f64, 7), s = fx::testing::random_tensor({40}, fx::f64, 8);
  fx::Tensor xs = x * fx::reshape(s, {40, 1});
  fx::Tensor want = fx::lax::dot_general(x, xs, {{0}, {0}});
  CHECK(fx::testing::compare_tensors(fx::lax::gram(x, s), want).empty());
  // d/ds Σ_{a,b} w[a,b] gram(x, s)[a,b] = Σ_{a,b} x[n,a] w[a,b] x[n,b].
  fx::Tensor w = fx::testing::random_tensor({9, 9}, fx::f64, 9);
  fx::Tensor g = fx::grad([&](const fx::Tensor& v) { return fx::sum(fx::lax::gram(x, v) * w); })(s);
  fx::Tensor want_g = fx::sum(fx::matmul(x, w) * x, {1});
  CHECK(fx::testing::compare_tensors(g, want_g).empty());
}
