// Accumulation accuracy of the reductions: f32 sums, means, products and cumsums over many
// elements against f64 (or long double) references, in every reduction layout (full, rows,
// columns, middle axes, interleaved axes), eagerly and in jit's fused groups; f64 sums pairwise.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fx = fluxion;

namespace {

/// Uniform values in [lo, hi), deterministic.
template <class T> std::vector<T> uniform(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(u(gen));
  return v;
}

/// The exact sum (to long double's 64 bits, pairwise) of v[i * stride + offset], i < n.
template <class T> long double exact_sum(const std::vector<T>& v, size_t n, size_t stride = 1, size_t offset = 0) {
  if (n <= 64) {
    long double s = 0;
    for (size_t i = 0; i < n; ++i) s += static_cast<long double>(v[i * stride + offset]);
    return s;
  }
  const size_t half = n / 2;
  return exact_sum(v, half, stride, offset) + exact_sum(v, n - half, stride, offset + half * stride);
}

/// |got - want| in ulps of want rounded to T.
template <class T> double ulps(T got, long double want) {
  const T w = static_cast<T>(want);
  const T ulp = std::nextafter(std::fabs(w), std::numeric_limits<T>::infinity()) - std::fabs(w);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / static_cast<long double>(ulp));
}

}  // namespace

TEST_CASE("sum: f32 accumulation of 10^7 elements stays within one ulp of an f64 reference") {
  // Sequential f32 accumulation gave 100022.35 for 10^6 x 0.1f (exact: 100000.0015).
  const std::vector<float> tenths(1000000, 0.1f);
  const float s = fx::sum(fx::from_vector(tenths)).item<float>();
  CHECK(ulps(s, exact_sum(tenths, tenths.size())) <= 0.5);
  const std::vector<float> v = uniform<float>(10000000, 0.0, 1.0, 1);
  const fx::Tensor x = fx::from_vector(v);
  const long double want = exact_sum(v, v.size());
  CHECK(ulps(fx::sum(x).item<float>(), want) <= 0.5);
  CHECK(ulps(fx::mean(x).item<float>(), want / v.size()) <= 1.0);
  // jit: a lone reduction (the kernel), and a sum fused into a register program (per lane, 32
  // values added in f32, then in double: at most about 10 ulp of sum |x|, in practice below 1).
  CHECK(ulps(fx::jit([](const fx::Tensor& a) { return fx::sum(a); })(x).item<float>(), want) <= 0.5);
  const std::vector<float> terms = (fx::tanh(x) * x).to_vector<float>();
  CHECK(ulps(fx::jit([](const fx::Tensor& a) { return fx::sum(fx::tanh(a) * a); })(x).item<float>(),
             exact_sum(terms, terms.size())) <= 2);
}

TEST_CASE("sum: f32 rows, columns, middle and interleaved axes stay within one ulp of f64 references") {
  // Columns over 200,000 rows were off by 2e-3 relative (one f32 accumulator per column).
  const size_t rows = 200000, cols = 5;
  const std::vector<float> v = uniform<float>(rows * cols, 0.0, 1.0, 2);
  const fx::Tensor x = fx::from_vector(v, fx::Shape{static_cast<int64_t>(rows), static_cast<int64_t>(cols)});
  const std::vector<float> by_column = fx::sum(x, {0}).to_vector<float>();
  const std::vector<float> column_means = fx::mean(x, {0}).to_vector<float>();
  for (size_t c = 0; c < cols; ++c) {
    const long double want = exact_sum(v, rows, cols, c);
    CHECK(ulps(by_column[c], want) <= 0.5);
    CHECK(ulps(column_means[c], want / rows) <= 1.0);
  }
  // The transpose: long rows.
  const fx::Tensor xt = fx::transpose(x, {1, 0});
  const std::vector<float> by_row = fx::sum(xt, {1}).to_vector<float>();
  for (size_t c = 0; c < cols; ++c) CHECK(ulps(by_row[c], exact_sum(v, rows, cols, c)) <= 0.5);
  // [4, 50000, 5] summed over the middle axis, and over axes 0 and 2 of [5, 40000, 5] (interleaved).
  const fx::Tensor m = fx::reshape(x, {4, 50000, 5});
  const std::vector<float> middle = fx::sum(m, {1}).to_vector<float>();
  for (size_t o = 0; o < 4; ++o)
    for (size_t c = 0; c < cols; ++c)
      CHECK(ulps(middle[o * cols + c], exact_sum(v, 50000, cols, o * 50000 * cols + c)) <= 0.5);
  const std::vector<float> interleaved = fx::sum(fx::reshape(x, {5, 40000, 5}), {0, 2}).to_vector<float>();
  std::vector<float> gathered;
  for (size_t j = 0; j < 40000; j += 9999) {
    gathered.clear();
    for (size_t i = 0; i < 5; ++i)
      for (size_t k = 0; k < 5; ++k) gathered.push_back(v[(i * 40000 + j) * 5 + k]);
    CHECK(ulps(interleaved[j], exact_sum(gathered, gathered.size())) <= 0.5);
  }
}

TEST_CASE("cumsum: the f32 running sums of 10^6 elements stay within one ulp of f64 prefix sums") {
  // Sequential f32 accumulation left the last element 1 % off. Rows (inner == 1) and columns.
  const size_t n = 1000000;
  const std::vector<float> v = uniform<float>(n, 0.0, 1.0, 3);
  const std::vector<float> c = fx::cumsum(fx::from_vector(v), 0).to_vector<float>();
  long double prefix = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    prefix += v[i];
    worst = std::max(worst, ulps(c[i], prefix));
  }
  CHECK(worst <= 0.5);
  const std::vector<float> cols = fx::cumsum(fx::from_vector(v, fx::Shape{250000, 4}), 0).to_vector<float>();
  for (size_t k = 0; k < 4; ++k) CHECK(ulps(cols[(250000 - 1) * 4 + k], exact_sum(v, 250000, 4, k)) <= 0.5);
  // Reversed.
  const std::vector<float> r = fx::lax::cumsum(fx::from_vector(v), 0, /*reverse=*/true).to_vector<float>();
  CHECK(ulps(r[0], exact_sum(v, n)) <= 0.5);
}

TEST_CASE("prod: f32 products of 10^5 factors stay within one ulp of an f64 reference") {
  const std::vector<float> v = uniform<float>(100000, 0.99, 1.0101, 4);
  long double want = 1;
  for (float f : v) want *= f;
  CHECK(ulps(fx::prod(fx::from_vector(v)).item<float>(), want) <= 0.5);
  const std::vector<float> cols = fx::prod(fx::from_vector(v, fx::Shape{50000, 2}), {0}).to_vector<float>();
  for (size_t k = 0; k < 2; ++k) {
    long double w = 1;
    for (size_t i = 0; i < 50000; ++i) w *= v[i * 2 + k];
    CHECK(ulps(cols[k], w) <= 0.5);
  }
}

TEST_CASE("sum: f64 sums of 10^7 elements, pairwise, stay within a few ulp of a long-double reference") {
  const std::vector<double> v = uniform<double>(10000000, 0.0, 1.0, 5);
  const long double want = exact_sum(v, v.size());
  CHECK(ulps(fx::sum(fx::from_vector(v)).item<double>(), want) <= 4);
  const std::vector<double> cols = fx::sum(fx::from_vector(v, fx::Shape{2500000, 4}), {0}).to_vector<double>();
  for (size_t k = 0; k < 4; ++k) CHECK(ulps(cols[k], exact_sum(v, 2500000, 4, k)) <= 4);
}

TEST_CASE("sum: special values keep their IEEE meaning through the wide accumulators") {
  const float inf = INFINITY;
  CHECK(std::isnan(fx::sum(fx::from_vector(std::vector<float>{1, inf, -inf, 2})).item<float>()));
  CHECK(fx::sum(fx::from_vector(std::vector<float>(100, 1.0f))).item<float>() == 100.0f);
  CHECK(fx::sum(fx::from_vector(std::vector<float>{inf, 1, 2})).item<float>() == inf);
  CHECK(std::isnan(fx::sum(fx::from_vector(std::vector<float>(300, NAN))).item<float>()));
  // A sum whose f32 partial sums would overflow but whose result does not: accumulated in double.
  CHECK(fx::sum(fx::from_vector(std::vector<float>{3e38f, 3e38f, -3e38f})).item<float>() == 3e38f);
  CHECK(fx::sum(fx::from_vector(std::vector<float>{})).item<float>() == 0.0f);
  CHECK(fx::prod(fx::from_vector(std::vector<float>{})).item<float>() == 1.0f);
  CHECK(fx::prod(fx::from_vector(std::vector<float>{1e30f, 1e30f, 1e-30f})).item<float>() == 1e30f);
}
