// Special values (±0, ±inf, NaN, subnormals, huge, halfway cases) through every floating-point
// elementwise kernel path, against the C library: the eager kernels at lengths that reach vector
// bodies and scalar tails, the fused groups' block kernels (unaligned, short, broadcast operands),
// the register programs of fused groups, jit, constant folding and the reference backend.
// Correctly rounded operations must give the C library's bits; the others its special-value
// class (NaN, ±inf, ±0) and stay within their ulp bound. Every path gives the same bits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "backends/cpu/tile_program.hpp"

namespace fx = fluxion;
namespace lax = fluxion::lax;

namespace {

template <class T> constexpr bool kF32 = std::is_same_v<T, float>;

/// The inputs: signed zeros, infinities, NaNs, subnormals, the normal extremes, huge and tiny
/// values, halfway cases of rounding, odd integers at the edge of exactness, ordinary values.
template <class T> std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  const T huge = kF32<T> ? T(1e30) : T(1e300), odd = kF32<T> ? T(8388609.0) : T(4503599627370497.0);
  return {T(0),
          -T(0),
          L::infinity(),
          -L::infinity(),
          L::quiet_NaN(),
          -L::quiet_NaN(),
          L::denorm_min(),
          -L::denorm_min(),
          L::min() / T(3),
          -L::min() / T(3),
          L::min(),
          -L::min(),
          L::max(),
          -L::max(),
          huge,
          -huge,
          T(1),
          T(-1),
          T(0.5),
          T(-0.5),
          T(1.5),
          T(2.5),
          T(-2.5),
          T(3.5),
          std::nextafter(T(0.5), T(0)),
          -std::nextafter(T(0.5), T(0)),
          odd,
          -odd,
          T(0.75),
          T(-3.25),
          T(100),
          T(-100),
          T(1e-3),
          T(-7e5),
          T(20),
          T(-0.1)};
}

/// One primitive: its op, the C library's result, and how closely the kernels must follow it.
struct UnaryCase {
  std::string name;
  std::function<fx::Tensor(const fx::Tensor&)> op;
  bool exact;           // correctly rounded: the C library's bits
  double ulp32, ulp64;  // otherwise: the bound on the error against the C library, in ulp
};

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", lax::neg, true, 0, 0},
      {"abs", lax::abs, true, 0, 0},
      {"sign", lax::sign, true, 0, 0},
      {"sqrt", lax::sqrt, true, 0, 0},
      {"rsqrt", lax::rsqrt, true, 0, 0},
      {"floor", lax::floor, true, 0, 0},
      {"ceil", lax::ceil, true, 0, 0},
      {"round", [](const fx::Tensor& x) { return lax::round(x); }, true, 0, 0},
      {"round_nearest_even", [](const fx::Tensor& x) { return lax::round(x, lax::RoundingMethod::to_nearest_even); },
       true, 0, 0},
      // Bounds against the C library (itself within about half an ulp of the exact value).
      {"exp", lax::exp, false, 1.6, 1.6},
      {"log", lax::log, false, 2, 2},
      {"log1p", lax::log1p, false, 3, 3},
      {"expm1", lax::expm1, false, 3, 3},
      {"sin", lax::sin, false, 2, 0},
      {"cos", lax::cos, false, 2, 0},
      {"tan", lax::tan, false, 0, 0},
      {"tanh", lax::tanh, false, 6, 4.5},
      {"logistic", lax::logistic, false, 3, 3},
  };
  return cases;
}

/// What the C library gives (`sign` has no C function: XLA's, ±0 and NaN kept; logistic is
/// 1 / (1 + exp(-x)) in T; rsqrt 1 / sqrt). exp is 0 below -87 (f32) and -708 (f64), where its
/// results leave the normal range: the documented flush (backends/cpu/special_functions.hpp).
template <class T> T c_result(const std::string& name, T x) {
  if (name == "neg") return -x;
  if (name == "abs") return std::fabs(x);
  if (name == "sign") return x > 0 ? T(1) : x < 0 ? T(-1) : x;
  if (name == "sqrt") return std::sqrt(x);
  if (name == "rsqrt") return T(1) / std::sqrt(x);
  if (name == "floor") return std::floor(x);
  if (name == "ceil") return std::ceil(x);
  if (name == "round") return std::round(x);
  if (name == "round_nearest_even") return std::nearbyint(x);
  if (name == "exp") return x < (kF32<T> ? T(-87) : T(-708)) ? T(0) : std::exp(x);
  if (name == "log") return std::log(x);
  if (name == "log1p") return std::log1p(x);
  if (name == "expm1") return std::expm1(x);
  if (name == "sin") return std::sin(x);
  if (name == "cos") return std::cos(x);
  if (name == "tan") return std::tan(x);
  if (name == "tanh") return std::tanh(x);
  if (name == "logistic") return T(1) / (T(1) + std::exp(-x));
  FAIL("no C result for " << name);
  return x;
}

template <class T> bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

/// "" when `got` follows `want` as the case requires, else what differs.
template <class T> std::string mismatch(T got, T want, bool exact, double ulps) {
  std::ostringstream os;
  os.precision(std::numeric_limits<T>::max_digits10);
  os << "got " << got << ", the C library " << want;
  if (std::isnan(want)) return std::isnan(got) ? "" : os.str();
  if (exact || std::isinf(want) || want == 0) return same_bits(got, want) ? "" : os.str();
  if (!std::isfinite(got) || got == 0) return os.str();
  const T w = std::fabs(want);
  const double ulp = static_cast<double>(std::nextafter(w, std::numeric_limits<T>::infinity()) - w);
  const double err = std::fabs(static_cast<double>(got) - static_cast<double>(want)) / ulp;
  if (err <= ulps) return "";
  os << " (" << err << " ulp)";
  return os.str();
}

template <class T> double bound(const UnaryCase& c) { return kF32<T> ? c.ulp32 : c.ulp64; }

/// Checks out[i] against the C library's result for in[i], naming `path` on failure.
template <class T>
void check_against_c(const UnaryCase& c, const std::string& path, const std::vector<T>& in, const std::vector<T>& out) {
  REQUIRE(in.size() == out.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string diff = mismatch(out[i], c_result(c.name, in[i]), c.exact, bound<T>(c));
    if (!diff.empty())
      FAIL_CHECK(c.name << "(" << in[i] << ") at " << i << " of " << in.size() << ", " << path << ": " << diff);
  }
}

/// n values cycling through the special values, starting at `shift`.
template <class T> std::vector<T> cycle(size_t n, size_t shift) {
  const std::vector<T> s = special_values<T>();
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = s[(i + shift) % s.size()];
  return v;
}

template <class T> std::vector<T> values_of(const fx::Tensor& t) { return t.to_vector<T>(); }

const fx::Primitive& primitive_of(const UnaryCase& c, fx::DType dtype) {
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) { return c.op(x); })(fx::zeros({2}, dtype));
  REQUIRE(j.equations.size() == 1);
  return *j.equations[0].primitive;
}

template <class T> void check_unary_paths(const UnaryCase& c) {
  const fx::DType dtype = fx::dtype_of_v<T>;
  const size_t count = special_values<T>().size();
  // Eager: lengths with only a tail, one vector, vectors and a tail; every value at every offset.
  for (size_t n : {size_t(1), size_t(7), size_t(16), size_t(33)})
    for (size_t shift = 0; shift < count; ++shift) {
      const std::vector<T> in = cycle<T>(n, shift);
      check_against_c(c, "eager", in, values_of<T>(c.op(fx::from_vector(in))));
    }
  const std::vector<T> long_in = cycle<T>(1000, 0);
  const fx::Tensor x = fx::from_vector(long_in);
  const std::vector<T> eager = values_of<T>(c.op(x));
  check_against_c(c, "eager n=1000", long_in, eager);

  // The fused groups' block kernel: unaligned, short and long blocks, and a broadcast operand.
  const fx::Primitive& p = primitive_of(c, dtype);
  const fx::cpu::Lowering* lowering = fx::cpu::find_lowering(p);
  REQUIRE(lowering);
  const fx::cpu::BlockKernel block = lowering->block;
  REQUIRE(static_cast<bool>(block));
  for (int64_t n : {int64_t(1), int64_t(5), int64_t(8), int64_t(33), int64_t(999)}) {
    const std::vector<T> in = cycle<T>(static_cast<size_t>(n) + 1, 3);
    std::vector<T> out(in.size());
    const void* ptr = in.data() + 1;  // one element past the (aligned) start
    const bool scalar = false;
    block(dtype, &ptr, &scalar, out.data() + 1, n, dtype);
    check_against_c(c, "block kernel", std::vector<T>(in.begin() + 1, in.end()),
                    std::vector<T>(out.begin() + 1, out.end()));
  }
  for (T v : special_values<T>()) {
    std::vector<T> out(9);
    const void* ptr = &v;
    const bool scalar = true;
    block(dtype, &ptr, &scalar, out.data(), 9, dtype);
    check_against_c(c, "broadcast operand", std::vector<T>(9, v), out);
  }

  // jit (its own kernels, or a fused group), constant folding (the kernel on a constant), and
  // the reference backend; jit and folding must give eager's bits.
  const std::vector<T> jitted = values_of<T>(fx::jit([&](const fx::Tensor& a) { return c.op(a); })(x));
  const std::vector<T> folded =
      values_of<T>(fx::jit([&](const fx::Tensor& one) { return one * c.op(x); })(fx::ones({1000}, dtype)));
  for (size_t i = 0; i < long_in.size(); ++i) {
    CAPTURE(long_in[i]);
    CHECK_MESSAGE((same_bits(jitted[i], eager[i]) || (std::isnan(jitted[i]) && std::isnan(eager[i]))),
                  c.name << " jit " << jitted[i] << " eager " << eager[i]);
    CHECK_MESSAGE((same_bits(folded[i], eager[i]) || (std::isnan(folded[i]) && std::isnan(eager[i]))),
                  c.name << " folded " << folded[i] << " eager " << eager[i]);
  }
  const auto reference =
      fx::eval_primitive(p, {x}, *fx::make_jaxpr([&](const fx::Tensor& a) { return c.op(a); })(x).equations[0].params,
                         fx::Backend::reference);
  const std::vector<T> ref = values_of<T>(reference[0]);
  for (size_t i = 0; i < long_in.size(); ++i) {
    // The reference computes in long double and rounds once: within one ulp of the C library
    // (exact where that is correctly rounded), its special-value class, no flush to zero.
    const T x_i = long_in[i];
    T want = c.name == "exp"        ? std::exp(x_i)
             : c.name == "logistic" ? T(1 / (1 + std::exp(-static_cast<long double>(x_i))))
                                    : c_result(c.name, x_i);
    const bool exact = c.exact && c.name != "rsqrt";
    const std::string diff = mismatch(ref[i], want, exact, exact ? 0 : std::max(1.0, bound<T>(c)));
    if (!diff.empty()) FAIL_CHECK(c.name << "(" << x_i << "), reference backend: " << diff);
  }
}

}  // namespace

TEST_CASE("unary kernels: special values through every path match the C library, f32") {
  for (const UnaryCase& c : unary_cases()) {
    CAPTURE(c.name);
    check_unary_paths<float>(c);
  }
}

TEST_CASE("unary kernels: special values through every path match the C library, f64") {
  for (const UnaryCase& c : unary_cases()) {
    CAPTURE(c.name);
    check_unary_paths<double>(c);
  }
}

namespace {
/// A one-member register program (load, the op, store) over whole tiles.
template <class T> std::vector<T> run_register_program(fx::cpu::TileOp op, const std::vector<T>& in) {
  using fx::cpu::TileInstr;
  std::vector<TileInstr> program(3);
  program[0].kind = TileInstr::load;
  program[1].kind = TileInstr::unary;
  program[1].op = op;
  program[2].kind = TileInstr::store;
  program[2].index = 1;
  for (TileInstr& in_ : program) in_.finish();
  std::vector<T> out(in.size());
  char* bases[2] = {reinterpret_cast<char*>(const_cast<T*>(in.data())), reinterpret_cast<char*>(out.data())};
  alignas(64) T slots[fx::cpu::tile_elements<T>()];
  double sums[64];
  fx::cpu::run_tile_program<T>(program.data(), 3, bases, slots, sums, 0, static_cast<int64_t>(in.size()));
  return out;
}

template <class T> void check_register_programs() {
  const int64_t tile = fx::cpu::tile_elements<T>();
  for (const UnaryCase& c : unary_cases()) {
    const fx::cpu::Lowering* lowering = fx::cpu::find_lowering(primitive_of(c, fx::dtype_of_v<T>));
    if (!lowering || lowering->tile_op == fx::cpu::TileOp::none) continue;
    CAPTURE(c.name);
    const std::vector<T> in = cycle<T>(static_cast<size_t>(4 * tile), 0);
    const std::vector<T> out = run_register_program<T>(lowering->tile_op, in);
    check_against_c(c, "register program", in, out);
    const std::vector<T> eager = values_of<T>(c.op(fx::from_vector(in)));
    for (size_t i = 0; i < in.size(); ++i)
      CHECK_MESSAGE((same_bits(out[i], eager[i]) || (std::isnan(out[i]) && std::isnan(eager[i]))),
                    c.name << "(" << in[i] << ")");
  }
}
}  // namespace

TEST_CASE("unary kernels: the fused register programs give the eager kernels' bits on special values") {
  check_register_programs<float>();
  check_register_programs<double>();
}

TEST_CASE("jit: sqrt(abs(x)) in a fused chain is inf for infinite x, as eagerly and in C") {
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(dtype);
    auto f = [](const fx::Tensor& x) { return fx::sqrt(fx::abs(x)) * 2.0; };
    std::vector<double> v(4099, 4.0);
    v[0] = INFINITY, v[1] = -INFINITY, v[17] = -0.0, v[4098] = INFINITY;
    const fx::Tensor x = fx::astype(fx::from_vector(v), dtype);
    const std::vector<double> got = fx::astype(fx::jit(f)(x), fx::f64).to_vector<double>();
    const std::vector<double> eager = fx::astype(f(x), fx::f64).to_vector<double>();
    CHECK(got[0] == INFINITY);
    CHECK(got[1] == INFINITY);
    CHECK(got[4098] == INFINITY);
    CHECK(got[17] == 0.0);
    CHECK(got[5] == 4.0);
    for (size_t i = 0; i < got.size(); ++i) CHECK(same_bits(got[i], eager[i]));
  }
}

namespace {
/// pow, rem and the C library's pow, fmod on every pair of special values (and some odd and even
/// integer exponents), eagerly in a vectorised length, through the block kernel, and under jit.
template <class T> void check_binary_against_c(const std::string& name,
                                               fx::Tensor (*op)(const fx::Tensor&, const fx::Tensor&), T (*c)(T, T)) {
  std::vector<T> s = special_values<T>();
  for (T extra : {T(2), T(-2), T(3), T(-3), T(-8), T(1) / T(3), T(-1) / T(3), T(0.25)}) s.push_back(extra);
  std::vector<T> a, b;
  for (T x : s)
    for (T y : s) a.push_back(x), b.push_back(y);
  const fx::Tensor ta = fx::from_vector(a), tb = fx::from_vector(b);
  const std::vector<T> eager = op(ta, tb).template to_vector<T>();
  const std::vector<T> jitted =
      fx::jit([op](const fx::Tensor& x, const fx::Tensor& y) { return op(x, y) * T(1); })(ta, tb)
          .template to_vector<T>();
  for (size_t i = 0; i < a.size(); ++i) {
    const T want = c(a[i], b[i]);
    CAPTURE(a[i]);
    CAPTURE(b[i]);
    CHECK_MESSAGE(mismatch(eager[i], want, true, 0).empty(), name << " eager " << mismatch(eager[i], want, true, 0));
    CHECK_MESSAGE(mismatch(jitted[i], want, true, 0).empty(), name << " jit " << mismatch(jitted[i], want, true, 0));
  }
}
}  // namespace

TEST_CASE("pow: every special case of the C library's pow, f32 and f64 (pow(-0, -1) = -inf)") {
  CHECK(std::signbit(lax::pow(fx::scalar(-0.0), fx::scalar(-1.0)).item<double>()));
  CHECK(std::isinf(lax::pow(fx::scalar(-0.0), fx::scalar(-1.0)).item<double>()));
  check_binary_against_c<float>("pow", lax::pow, [](float x, float y) { return std::pow(x, y); });
  check_binary_against_c<double>("pow", lax::pow, [](double x, double y) { return std::pow(x, y); });
}

TEST_CASE("rem: the C library's fmod on special values, f32 and f64") {
  check_binary_against_c<float>("rem", lax::rem, [](float x, float y) { return std::fmod(x, y); });
  check_binary_against_c<double>("rem", lax::rem, [](double x, double y) { return std::fmod(x, y); });
}

TEST_CASE("pow: ordinary arguments within 1 ulp of a long-double pow, in a vectorised length") {
  // Eigen 3.4's vectorised pow, used before, was 99 ulp (f32) and 946 ulp (f64) off here.
  std::vector<double> x, y;
  for (int i = 0; i < 4000; ++i) {
    x.push_back(0.01 + 9.99 * ((i * 7919) % 4000) / 4000.0);
    y.push_back(-40.0 + 80.0 * ((i * 104729) % 4000) / 4000.0);
  }
  const std::vector<double> got = lax::pow(fx::from_vector(x), fx::from_vector(y)).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const long double want = std::pow(static_cast<long double>(x[i]), static_cast<long double>(y[i]));
    const double w = static_cast<double>(want);
    const double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
    CHECK_MESSAGE(static_cast<double>(std::fabs(got[i] - want)) <= ulp, "pow(" << x[i] << ", " << y[i] << ")");
  }
}

TEST_CASE("round: away from zero by default, to even with RoundingMethod::to_nearest_even (numpy's round)") {
  const std::vector<double> in = {-2.5, -1.5, -0.5, -0.25, 0.5, 1.5, 2.5, 3.5, 0.49999999999999994, 4503599627370497.0};
  const std::vector<double> away = {-3, -2, -1, -0.0, 1, 2, 3, 4, 0, 4503599627370497.0};
  const std::vector<double> even = {-2, -2, -0.0, -0.0, 0, 2, 2, 4, 0, 4503599627370497.0};
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(dtype);
    const size_t n = dtype == fx::f32 ? in.size() - 2 : in.size();  // the last two are f64 cases
    std::vector<double> v(in.begin(), in.begin() + static_cast<long>(n));
    const fx::Tensor x = fx::astype(fx::from_vector(v), dtype);
    const std::vector<double> a = fx::astype(lax::round(x), fx::f64).to_vector<double>();
    const std::vector<double> e =
        fx::astype(lax::round(x, lax::RoundingMethod::to_nearest_even), fx::f64).to_vector<double>();
    for (size_t i = 0; i < n; ++i) {
      CAPTURE(v[i]);
      CHECK(same_bits(a[i], away[i]));
      CHECK(same_bits(e[i], even[i]));
    }
  }
  // Its derivative is zero, its batching rule maps, its name is printed.
  auto f = [](const fx::Tensor& x) { return fx::sum(lax::round(x, lax::RoundingMethod::to_nearest_even) * x); };
  CHECK(fx::grad(f)(fx::from_vector(std::vector<double>{1.5, 2.5})).to_vector<double>() == std::vector<double>{2, 2});
  auto g = [](const fx::Tensor& x) { return lax::round(x, lax::RoundingMethod::to_nearest_even); };
  CHECK(fx::vmap(g)(fx::from_vector(std::vector<double>{0.5, 1.5, 2.5}, fx::Shape{3, 1})).to_vector<double>() ==
        std::vector<double>{0, 2, 2});
  std::ostringstream os;
  os << fx::make_jaxpr(g)(fx::zeros({2}));
  CHECK(os.str().find("round_nearest_even") != std::string::npos);
}

TEST_CASE("jit: a fused a*b + c gives eager's bits, no multiply-add contraction (overflowing products too)") {
  // Eager evaluation rounds a * b, then adds c; an FMA rounds once. With a * b overflowing and c
  // = -inf, eager gives NaN (inf - inf) where an FMA gives -inf; elsewhere the last bit differs.
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(dtype);
    const int64_t n = 4099;  // whole tiles and a remainder
    auto f = [](const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& c) { return a * b + c; };
    auto g = [](const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& c) { return c - a * b; };
    std::vector<double> va(n), vb(n), vc(n);
    for (int64_t i = 0; i < n; ++i) {
      va[i] = 1.0 + 0.001 * static_cast<double>(i % 97) / 3.0;
      vb[i] = 3.0 - 0.002 * static_cast<double>(i % 89) / 7.0;
      vc[i] = -1.0 - 0.0001 * static_cast<double>(i % 83);
    }
    const double big = dtype == fx::f32 ? 3e38 : 1.7e308;
    for (int64_t i : {int64_t(0), int64_t(5), int64_t(4098)}) va[i] = big, vb[i] = 2.0, vc[i] = -INFINITY;
    const fx::Tensor a = fx::astype(fx::from_vector(va), dtype), b = fx::astype(fx::from_vector(vb), dtype),
                     c = fx::astype(fx::from_vector(vc), dtype);
    for (auto fn : {+f, +g}) {
      const std::vector<double> eager = fx::astype(fn(a, b, c), fx::f64).to_vector<double>();
      const std::vector<double> jitted = fx::astype(fx::jit(fn)(a, b, c), fx::f64).to_vector<double>();
      int differ = 0;
      for (int64_t i = 0; i < n; ++i)
        differ += !(same_bits(jitted[i], eager[i]) || (std::isnan(jitted[i]) && std::isnan(eager[i])));
      CHECK(differ == 0);
    }
    CHECK(std::isnan(fx::astype(fx::jit(+f)(a, b, c), fx::f64).to_vector<double>()[5]));
  }
}

TEST_CASE("max, min: of +0 and -0 the first, in vector bodies, tails and single values alike") {
  // Eigen's max/min packets return the second of two equal operands, its scalar form the first:
  // max(+0, -0) was -0 in a vector body and +0 in the tail of the same array. The rule is numpy's
  // (and the reference backend's): the first.
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(dtype);
    const double pairs[][2] = {{0.0, -0.0}, {-0.0, 0.0}, {NAN, 1.0}, {1.0, NAN}, {-0.0, -0.0}};
    for (auto [x, y] : pairs) {
      CAPTURE(x);
      CAPTURE(y);
      for (auto op : {lax::max, lax::min}) {
        const fx::Tensor a = fx::full({19}, x, dtype), b = fx::full({19}, y, dtype);
        const std::vector<double> r = fx::astype(op(a, b), fx::f64).to_vector<double>();
        const double one = fx::astype(op(fx::full({}, x, dtype), fx::full({}, y, dtype)), fx::f64).item<double>();
        for (double v : r) CHECK((same_bits(v, one) || (std::isnan(v) && std::isnan(one))));
        if (x == 0 && y == 0) CHECK(same_bits(one, x));
      }
    }
  }
}

TEST_CASE("reduce_sum: a sum of -0s is -0 and an empty sum is +0, on the CPU, under jit and on the reference") {
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(dtype);
    const fx::Tensor zeros = fx::reshape(fx::astype(fx::from_vector(std::vector<double>(12, -0.0)), dtype), {3, 4});
    const fx::Tensor empty = fx::zeros({3, 0}, dtype);
    auto sums = [](const fx::Tensor& x) { return fx::sum(x, {1}); };
    const fx::Jaxpr j = fx::make_jaxpr(sums)(zeros);
    const fx::Jaxpr je = fx::make_jaxpr(sums)(empty);
    const fx::Tensor ref =
        fx::eval_primitive(*j.equations[0].primitive, {zeros}, *j.equations[0].params, fx::Backend::reference)[0];
    const fx::Tensor ref_empty =
        fx::eval_primitive(*je.equations[0].primitive, {empty}, *je.equations[0].params, fx::Backend::reference)[0];
    for (const fx::Tensor& r : {sums(zeros), fx::jit(sums)(zeros), ref}) {
      const std::vector<double> v = fx::astype(r, fx::f64).to_vector<double>();
      REQUIRE(v.size() == 3);
      for (double x : v) CHECK((x == 0.0 && std::signbit(x)));
    }
    for (const fx::Tensor& r : {sums(empty), fx::jit(sums)(empty), ref_empty}) {
      const std::vector<double> v = fx::astype(r, fx::f64).to_vector<double>();
      REQUIRE(v.size() == 3);
      for (double x : v) CHECK((x == 0.0 && !std::signbit(x)));
    }
  }
}
