// fx::random: the streams of jax.random reproduced bit for bit from recorded JAX outputs
// (tests/random/jax_streams.inc, written by tests/random/record_jax.py), threefry2x32 against the
// Random123 known answers, purity (vmap over keys equals a loop, jit gives the same bits, a vmapped
// split gives independent streams, keys through scan), derivatives of reparameterized samples, and
// bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "primitives/random.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
namespace rnd = fluxion::random;
using fluxion::testing::message_of;

namespace {

struct RecordedCase {
  const char* op;
  int64_t seed;
  std::vector<int64_t> shape;
  const char* dtype;
  double a, b;
  std::vector<uint64_t> bits;  // f32: its 32 bits; f64: its 64 bits; integers, bools: the value
};

#include "random/jax_streams.inc"

/// The output of `c`'s operation in Fluxion.
fx::Tensor run_case(const RecordedCase& c) {
  const std::string op = c.op, dt = c.dtype;
  const fx::DType dtype = dt == "f64" ? fx::f64 : fx::f32;
  const fx::Shape shape(c.shape);
  rnd::Key k = rnd::key(c.seed);
  if (op == "key") return rnd::key_data(k);
  if (op == "split") {
    std::vector<fx::Tensor> rows;
    for (const rnd::Key& s : rnd::split(k, static_cast<int64_t>(c.a))) rows.push_back(rnd::key_data(s));
    return fx::stack(rows, 0);
  }
  if (op == "fold_in") return rnd::key_data(rnd::fold_in(k, static_cast<int64_t>(c.a)));
  if (op == "bits") return rnd::bits(k, shape);
  if (op == "uniform") return rnd::uniform(k, shape, dtype, c.a, c.b);
  if (op == "normal") return rnd::normal(k, shape, dtype);
  if (op == "bernoulli") return rnd::bernoulli(k, c.a, shape);
  if (op == "truncated_normal") return rnd::truncated_normal(k, c.a, c.b, shape, dtype);
  if (op == "randint") return rnd::randint(k, shape, static_cast<int64_t>(c.a), static_cast<int64_t>(c.b));
  if (op == "permutation") return rnd::permutation(k, static_cast<int64_t>(c.a));
  if (op == "categorical") {
    const int64_t n = shape.num_elements();
    fx::Tensor logits = fx::reshape(fx::astype(fx::arange(n), fx::f32) * 0.25 - 1.0, c.shape);  // exact values
    return rnd::categorical(k, logits, static_cast<int64_t>(c.a));
  }
  FAIL("unknown recorded operation ", op);
  return {};
}

/// The bit patterns of `t` in the recording's convention.
std::vector<uint64_t> bits_of(const fx::Tensor& t) {
  std::vector<uint64_t> out;
  if (t.dtype() == fx::f32) {
    for (float v : t.to_vector<float>()) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      out.push_back(u);
    }
  } else if (t.dtype() == fx::f64) {
    for (double v : t.to_vector<double>()) {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      out.push_back(u);
    }
  } else {
    for (int64_t v : fx::astype(t, fx::i64).to_vector<int64_t>()) out.push_back(static_cast<uint64_t>(v));
  }
  return out;
}

/// Distance in units in the last place between two floats of one dtype given as bit patterns.
int64_t ulps(uint64_t a, uint64_t b, bool f32) {
  auto ordered = [&](uint64_t u) -> int64_t {
    const int64_t sign_bit = f32 ? (int64_t(1) << 31) : std::numeric_limits<int64_t>::min();
    const int64_t v = f32 ? static_cast<int64_t>(u & 0xFFFFFFFFu) : static_cast<int64_t>(u);
    return (v & sign_bit) ? sign_bit - v : v;  // monotone in the float's value
  };
  return std::llabs(ordered(a) - ordered(b));
}

fx::Tensor stack_keys(const std::vector<rnd::Key>& ks) {
  std::vector<fx::Tensor> rows;
  for (const rnd::Key& k : ks) rows.push_back(k.data);
  return fx::stack(rows, 0);
}

/// Checks that f() throws E with a message containing `part`.
template <class E, class F> void check_error(F f, const std::string& part) {
  const std::string m = message_of<E>(f);
  CHECK_MESSAGE(m.find(part) != std::string::npos, "message: ", m);
}

bool equal_bits(const fx::Tensor& a, const fx::Tensor& b) { return a.shape() == b.shape() && bits_of(a) == bits_of(b); }

}  // namespace

TEST_CASE("random: threefry2x32 gives the Random123 known answers") {
  struct Kat {
    unsigned k0, k1, x0, x1, y0, y1;
  };
  const Kat kats[] = {{0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
                      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x1cb996fcu, 0xbb002be7u},
                      {0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u, 0xc4923a9cu, 0x483df7a0u}};
  for (const Kat& t : kats) {
    auto w = [](unsigned v) { return fx::scalar<int64_t>(v); };
    std::vector<fx::Tensor> y =
        fx::bind(fluxion::primitives::random_detail::threefry2x32_p(), {w(t.k0), w(t.k1), w(t.x0), w(t.x1)});
    CHECK(y[0].item<int64_t>() == t.y0);
    CHECK(y[1].item<int64_t>() == t.y1);
  }
}

TEST_CASE("random: recorded jax.random streams are reproduced bit for bit") {
  MESSAGE("recorded with JAX ", std::string(kRecordedJaxVersion), ", ", kRecordedCases.size(), " cases");
  int64_t exact_cases = 0, approx_values = 0, approx_exact = 0, worst_ulps = 0;
  for (const RecordedCase& c : kRecordedCases) {
    const std::string what = std::string(c.op) + " " + c.dtype + " seed " + std::to_string(c.seed) +
                             " a=" + std::to_string(c.a) + " b=" + std::to_string(c.b);
    CAPTURE(what);
    fx::Tensor got = run_case(c);
    std::vector<int64_t> shape = c.shape;  // categorical records its logits' shape: drop the category axis
    if (std::string(c.op) == "categorical")
      shape.erase(shape.begin() + (c.a < 0 ? static_cast<int64_t>(c.a) + static_cast<int64_t>(shape.size())
                                           : static_cast<int64_t>(c.a)));
    CHECK(got.shape() == fx::Shape(shape));
    std::vector<uint64_t> g = bits_of(got);
    REQUIRE(g.size() == c.bits.size());
    const std::string op = c.op;
    // normal and truncated_normal pass through log (inside XLA's log1p) and erf, whose XLA forms are
    // not the C library's: a sample may differ from JAX's in the last place (counted below).
    if (op == "normal" || op == "truncated_normal") {
      for (size_t i = 0; i < g.size(); ++i) {
        const int64_t d = ulps(g[i], c.bits[i], std::string(c.dtype) == "f32");
        worst_ulps = std::max(worst_ulps, d);
        approx_exact += d == 0;
        ++approx_values;
        CHECK_MESSAGE(d <= 2, "element ", i, " differs from JAX's by ", d, " ulps");
      }
      continue;
    }
    CHECK_MESSAGE(g == c.bits, "the stream differs from jax.random's");
    exact_cases += g == c.bits;
  }
  MESSAGE(exact_cases, " cases bit for bit; normal/truncated_normal: ", approx_exact, " of ", approx_values,
          " values bit for bit, worst ", worst_ulps, " ulps");
}

TEST_CASE("random: key_data holds the unsigned words as i64") {
  CHECK(rnd::key_data(rnd::key(42)).to_vector<int64_t>() == std::vector<int64_t>{0, 42});
  CHECK(rnd::key_data(rnd::key(-1)).to_vector<int64_t>() == std::vector<int64_t>{0xFFFFFFFFll, 0xFFFFFFFFll});
  CHECK(rnd::key_data(rnd::key(-1)).dtype() == fx::i64);
  rnd::Key k = rnd::wrap_key_data(rnd::key_data(rnd::key(7)));
  CHECK(equal_bits(rnd::uniform(k, {4}), rnd::uniform(rnd::key(7), {4})));
}

TEST_CASE("random: vmap over a batch of keys equals a loop") {
  std::vector<rnd::Key> ks = rnd::split(rnd::key(3), 4);
  rnd::Key batch = rnd::wrap_key_data(stack_keys(ks));
  auto draw = [](const rnd::Key& k) {
    return std::make_tuple(rnd::uniform(k, {3}), rnd::normal(k, {2, 2}, fx::f64), rnd::randint(k, {5}, -3, 9),
                           rnd::permutation(k, 6), rnd::bernoulli(k, 0.4, {3}), rnd::key_data(rnd::fold_in(k, 5)));
  };
  auto mapped = fx::vmap(draw)(batch);
  for (int64_t b = 0; b < 4; ++b) {
    auto one = draw(ks[static_cast<size_t>(b)]);
    auto row = [&](const fx::Tensor& t) { return fx::squeeze(fx::slice(t, {b}, {b + 1}), {0}); };
    CHECK(equal_bits(row(std::get<0>(mapped)), std::get<0>(one)));
    CHECK(equal_bits(row(std::get<1>(mapped)), std::get<1>(one)));
    CHECK(equal_bits(row(std::get<2>(mapped)), std::get<2>(one)));
    CHECK(equal_bits(row(std::get<3>(mapped)), std::get<3>(one)));
    CHECK(equal_bits(row(std::get<4>(mapped)), std::get<4>(one)));
    CHECK(equal_bits(row(std::get<5>(mapped)), std::get<5>(one)));
  }
}

TEST_CASE("random: a vmapped split gives the loop's keys and independent streams") {
  std::vector<rnd::Key> ks = rnd::split(rnd::key(11), 3);
  auto children = fx::vmap([](const rnd::Key& k) {
    std::vector<rnd::Key> two = rnd::split(k, 2);
    return std::make_pair(two[0], two[1]);
  })(rnd::wrap_key_data(stack_keys(ks)));
  std::vector<std::vector<double>> streams;
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<rnd::Key> two = rnd::split(ks[static_cast<size_t>(b)], 2);
    auto row = [&](const rnd::Key& k) { return rnd::Key{fx::squeeze(fx::slice(k.data, {b, 0}, {b + 1, 2}), {0})}; };
    CHECK(equal_bits(row(children.first).data, two[0].data));
    CHECK(equal_bits(row(children.second).data, two[1].data));
    streams.push_back(rnd::uniform(two[0], {8}).to_vector<double>());
    streams.push_back(rnd::uniform(two[1], {8}).to_vector<double>());
  }
  for (size_t i = 0; i < streams.size(); ++i)
    for (size_t j = i + 1; j < streams.size(); ++j) CHECK(streams[i] != streams[j]);
}

TEST_CASE("random: jit gives the eager bits, and keys pass through scan") {
  rnd::Key k = rnd::key(5);
  auto f = [](const rnd::Key& key) {
    std::vector<rnd::Key> two = rnd::split(key, 2);
    return std::make_tuple(rnd::normal(two[0], {7}), rnd::uniform(two[1], {2, 3}, fx::f64, -1.0, 2.0),
                           rnd::categorical(two[1], fx::astype(fx::linspace(0.0, 1.0, 4), fx::f32)),
                           rnd::permutation(key, 9), rnd::truncated_normal(key, -0.5, 1.5, {4}));
  };
  auto eager = f(k);
  auto jitted = fx::jit(f)(k);
  CHECK(equal_bits(std::get<0>(eager), std::get<0>(jitted)));
  CHECK(equal_bits(std::get<1>(eager), std::get<1>(jitted)));
  CHECK(equal_bits(std::get<2>(eager), std::get<2>(jitted)));
  CHECK(equal_bits(std::get<3>(eager), std::get<3>(jitted)));
  CHECK(equal_bits(std::get<4>(eager), std::get<4>(jitted)));

  // A key as scan's carry: each step splits it and draws with the subkey.
  auto step = [](const rnd::Key& carry, const fx::Tensor&) {
    std::vector<rnd::Key> two = rnd::split(carry, 2);
    return std::make_pair(two[0], rnd::uniform(two[1], {2}));
  };
  auto [last, draws] = fx::scan(step, k, fx::zeros({3}));
  rnd::Key loop = k;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<rnd::Key> two = rnd::split(loop, 2);
    loop = two[0];
    CHECK(equal_bits(fx::squeeze(fx::slice(draws, {i, 0}, {i + 1, 2}), {0}), rnd::uniform(two[1], {2})));
  }
  CHECK(equal_bits(last.data, loop.data));
}

TEST_CASE("random: derivatives of reparameterized samples") {
  rnd::Key k = rnd::key(9);
  fx::Tensor f = rnd::uniform(k, {6}, fx::f64);  // the unit draws behind uniform(k, ..., lo, hi)
  auto mean_uniform = [&](const fx::Tensor& lo, const fx::Tensor& hi) {
    return fx::sum(rnd::uniform(k, {6}, fx::f64, lo, hi));
  };
  auto [dlo, dhi] = fx::grad(mean_uniform, fx::argnums<0, 1>)(fx::scalar(-1.0), fx::scalar(2.0));
  CHECK(dhi.item<double>() == doctest::Approx(fx::sum(f).item<double>()).epsilon(1e-12));
  CHECK(dlo.item<double>() == doctest::Approx(6.0 - fx::sum(f).item<double>()).epsilon(1e-12));

  fx::Tensor z = rnd::normal(k, {5}, fx::f64);
  auto loss = [&](const fx::Tensor& mu, const fx::Tensor& sigma) {
    return fx::sum(fx::square(mu + sigma * rnd::normal(k, {5}, fx::f64)));
  };
  auto [dmu, dsigma] = fx::grad(loss, fx::argnums<0, 1>)(fx::scalar(0.5), fx::scalar(2.0));
  CHECK(dmu.item<double>() == doctest::Approx(fx::sum((0.5 + 2.0 * z) * 2.0).item<double>()));
  CHECK(dsigma.item<double>() == doctest::Approx(fx::sum((0.5 + 2.0 * z) * 2.0 * z).item<double>()));

  // erf_inv's derivative is sqrt(pi)/2 exp(erf_inv(x)^2).
  const double x = 0.3, y = fx::lax::erf_inv(fx::scalar(x)).item<double>();
  CHECK(std::erf(y) == doctest::Approx(x).epsilon(1e-15));
  const double d = fx::grad([](const fx::Tensor& v) { return fx::lax::erf_inv(v); })(fx::scalar(x)).item<double>();
  CHECK(d == doctest::Approx(std::sqrt(3.14159265358979323846) / 2 * std::exp(y * y)).epsilon(1e-14));
}

TEST_CASE("random: distributions keep JAX's edge behaviour") {
  rnd::Key k = rnd::key(1);
  // minval > maxval: every sample is minval (max(minval, f (maxval - minval) + minval)).
  for (double v : rnd::uniform(k, {5}, fx::f64, 2.0, 1.0).to_vector<double>()) CHECK(v == 2.0);
  // maxval <= minval in randint: every sample is minval.
  for (int64_t v : fx::astype(rnd::randint(k, {5}, 7, 3), fx::i64).to_vector<int64_t>()) CHECK(v == 7);
  // The whole i32 range (span 2^32 wraps to 0, so the words pass through unreduced).
  fx::Tensor full = rnd::randint(k, {64}, std::numeric_limits<int32_t>::min(), int64_t(1) << 31);
  CHECK(full.dtype() == fx::i32);
  // A permutation is one: 0..n-1 each once.
  std::vector<int64_t> p = fx::astype(rnd::permutation(k, 50), fx::i64).to_vector<int64_t>();
  std::sort(p.begin(), p.end());
  for (int64_t i = 0; i < 50; ++i) CHECK(p[static_cast<size_t>(i)] == i);
  CHECK(rnd::permutation(k, 0).shape() == fx::Shape{0});
  fx::Tensor rows = fx::reshape(fx::astype(fx::arange(12), fx::f64), {4, 3});
  fx::Tensor shuffled = rnd::permutation(k, rows);
  CHECK(fx::sum(shuffled).item<double>() == 66.0);
  // Samples stay inside (lower, upper).
  for (double v : rnd::truncated_normal(k, -0.1, 0.1, {50}, fx::f64).to_vector<double>()) {
    CHECK(v > -0.1);
    CHECK(v < 0.1);
  }
}

TEST_CASE("random: bad input raises errors that say what to do") {
  rnd::Key k = rnd::key(0);
  CHECK(message_of<fx::ShapeError>([&] { rnd::permutation(k, -3); }) ==
        "[random.permutation] n must be non-negative, got -3. (jax.random.permutation returns an empty array "
        "there.)");
  check_error<fx::ShapeError>([&] { rnd::split(k, -1); }, "must be non-negative, got -1");
  check_error<fx::ShapeError>(
      [&] {
        rnd::uniform(rnd::Key{fx::zeros({4, 2}, fx::i64)}, {3});
      },
      "[random.uniform] expects a single key (i64[2] words), got i64[4,2]");
  check_error<fx::ShapeError>([&] { rnd::wrap_key_data(fx::zeros({3}, fx::i64)); },
                              "key words need a last axis of size 2, got i64[3]");
  check_error<fx::DTypeError>([&] { rnd::wrap_key_data(fx::zeros({2}, fx::f32)); }, "key words are i64 values");
  check_error<fx::ShapeError>([&] { rnd::normal(rnd::Key{}, {2}); }, "got an empty Key");
  check_error<fx::ShapeError>([&] { rnd::uniform(k, {3}, fx::f32, fx::zeros({4}), fx::ones({})); }, "[random.uniform]");
  check_error<fx::DTypeError>([&] { rnd::uniform(k, {3}, fx::i32); },
                              "samples floating dtypes (f32, f64, f16, bf16), got i32");
  check_error<fx::DTypeError>([&] { rnd::randint(k, {3}, 0, 5, fx::i64); },
                              "samples i32 (jax.random.randint's dtype without x64), asked for i64");
  check_error<fx::DTypeError>([&] { rnd::bernoulli(k, fx::zeros({2}, fx::i32)); },
                              "the probability p must be floating");
  check_error<fx::AxisError>(
      [&] {
        rnd::categorical(k, fx::zeros({3, 4}, fx::f32), 2);
      },
      "axis 2 is out of range for logits f32[3,4]");
  check_error<fx::ShapeError>([&] { rnd::fold_in(k, fx::zeros({2}, fx::i32)); },
                              "data must be an integer scalar, got i32[2]");
  check_error<fx::ShapeError>([&] { rnd::permutation(k, fx::scalar(3.0)); }, "x must have at least one axis");
}
