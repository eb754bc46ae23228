// The ops and transform options a new user missed (issue 28): any all isnan isinf isfinite relu
// var std, the one-argument where and nonzero, scalar forms of the binary functions, numpy's
// remainder and C's fmod, argnums for the Jacobians, repeated argnums, and per-leaf pytree
// in_axes / out_axes for vmap. Each under eager, grad (where differentiable), vmap and jit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fx = fluxion;
using doctest::Contains;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

/// Equal values with NaN equal to NaN and the sign of zero compared too (bit-level agreement).
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    } else if (a[i] != b[i] || std::signbit(a[i]) != std::signbit(b[i])) {
      return false;
    }
  }
  return true;
}

bool close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]))) return false;
  return true;
}

struct Params {
  fx::Tensor w, b;
};

}  // namespace

BOOST_HANA_ADAPT_STRUCT(Params, w, b);

// ---- any, all ----

TEST_CASE("any and all: over axes with keepdims, NaN counting as nonzero, ints and bool") {
  fx::Tensor x = fx::tensor({{0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}});
  CHECK(fx::any(x).dtype() == fx::boolean);
  CHECK(fx::any(x).item<bool>());
  CHECK_FALSE(fx::all(x).item<bool>());
  CHECK(vals(fx::any(x, {1})) == std::vector<double>{1, 0});
  CHECK(vals(fx::all(x == 0.0, {0})) == std::vector<double>{1, 0, 1});
  CHECK(fx::any(x, {0}, true).shape() == std::vector<int64_t>{1, 3});
  CHECK(fx::all(x, {-1}, true).shape() == std::vector<int64_t>{2, 1});
  CHECK(fx::any(fx::tensor({0.0, kNan})).item<bool>());
  CHECK(fx::all(fx::tensor({kNan, 1.0})).item<bool>());
  CHECK(fx::all(fx::tensor({1, -2})).item<bool>());
  CHECK_FALSE(fx::any(fx::tensor({false, false})).item<bool>());
  CHECK(fx::any(fx::scalar(2.0)).item<bool>());
}

TEST_CASE("any and all: jit and vmap agree with eager, and a mask inside grad picks the path") {
  fx::Tensor x = fx::tensor({{0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}});
  auto f = [](const fx::Tensor& v) { return std::make_pair(fx::any(v > 0.5, {-1}), fx::all(v < 0.5)); };
  auto eager = f(x);
  auto jitted = fx::jit(f)(x);
  CHECK(vals(jitted.first) == vals(eager.first));
  CHECK(vals(jitted.second) == vals(eager.second));
  auto mapped = fx::vmap(f)(x);
  CHECK(vals(mapped.first) == std::vector<double>{1, 0});
  CHECK(vals(mapped.second) == std::vector<double>{0, 1});
  auto g = [](const fx::Tensor& v) { return fx::where(fx::all(v > 0.0), fx::sum(v * v), fx::sum(v)); };
  CHECK(vals(fx::grad(g)(fx::tensor({1.0, 2.0}))) == std::vector<double>{2, 4});
  CHECK(vals(fx::grad(g)(fx::tensor({-1.0, 2.0}))) == std::vector<double>{1, 1});
  CHECK(vals(fx::jit(fx::grad(g))(fx::tensor({-1.0, 2.0}))) == std::vector<double>{1, 1});
}

// ---- isnan, isinf, isfinite, relu ----

TEST_CASE("isnan, isinf and isfinite classify special values in every dtype, eager, jit and vmap") {
  auto f = [](const fx::Tensor& v) { return std::make_tuple(fx::isnan(v), fx::isinf(v), fx::isfinite(v)); };
  for (fx::DType d : {fx::f32, fx::f64}) {
    fx::Tensor x = fx::astype(fx::tensor({0.0, -1.5, kInf, -kInf, kNan}), d);
    for (const auto& [nan, inf, finite] : {f(x), fx::jit(f)(x), fx::vmap(f)(x)}) {
      CHECK(nan.dtype() == fx::boolean);
      CHECK(vals(nan) == std::vector<double>{0, 0, 0, 0, 1});
      CHECK(vals(inf) == std::vector<double>{0, 0, 1, 1, 0});
      CHECK(vals(finite) == std::vector<double>{1, 1, 0, 0, 0});
    }
  }
  for (const fx::Tensor& x : {fx::tensor({3, -4}), fx::tensor({true, false})}) {
    auto [nan, inf, finite] = fx::jit(f)(x);
    CHECK(vals(nan) == std::vector<double>{0, 0});
    CHECK(vals(inf) == std::vector<double>{0, 0});
    CHECK(vals(finite) == std::vector<double>{1, 1});
  }
}

TEST_CASE("relu: max(x, 0) keeping the dtype, NaN passing through, derivative 0 at 0") {
  CHECK(same(vals(fx::relu(fx::tensor({-2.0, 0.0, 3.0, kNan}))), {0, 0, 3, kNan}));
  CHECK(fx::relu(fx::tensor({-1.f})).dtype() == fx::f32);
  CHECK(fx::relu(fx::tensor({-1, 4})).dtype() == fx::i32);
  CHECK(vals(fx::relu(fx::tensor({-1, 4}))) == std::vector<double>{0, 4});
  auto loss = [](const fx::Tensor& v) { return fx::sum(fx::relu(v)); };
  fx::Tensor x = fx::tensor({-2.0, 0.0, 3.0});
  CHECK(vals(fx::grad(loss)(x)) == std::vector<double>{0, 0, 1});
  CHECK(vals(fx::jit(fx::grad(loss))(x)) == std::vector<double>{0, 0, 1});
  CHECK(vals(fx::vmap(fx::grad([](const fx::Tensor& v) { return fx::relu(v); }))(x)) == std::vector<double>{0, 0, 1});
}

// ---- var, std ----

TEST_CASE("var and std: numpy's ddof, axes and keepdims; integers give f64, f32 stays f32") {
  fx::Tensor x = fx::tensor({{1.0, 2.0, 3.0, 4.0}, {2.0, 4.0, 6.0, 8.0}});
  CHECK(fx::var(x).item<double>() == doctest::Approx(37.5 / 8));
  CHECK(fx::var(x, {}, false, 1).item<double>() == doctest::Approx(37.5 / 7));
  CHECK(close(vals(fx::var(x, {1})), {1.25, 5.0}));
  CHECK(close(vals(fx::var(x, {-1}, false, 1)), {5.0 / 3, 20.0 / 3}));
  CHECK(close(vals(fx::std(x, {1})), {std::sqrt(1.25), std::sqrt(5.0)}));
  CHECK(close(vals(fx::var(x, {0})), {0.25, 1.0, 2.25, 4.0}));
  CHECK(fx::var(x, {1}, true).shape() == std::vector<int64_t>{2, 1});
  CHECK(fx::std(x, {0, 1}, true).shape() == std::vector<int64_t>{1, 1});
  CHECK(fx::var(fx::tensor({1, 2, 3, 4})).dtype() == fx::f64);
  CHECK(fx::var(fx::tensor({1, 2, 3, 4})).item<double>() == 1.25);
  CHECK(fx::std(fx::tensor({1.f, 3.f})).dtype() == fx::f32);
  CHECK(fx::var(fx::scalar(3.0)).item<double>() == 0);
  // N - ddof <= 0 divides by zero like numpy: inf for a positive sum of squares, NaN for zero.
  CHECK(fx::var(fx::tensor({1.0, 2.0}), {}, false, 2).item<double>() == kInf);
  CHECK(std::isnan(fx::var(fx::tensor({1.0, 1.0}), {}, false, 3).item<double>()));
}

TEST_CASE("var and std: gradients match the closed form under grad, jit and vmap") {
  fx::Tensor x = fx::tensor({1.0, 2.0, 3.0, 4.0});
  auto var = [](const fx::Tensor& v) { return fx::var(v); };
  auto sd = [](const fx::Tensor& v) { return fx::std(v, {}, false, 1); };
  // d var / dx = 2 (x - mean) / n;  d std_1 / dx = (x - mean) / ((n - 1) std_1).
  std::vector<double> dvar{-0.75, -0.25, 0.25, 0.75};
  double s1 = std::sqrt(5.0 / 3);
  std::vector<double> dstd{-1.5 / (3 * s1), -0.5 / (3 * s1), 0.5 / (3 * s1), 1.5 / (3 * s1)};
  CHECK(close(vals(fx::grad(var)(x)), dvar));
  CHECK(close(vals(fx::jit(fx::grad(var))(x)), dvar));
  CHECK(close(vals(fx::grad(sd)(x)), dstd));
  fx::Tensor rows = fx::stack({x, x * 2.0});
  CHECK(close(vals(fx::vmap(var)(rows)), vals(fx::var(rows, {1}))));
  CHECK(close(vals(fx::jit(fx::vmap(sd))(rows)), vals(fx::std(rows, {1}, false, 1))));
  CHECK(close(vals(fx::vmap(fx::grad(var))(rows)), {-0.75, -0.25, 0.25, 0.75, -1.5, -0.5, 0.5, 1.5}));
}

// ---- where(cond), nonzero ----

TEST_CASE("where(cond) and nonzero: i32 indices per dimension in row-major order") {
  fx::Tensor m = fx::tensor({{0, 3, 0}, {4, 0, 5}});
  std::vector<fx::Tensor> nz = fx::nonzero(m);
  REQUIRE(nz.size() == 2);
  CHECK(nz[0].dtype() == fx::i32);
  CHECK(vals(nz[0]) == std::vector<double>{0, 1, 1});
  CHECK(vals(nz[1]) == std::vector<double>{1, 0, 2});
  std::vector<fx::Tensor> w = fx::where(m > 3);
  CHECK(vals(w[0]) == std::vector<double>{1, 1});
  CHECK(vals(w[1]) == std::vector<double>{0, 2});
  CHECK(vals(fx::where(fx::tensor({0.0, kNan, -1.0}))[0]) == std::vector<double>{1, 2});
  CHECK(fx::where(fx::zeros({3}))[0].shape() == std::vector<int64_t>{0});
  CHECK(fx::nonzero(fx::zeros({0, 2})).size() == 2);
  CHECK_THROWS_WITH_AS(fx::nonzero(fx::scalar(1.0)), Contains("[nonzero] needs a tensor of rank >= 1, got f64[]"),
                       fx::ShapeError);
}

TEST_CASE("where(cond): concrete under grad, a ConcretizationError naming the alternatives under vmap and jit") {
  auto positive_sum = [](const fx::Tensor& v) { return fx::sum(fx::take(v, fx::where(v > 0.0)[0])); };
  CHECK(vals(fx::grad(positive_sum)(fx::tensor({-1.0, 2.0, 3.0}))) == std::vector<double>{0, 1, 1});
  auto indices = [](const fx::Tensor& v) { return fx::where(v > 0.0)[0]; };
  for (auto run : {+[](decltype(indices) f) {
                     fx::vmap(f)(fx::ones({2, 3}));
                   },
                   +[](decltype(indices) f) { fx::jit(f)(fx::ones({3})); }}) {
    CHECK_THROWS_WITH_AS(run(indices), Contains("[where] the number of indices depends on the values of bool[3]"),
                         fx::ConcretizationError);
    CHECK_THROWS_WITH_AS(run(indices),
                         Contains("Use the three-argument fx::where(cond, a, b), or fx::nonzero(cond, size)"),
                         fx::ConcretizationError);
  }
}

TEST_CASE("nonzero(x, size, fill_value): a static length, equal eager, under jit and vmap") {
  fx::Tensor m = fx::tensor({{0, 3, 0}, {4, 0, 5}});
  auto first_two = [](const fx::Tensor& v) { return fx::nonzero(v, 2); };
  auto padded = [](const fx::Tensor& v) { return fx::nonzero(v, 5, -1); };
  for (const auto& nz : {first_two(m), fx::jit(first_two)(m)}) {
    CHECK(vals(nz[0]) == std::vector<double>{0, 1});
    CHECK(vals(nz[1]) == std::vector<double>{1, 0});
  }
  for (const auto& nz : {padded(m), fx::jit(padded)(m)}) {
    CHECK(vals(nz[0]) == std::vector<double>{0, 1, 1, -1, -1});
    CHECK(vals(nz[1]) == std::vector<double>{1, 0, 2, -1, -1});
  }
  auto per_row = fx::vmap([](const fx::Tensor& row) { return fx::nonzero(row, 2, 9)[0]; })(m);
  CHECK(vals(per_row) == std::vector<double>{1, 9, 0, 2});
  CHECK(fx::nonzero(m, 0)[0].shape() == std::vector<int64_t>{0});
  CHECK(vals(fx::nonzero(fx::zeros({0}), 2, 7)[0]) == std::vector<double>{7, 7});
}

// ---- scalar forms, remainder, fmod ----

TEST_CASE("maximum, minimum, atan2, remainder, fmod and pow take a weak scalar on either side") {
  fx::Tensor x = fx::tensor({-2.f, 0.5f, 3.f});
  CHECK(fx::maximum(0, x).dtype() == fx::f32);
  CHECK(vals(fx::maximum(0, x)) == vals(fx::maximum(x, 0)));
  CHECK(vals(fx::minimum(1.0, x)) == std::vector<double>{-2, 0.5, 1});
  CHECK(fx::atan2(x, 1.0).dtype() == fx::f32);
  CHECK(close(vals(fx::atan2(x, 1.0)), {std::atan2(-2.f, 1.f), std::atan2(0.5f, 1.f), std::atan2(3.f, 1.f)}, 1e-7));
  CHECK(close(vals(fx::atan2(1.0, x)), {std::atan2(1.f, -2.f), std::atan2(1.f, 0.5f), std::atan2(1.f, 3.f)}, 1e-7));
  CHECK(fx::remainder(x, 2).dtype() == fx::f32);
  CHECK(vals(fx::remainder(x, 2)) == std::vector<double>{0, 0.5, 1});
  CHECK(vals(fx::remainder(7, fx::tensor({3, -3}))) == std::vector<double>{1, -2});
  CHECK(fx::remainder(7, fx::tensor({3, -3})).dtype() == fx::i32);
  CHECK(vals(fx::fmod(x, 2)) == std::vector<double>{-0.0, 0.5, 1});
  CHECK(vals(fx::fmod(-7, fx::tensor({3, -3}))) == std::vector<double>{-1, -1});
  CHECK(fx::pow(2, x).dtype() == fx::f32);
  CHECK(fx::maximum(fx::tensor({true, false}), 0).dtype() == fx::i32);
  CHECK_THROWS_AS(fx::minimum(fx::tensor({1}), int64_t(1) << 40), fx::DTypeError);
}

TEST_CASE("remainder is floored like numpy and fmod truncated like C, for every sign and special value") {
  fx::Tensor ai = fx::tensor({7, -7, 7, -7, 5}), bi = fx::tensor({3, 3, -3, -3, 0});
  CHECK(vals(fx::remainder(ai, bi)) == std::vector<double>{1, 2, -2, -1, 0});
  CHECK(vals(fx::fmod(ai, bi)) == std::vector<double>{1, -1, 1, -1, 0});
  fx::Tensor a = fx::tensor({5.5, -5.5, 5.5, -5.5, -3.0, 3.0, 1.0, -1.0, -1.0, kInf, 2.0});
  fx::Tensor b = fx::tensor({2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 0.0, kInf, -kInf, 2.0, kNan});
  // numpy: exact multiples give a zero of the divisor's sign; -1 % inf = inf; x % 0 = nan.
  std::vector<double> floored{1.5, 0.5, -0.5, -1.5, 0.0, -0.0, kNan, kInf, -1.0, kNan, kNan};
  std::vector<double> truncated{1.5, -1.5, 1.5, -1.5, -0.0, 0.0, kNan, -1.0, -1.0, kNan, kNan};
  auto both = [](const fx::Tensor& p, const fx::Tensor& q) {
    return std::make_pair(fx::remainder(p, q), fx::fmod(p, q));
  };
  for (const auto& [r, f] : {both(a, b), fx::jit(both)(a, b), fx::vmap(both)(a, b)}) {
    CHECK(same(vals(r), floored));
    CHECK(same(vals(f), truncated));
  }
  CHECK(same(vals(fx::remainder(fx::astype(a, fx::f32), fx::astype(b, fx::f32))), floored));
}

TEST_CASE("remainder and fmod: derivatives 1 and -floor(a / b) (-trunc for fmod), at exact multiples too") {
  auto rem_a = [](const fx::Tensor& v) { return fx::remainder(v, 2.0); };
  auto rem_b = [](const fx::Tensor& v) { return fx::remainder(7.0, v); };
  auto fmod_b = [](const fx::Tensor& v) { return fx::fmod(7.0, v); };
  fx::Tensor a = fx::tensor({3.0, 4.0, -4.0, -3.5}), b = fx::tensor({3.0, -3.0, 2.5});
  CHECK(vals(fx::vmap(fx::grad(rem_a))(a)) == std::vector<double>{1, 1, 1, 1});
  CHECK(vals(fx::vmap(fx::grad(rem_b))(b)) == std::vector<double>{-2, 3, -2});
  CHECK(vals(fx::jit(fx::vmap(fx::grad(rem_b)))(b)) == std::vector<double>{-2, 3, -2});
  CHECK(vals(fx::vmap(fx::grad(fmod_b))(b)) == std::vector<double>{-2, 2, -2});
  CHECK(fx::grad(rem_a)(fx::scalar(4.0)).item<double>() == 1);
  auto both = [](const fx::Tensor& p, const fx::Tensor& q) { return fx::sum(fx::remainder(p, q)); };
  auto [ga, gb] = fx::grad(both, fx::argnums<0, 1>)(fx::tensor({7.0, -7.0}), fx::tensor({3.0, 3.0}));
  CHECK(vals(ga) == std::vector<double>{1, 1});
  CHECK(vals(gb) == std::vector<double>{-2, 3});
}

// ---- argnums ----

TEST_CASE("grad with a repeated argnum returns that gradient at each position, like JAX") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return fx::sum(x * x * y); };
  fx::Tensor x = fx::tensor({1.0, 2.0}), y = fx::tensor({3.0, 5.0});
  auto [g0, g1] = fx::grad(f, fx::argnums<0, 0>)(x, y);
  CHECK(vals(g0) == std::vector<double>{6, 20});
  CHECK(vals(g1) == std::vector<double>{6, 20});
  auto [value, grads] = fx::value_and_grad(f, fx::argnums<1, 0, 1>)(x, y);
  CHECK(value.item<double>() == 23);
  CHECK(vals(std::get<0>(grads)) == std::vector<double>{1, 4});
  CHECK(vals(std::get<1>(grads)) == std::vector<double>{6, 20});
  CHECK(vals(std::get<2>(grads)) == std::vector<double>{1, 4});
  auto [j0, j1] = fx::jit(fx::grad(f, fx::argnums<0, 0>))(x, y);
  CHECK(vals(j1) == std::vector<double>{6, 20});
  auto with_aux = [](const fx::Tensor& a, const fx::Tensor& b) { return std::make_pair(fx::sum(a * b), a + b); };
  auto [g, aux] = fx::grad(with_aux, fx::argnums<1, 1>, fx::has_aux)(x, y);
  CHECK(vals(std::get<0>(g)) == std::vector<double>{1, 2});
  CHECK(vals(std::get<1>(g)) == std::vector<double>{1, 2});
  CHECK(vals(aux) == std::vector<double>{4, 7});
}

TEST_CASE("jacfwd, jacrev and jacobian take argnums: one gives one block, several a tuple, repeats repeat") {
  auto f = [](const fx::Tensor& a, const fx::Tensor& b) { return a * fx::sin(b); };
  fx::Tensor a = fx::tensor({1.0, 2.0}), b = fx::tensor({0.5, -1.0});
  std::vector<double> ja{std::sin(0.5), 0, 0, std::sin(-1.0)}, jb{std::cos(0.5), 0, 0, 2 * std::cos(-1.0)};
  auto check = [&](auto jac) {
    CHECK(close(vals(jac(f)(a, b)), ja));
    CHECK(close(vals(jac(f, fx::argnums<1>)(a, b)), jb));
    auto [da, db] = jac(f, fx::argnums<0, 1>)(a, b);
    CHECK(da.shape() == std::vector<int64_t>{2, 2});
    CHECK(close(vals(da), ja));
    CHECK(close(vals(db), jb));
    auto [b1, b2] = jac(f, fx::argnums<1, 1>)(a, b);
    CHECK(close(vals(b1), jb));
    CHECK(close(vals(b2), jb));
    auto [ja2, jb2] = fx::jit(jac(f, fx::argnums<0, 1>))(a, b);
    CHECK(close(vals(ja2), ja));
    CHECK(close(vals(jb2), jb));
  };
  check([](auto&&... p) { return fx::jacfwd(p...); });
  check([](auto&&... p) { return fx::jacrev(p...); });
  check([](auto&&... p) { return fx::jacobian(p...); });
  CHECK_THROWS_WITH_AS(fx::jacrev(f, fx::argnums<2>)(a, b),
                       Contains("[jacrev] argnums 2 is out of range for a function called with 2 argument(s)"),
                       fx::Error);
}

TEST_CASE("hessian takes argnums: the blocks d2f / d(ai) d(aj), rows per argument, like jacfwd(jacrev)") {
  auto f = [](const fx::Tensor& a, const fx::Tensor& b) { return fx::sum(a * a * b); };
  fx::Tensor a = fx::tensor({1.0, 2.0}), b = fx::tensor({3.0, 5.0});
  CHECK(vals(fx::hessian(f)(a, b)) == std::vector<double>{6, 0, 0, 10});
  CHECK(vals(fx::hessian(f, fx::argnums<1>)(a, b)) == std::vector<double>{0, 0, 0, 0});
  // Nested like JAX's: ((d2f/da da, d2f/da db), (d2f/db da, d2f/db db)).
  using Pair = std::tuple<fx::Tensor, fx::Tensor>;
  std::tuple<Pair, Pair> h = fx::hessian(f, fx::argnums<0, 1>)(a, b);
  CHECK(vals(std::get<0>(std::get<0>(h))) == std::vector<double>{6, 0, 0, 10});  // d2f / da da = diag(2b)
  CHECK(vals(std::get<1>(std::get<0>(h))) == std::vector<double>{2, 0, 0, 4});   // d2f / da db = diag(2a)
  CHECK(vals(std::get<0>(std::get<1>(h))) == std::vector<double>{2, 0, 0, 4});
  CHECK(vals(std::get<1>(std::get<1>(h))) == std::vector<double>{0, 0, 0, 0});
  auto hj = fx::jit(fx::hessian(f, fx::argnums<0, 1>))(a, b);
  CHECK(vals(std::get<1>(std::get<0>(hj))) == std::vector<double>{2, 0, 0, 4});
}

TEST_CASE("Jacobians of pytree outputs keep the output's structure outside, the input's inside, like JAX") {
  fx::Tensor x = fx::tensor({1.0, 2.0});
  auto pair_out = [](const fx::Tensor& v) { return std::make_pair(v * v, fx::sum(v)); };
  std::pair<fx::Tensor, fx::Tensor> jp = fx::jacrev(pair_out)(x);
  CHECK(vals(jp.first) == std::vector<double>{2, 0, 0, 4});
  CHECK(vals(jp.second) == std::vector<double>{1, 1});
  auto map_out = [](const fx::Tensor& v) {
    return std::map<std::string, fx::Tensor>{{"cube", v * v * v}, {"twice", v * 2.0}};
  };
  std::map<std::string, fx::Tensor> jm = fx::jacfwd(map_out)(x);
  CHECK(vals(jm.at("cube")) == std::vector<double>{3, 0, 0, 12});
  CHECK(vals(jm.at("twice")) == std::vector<double>{2, 0, 0, 2});
  // A tuple output and two arguments: one tuple of (d/da, d/db) per output.
  auto two = [](const fx::Tensor& a, const fx::Tensor& b) { return std::make_tuple(a * b, fx::sum(a)); };
  auto jt = fx::jacobian(two, fx::argnums<0, 1>)(x, x);
  CHECK(vals(std::get<1>(std::get<0>(jt))) == std::vector<double>{1, 0, 0, 2});  // d(a b) / db = diag(a)
  CHECK(vals(std::get<0>(std::get<1>(jt))) == std::vector<double>{1, 1});        // d sum(a) / da
  // A std::vector output stays a std::vector (as before).
  auto vec_out = [](const fx::Tensor& v) { return std::vector<fx::Tensor>{v, -v}; };
  std::vector<fx::Tensor> jv = fx::jacrev(vec_out)(x);
  CHECK(jv.size() == 2);
}

// ---- vmap in_axes / out_axes per leaf ----

TEST_CASE("vmap: in_axes entries nest like the pytree argument (tuple, pair, map, struct, vector)") {
  fx::Tensor xs = fx::reshape(fx::astype(fx::arange(6), fx::f64), {2, 3});  // mapped along axis 0
  fx::Tensor w = fx::tensor({1.0, 10.0, 100.0});                            // shared
  fx::Tensor zs = fx::tensor({{1.0, 2.0}});                                 // mapped along axis 1
  auto f = [](const std::pair<fx::Tensor, fx::Tensor>& p, const fx::Tensor& z) {
    return fx::sum(p.first * p.second) + z;
  };
  fx::Tensor out = fx::vmap(f, fx::in_axes(std::make_tuple(0, fx::none), 1))(std::make_pair(xs, w), zs);
  CHECK(vals(out) == std::vector<double>{211, 545});
  CHECK(vals(fx::jit(fx::vmap(f, fx::in_axes(std::make_pair(0, fx::none), -1)))(std::make_pair(xs, w), zs)) ==
        std::vector<double>{211, 545});
  auto g = [](const std::map<std::string, fx::Tensor>& m) { return fx::sum(m.at("x") * m.at("w")); };
  std::map<std::string, fx::Tensor> args{{"w", w}, {"x", xs}};
  auto spec = std::map<std::string, std::optional<int64_t>>{{"w", std::nullopt}, {"x", 0}};
  CHECK(vals(fx::vmap(g, fx::in_axes(spec))(args)) == std::vector<double>{210, 543});
  auto h = [](const Params& p, const fx::Tensor& x) { return fx::sum(p.w * x) + p.b; };
  Params p{w, fx::tensor({0.5, 0.25})};
  CHECK(vals(fx::vmap(h, fx::in_axes(std::make_tuple(fx::none, 0), 0))(p, xs)) == std::vector<double>{210.5, 543.25});
  auto k = [](const std::vector<fx::Tensor>& v) { return v[0] * v[1]; };
  CHECK(vals(fx::vmap(k, fx::in_axes(std::vector<int>{0, 1}))(std::vector<fx::Tensor>{fx::tensor({1.0, 2.0}), zs})) ==
        std::vector<double>{1, 4});
  auto per_example = fx::vmap(fx::grad(h), fx::in_axes(std::make_tuple(fx::none, 0), 0))(p, xs);
  CHECK(per_example.w.shape() == std::vector<int64_t>{2, 3});
  CHECK(vals(per_example.b) == std::vector<double>{1, 1});
}

TEST_CASE("vmap: out_axes per output leaf, and fx::none for an output that is not mapped") {
  fx::Tensor xs = fx::reshape(fx::astype(fx::arange(6), fx::f64), {2, 3});
  auto f = [](const fx::Tensor& x) { return std::make_tuple(x * 2.0, fx::sum(x), fx::ones({2})); };
  auto [a, s, c] = fx::vmap(f, {}, fx::out_axes(1, 0, fx::none))(xs);
  CHECK(a.shape() == std::vector<int64_t>{3, 2});
  CHECK(vals(a) == std::vector<double>{0, 6, 2, 8, 4, 10});
  CHECK(vals(s) == std::vector<double>{3, 12});
  CHECK(c.shape() == std::vector<int64_t>{2});
  auto [a2, s2, c2] = fx::jit(fx::vmap(f, {}, fx::out_axes(std::make_tuple(-1, 0, fx::none))))(xs);
  CHECK(vals(a2) == vals(a));
  CHECK_THROWS_WITH_AS(fx::vmap(f, {}, fx::out_axes(0, fx::none, 0))(xs),
                       Contains("[vmap] out_axes is fx::none for output leaf 1 (f64[2]), but it depends on the mapped"),
                       fx::Error);
}

TEST_CASE("vmap: in_axes that do not match the argument's structure name the argument and the place") {
  auto f = [](const std::pair<fx::Tensor, fx::Tensor>& p, const fx::Tensor& z) { return p.first + z; };
  auto args = std::make_pair(fx::ones({2}), fx::ones({2}));
  CHECK_THROWS_WITH_AS(fx::vmap(f, fx::in_axes(std::make_tuple(0, 0, 0), 0))(args, fx::ones({2})),
                       Contains("[vmap] in_axes entry for argument 0 has 3 entries but the std::pair has 2 elements"),
                       fx::Error);
  CHECK_THROWS_WITH_AS(fx::vmap(f, fx::in_axes(0, std::make_tuple(0)))(args, fx::ones({2})),
                       Contains("[vmap] in_axes entry for argument 1 is a container but the value is a Tensor"),
                       fx::Error);
  auto g = [](const std::map<std::string, fx::Tensor>& m) { return m.at("x"); };
  std::map<std::string, fx::Tensor> m{{"x", fx::ones({2})}};
  CHECK_THROWS_WITH_AS(fx::vmap(g, fx::in_axes(std::map<std::string, int>{{"y", 0}}))(m),
                       Contains("[vmap] in_axes entry for argument 0 has key 'y' where the map has 'x'"), fx::Error);
  auto nested = [](const std::tuple<fx::Tensor, std::pair<fx::Tensor, fx::Tensor>>& t) { return std::get<0>(t); };
  auto targ = std::make_tuple(fx::ones({2}), std::make_pair(fx::ones({2}), fx::ones({2})));
  CHECK_THROWS_WITH_AS(fx::vmap(nested, fx::in_axes(std::make_tuple(0, std::make_tuple(0, 0, 0))))(targ),
                       Contains("argument 0 at [1] has 3 entries but the std::pair has 2 elements"), fx::Error);
}
