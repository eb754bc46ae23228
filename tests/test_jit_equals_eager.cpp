// jit against eager evaluation, bit for bit (issue 36): every registry sample on its own inputs and
// on special values (±0, ±inf, NaN, subnormals, values near overflow, values that cancel), and
// chains of two to four elementwise operations, with broadcasts and reductions, on sizes that
// exercise vector bodies, scalar tails, register programs and groups split over threads, in f32
// and f64. Equal means equal bits, or NaN on both sides (NaN payloads and signs are not compared:
// x86 propagates an operand's NaN, whose sign a negation flips and a multiplication by -1 keeps).
//
// Sums are the one exception (README): a fused group's sums accumulate in double and eager sums
// in the operand's type, in another order, so a sum is compared within the error bound of
// summation instead, 2 n eps Σ|terms| (within_bound), its NaN and infinities exactly. So are the
// simplifier's product and sum rewrites (issue 28 defect 3), which may change only the order in
// which a product or sum accumulates the same terms: on values with large magnitudes whose
// differences cancel, and on special values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <tuple>

#include <fluxion/fluxion.hpp>

#include "samples.hpp"

namespace fx = fluxion;
namespace lax = fluxion::lax;
using fluxion::testing::random_tensor;
using Vec = std::vector<fx::Tensor>;

namespace {

/// "" when `got` and `want` have one aval and every element has equal bits or is NaN on both
/// sides; else the first difference.
std::string bit_difference(const fx::Tensor& got, const fx::Tensor& want) {
  std::ostringstream os;
  if (got.aval() != want.aval()) {
    os << "aval " << got.aval() << " != " << want.aval();
    return os.str();
  }
  const int64_t n = got.size();
  const size_t width = static_cast<size_t>(fx::dtype_size(got.dtype()));
  const auto* pg = static_cast<const unsigned char*>(got.array().data());
  const auto* pw = static_cast<const unsigned char*>(want.array().data());
  std::vector<double> gv, wv;
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(pg + i * width, pw + i * width, width) == 0) continue;
    if (gv.empty()) gv = got.to_vector<double>(), wv = want.to_vector<double>();
    const double a = gv[static_cast<size_t>(i)], b = wv[static_cast<size_t>(i)];
    if (std::isnan(a) && std::isnan(b)) continue;
    os.precision(17);
    os << "element " << i << " of " << n << ": jit " << a << (std::signbit(a) ? " (sign set)" : "") << ", eager " << b
       << (std::signbit(b) ? " (sign set)" : "");
    return os.str();
  }
  return "";
}

/// "" when every element of `got` is NaN where `want` is, equals it where it is infinite, and is
/// within 2 terms eps magnitude of it elsewhere: the error bound of a sum of `terms` terms whose
/// magnitudes sum to `magnitude`, which any order of summation keeps. Else the first element
/// that is not.
std::string within_bound(const fx::Tensor& got, const fx::Tensor& want, const fx::Tensor& magnitude, int64_t terms) {
  if (got.aval() != want.aval()) return "avals differ";
  const double eps =
      want.dtype() == fx::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>(),
                            m = magnitude.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double bound = 2.0 * static_cast<double>(terms) * eps * m[i];
    if ((std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i]) continue;
    if (std::isfinite(g[i]) && std::isfinite(w[i]) && std::fabs(g[i] - w[i]) <= bound) continue;
    std::ostringstream os;
    os.precision(17);
    os << "element " << i << ": jit " << g[i] << ", eager " << w[i] << " (bound " << bound << ")";
    return os.str();
  }
  return "";
}

/// Special values of a floating dtype, ordinary ones among them (so that a special meets an
/// ordinary value in binary operations): zeros of both signs, infinities, NaN, subnormals, the
/// smallest normal, values at and near overflow (their products or doubles overflow), values
/// whose differences cancel, and small integers and halves.
std::vector<double> special_values(fx::DType dt) {
  const bool f32 = dt == fx::f32;
  const double max = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  const double tiny = f32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
  const double normal = f32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  const double big = f32 ? 3e19 : 3e154;  // its square overflows
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0, -0.0, inf,      -inf,  std::nan(""), tiny, -3 * tiny, normal, max, -max, max / 2,
          big, -big, 1e12 + 1, -1e12, 1e8 + 1,      1.0,  -1.0,      0.5,    3.0, -2.5, 0.1};
}

/// A tensor of `shape` whose element i is special value number (i + 5 j + 3 (i / k) j) mod k for
/// input number j (k values): inputs 0 and 1 meet in every pair of values within k² elements.
fx::Tensor special_tensor(const fx::Shape& shape, fx::DType dt, int64_t j) {
  const std::vector<double> v = special_values(dt);
  const int64_t k = static_cast<int64_t>(v.size()), n = shape.num_elements();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = v[static_cast<size_t>((i + 5 * j + 3 * (i / k) * j) % k)];
  return fx::astype(fx::from_vector(out, shape), dt);
}

bool is_float(const fx::Tensor& t) { return fx::is_floating(t.dtype()); }

/// Inputs of a sample with each floating one replaced by special values.
Vec with_special_values(const Vec& inputs) {
  Vec out;
  for (size_t j = 0; j < inputs.size(); ++j)
    out.push_back(is_float(inputs[j]) ? special_tensor(inputs[j].shape(), inputs[j].dtype(), static_cast<int64_t>(j))
                                      : inputs[j]);
  return out;
}

/// jit's and eager's results of `f` on `inputs`, both, or an exception's message from either.
struct Outcome {
  Vec values;
  std::string error;
};
Outcome run(const std::function<Vec(const Vec&)>& f, const Vec& inputs) {
  try {
    return {f(inputs), ""};
  } catch (const std::exception& e) { return {{}, e.what()}; }
}

}  // namespace

TEST_CASE("jit equals eager: every registry sample, on its inputs and on special values, bit for bit") {
  int64_t compared = 0, with_specials = 0;
  for (const auto& [name, samples] : fx::testing::sample_registry()) {
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const fx::testing::Sample& s : fx::testing::on_test_device(samples.make(dt))) {
        CAPTURE(name);
        CAPTURE(s.label);
        for (bool specials : {false, true}) {
          CAPTURE(specials);
          const Vec inputs = specials ? with_special_values(s.inputs) : s.inputs;
          const Outcome want = run(s.fn, inputs);
          const Outcome got = run([&](const Vec& in) { return fx::jit(s.fn)(in); }, inputs);
          CHECK_MESSAGE(want.error.empty() == got.error.empty(), "eager: " << want.error << "; jit: " << got.error);
          if (!want.error.empty() || !got.error.empty()) continue;
          REQUIRE(got.values.size() == want.values.size());
          for (size_t k = 0; k < got.values.size(); ++k) {
            CAPTURE(k);
            const std::string diff = bit_difference(got.values[k], want.values[k]);
            CHECK_MESSAGE(diff.empty(), diff);
          }
          ++(specials ? with_specials : compared);
        }
      }
    }
  }
  MESSAGE("[jit equals eager] " << compared << " samples, " << with_specials << " on special values");
  CHECK(compared > 500);
}

// ---------------------------------------------------------------- chains of elementwise ops

namespace {

/// The operands a chain reads: x, y, z of the chain's [r, c] shape, a rank-0 s, a row vector of
/// c elements and a column vector of r elements (broadcast by the ops).
struct Operands {
  fx::Tensor x, y, z, s, row, col;
  Vec all() const { return {x, y, z, s, row, col}; }
};
Operands operands(const Vec& v) { return {v[0], v[1], v[2], v[3], v[4], v[5]}; }

struct Chain {
  const char* name;
  std::function<fx::Tensor(const Operands&)> f;
};

/// Two to four elementwise operations each, covering every rewrite of simplify_algebra.cpp that
/// applies to elementwise values and every register-program form (products feeding adds, subs
/// and negations; literal, rank-0 and broadcast operands; unary tile operations).
const std::vector<Chain>& chains() {
  using O = const Operands&;
  static const std::vector<Chain> c{
      {"x*y + z", [](O o) { return o.x * o.y + o.z; }},
      {"z - x*y", [](O o) { return o.z - o.x * o.y; }},
      {"x*y - z", [](O o) { return o.x * o.y - o.z; }},
      {"-(x*y)", [](O o) { return -(o.x * o.y); }},
      {"(x*2)*0.5", [](O o) { return (o.x * 2.0) * 0.5; }},
      {"(x*0.5)*2", [](O o) { return (o.x * 0.5) * 2.0; }},
      {"(x*0.5)*0.25", [](O o) { return (o.x * 0.5) * 0.25; }},
      {"(x*3)*2", [](O o) { return (o.x * 3.0) * 2.0; }},
      {"(x*2)*3", [](O o) { return (o.x * 2.0) * 3.0; }},
      {"(x*4)*-1.5", [](O o) { return (o.x * 4.0) * -1.5; }},
      {"x+0, 0+y", [](O o) { return (o.x + 0.0) * (0.0 + o.y); }},
      {"x-0, x+(-0), x-(-0)", [](O o) { return (o.x - 0.0) * (o.y + -0.0) - (o.z - -0.0); }},
      {"0-x, -0-x", [](O o) { return (0.0 - o.x) * (-0.0 - o.y); }},
      {"x*1 + y*-1", [](O o) { return o.x * 1.0 + o.y * -1.0; }},
      {"x*-1", [](O o) { return o.x * -1.0; }},
      {"x/1 - neg(neg y)", [](O o) { return o.x / 1.0 - -(-o.y); }},
      {"x + x", [](O o) { return (o.x + o.x) * o.y; }},
      {"x - x, x*0", [](O o) { return (o.x - o.x) + o.y * 0.0; }},
      {"x + neg y, neg x + y", [](O o) { return (o.x + -o.y) * (-o.x + o.z); }},
      {"x - neg y, x*neg y + z", [](O o) { return (o.x - -o.y) + o.x * -o.z; }},
      {"exp(-(x*x))*y", [](O o) { return fx::exp(-(o.x * o.x)) * o.y; }},
      {"tanh(x)*x + exp(-x*x)", [](O o) { return fx::tanh(o.x) * o.x + fx::exp(-(o.x * o.x)); }},
      {"sqrt(abs x) + y", [](O o) { return fx::sqrt(fx::abs(o.x)) + o.y; }},
      {"log(x*x + 1)*s", [](O o) { return fx::log(o.x * o.x + 1.0) * o.s; }},
      {"(x - y)/(x*y + 1.5)", [](O o) { return (o.x - o.y) / (o.x * o.y + 1.5); }},
      {"max(x, y) - min(y, z)", [](O o) { return fx::maximum(o.x, o.y) - fx::minimum(o.y, o.z); }},
      {"where(x > y, x - y, z*2)", [](O o) { return fx::where(o.x > o.y, o.x - o.y, o.z * 2.0); }},
      {"x*row + z", [](O o) { return o.x * o.row + o.z; }},
      {"(x - col)*y", [](O o) { return (o.x - fx::expand_dims(o.col, 1)) * o.y; }},
      {"row*s + x*col", [](O o) { return o.row * o.s + o.x * fx::expand_dims(o.col, 1); }},
      {"x/s - y*s", [](O o) { return o.x / o.s - o.y * o.s; }},
      {"x*y*z*s", [](O o) { return o.x * o.y * o.z * o.s; }},
      {"sigmoid(x)*y - z", [](O o) { return fx::sigmoid(o.x) * o.y - o.z; }},
      {"f32 <-> f64 conversions",
       [](O o) {
         const fx::DType other = o.x.dtype() == fx::f32 ? fx::f64 : fx::f32;
         return fx::astype(fx::astype(o.x, other) * fx::astype(o.y, other), o.x.dtype()) + o.z;
       }},
  };
  return c;
}

/// The chains' shapes: single elements, scalar tails and vector bodies (7, 16, 33 elements),
/// one block and one register tile (1000), and groups split over the threads (70000).
const std::vector<fx::Shape>& chain_shapes() {
  static const std::vector<fx::Shape> s{fx::Shape{1, 1},  fx::Shape{1, 7},   fx::Shape{16, 1},
                                        fx::Shape{3, 11}, fx::Shape{40, 25}, fx::Shape{70, 1000}};
  return s;
}

/// Operands of `shape` made of special values (rank 0: the value 0.75).
Operands special_operands(const fx::Shape& shape, fx::DType dt) {
  const int64_t r = shape[0], c = shape[1];
  return {special_tensor(shape, dt, 0), special_tensor(shape, dt, 1),        special_tensor(shape, dt, 2),
          fx::full({}, 0.75, dt),       special_tensor(fx::Shape{c}, dt, 3), special_tensor(fx::Shape{r}, dt, 4)};
}

/// Runs `check(threads)` on 1 thread, and on 2 too for shapes large enough to be split.
void on_threads(const fx::Shape& shape, const std::function<void(int)>& check) {
  const int before = fx::num_threads();
  for (int threads : {1, 2}) {
    if (threads > 1 && shape.num_elements() < (int64_t(1) << 16)) break;
    fx::set_num_threads(threads);
    check(threads);
  }
  fx::set_num_threads(before);
}

}  // namespace

TEST_CASE("jit equals eager: chains of elementwise ops on special values, every size, bit for bit") {
  int64_t compared = 0;
  for (fx::DType dt : {fx::f32, fx::f64}) {
    for (const fx::Shape& shape : chain_shapes()) {
      const Vec in = special_operands(shape, dt).all();
      for (const Chain& chain : chains()) {
        const std::string name = chain.name, dtype = fx::dtype_name(dt);
        CAPTURE(dtype);
        CAPTURE(shape);
        CAPTURE(name);
        auto f = [&](const Vec& v) { return chain.f(operands(v)); };
        const fx::Tensor want = f(in);
        on_threads(shape, [&](int threads) {
          CAPTURE(threads);
          const std::string diff = bit_difference(fx::jit(f)(in), want);
          CHECK_MESSAGE(diff.empty(), diff);
          ++compared;
        });
      }
    }
  }
  MESSAGE("[jit equals eager] " << compared << " chains");
}

TEST_CASE("jit equals eager: every unary primitive in a fused group, on special values, bit for bit") {
  // op(x) * ones: the product keeps op's bits and makes op a member of a fused group (blocks,
  // register programs for the ops with a tile form, groups split over threads).
  using Fn = fx::Tensor (*)(const fx::Tensor&);
  const std::vector<std::pair<const char*, Fn>> ops{
      {"exp", fx::lax::exp},   {"log", fx::lax::log},     {"log1p", fx::lax::log1p}, {"expm1", fx::lax::expm1},
      {"sqrt", fx::lax::sqrt}, {"rsqrt", fx::lax::rsqrt}, {"tanh", fx::lax::tanh},   {"logistic", fx::lax::logistic},
      {"sin", fx::lax::sin},   {"cos", fx::lax::cos},     {"tan", fx::lax::tan},     {"floor", fx::lax::floor},
      {"ceil", fx::lax::ceil}, {"round", fx::lax::round}, {"abs", fx::lax::abs},     {"sign", fx::lax::sign},
      {"neg", fx::lax::neg}};
  for (fx::DType dt : {fx::f32, fx::f64}) {
    for (const fx::Shape& shape : chain_shapes()) {
      const Vec in{special_tensor(shape, dt, 0), fx::ones(shape, dt)};
      for (const auto& [op_name, op] : ops) {
        const std::string name = op_name, dtype = fx::dtype_name(dt);
        CAPTURE(dtype);
        CAPTURE(shape);
        CAPTURE(name);
        auto f = [op = op](const Vec& v) { return op(v[0]) * v[1]; };
        const fx::Tensor want = f(in);
        on_threads(shape, [&](int threads) {
          CAPTURE(threads);
          const std::string diff = bit_difference(fx::jit(f)(in), want);
          CHECK_MESSAGE(diff.empty(), diff);
        });
      }
    }
  }
}

// ---------------------------------------------------------------- sums

namespace {

/// Operands for sums: values in [-2, 2) with zeros of both signs, subnormals, values near 1e8
/// that cancel, and one infinity and one NaN in the first rows (only those rows' sums are not
/// finite). No values near overflow: whether a sum overflows depends on its order.
Operands sum_operands(const fx::Shape& shape, fx::DType dt, uint64_t seed) {
  auto make = [&](const fx::Shape& sh, uint64_t k) {
    std::vector<double> v = random_tensor(sh, fx::f64, seed + k).to_vector<double>();
    const double tiny =
        dt == fx::f32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
    const double special[] = {0.0, -0.0, tiny, -tiny, 1e8 + 1, -1e8};
    for (size_t i = 0; i < v.size(); i += 3) v[i] = special[(i / 3 + k) % 6];
    if (v.size() > 40) v[7 + k] = k % 2 ? -INFINITY : INFINITY, v[29 + k] = std::nan("");
    return fx::astype(fx::from_vector(v, sh), dt);
  };
  return {make(shape, 0),
          make(shape, 1),
          make(shape, 2),
          fx::full({}, 0.75, dt),
          make(fx::Shape{shape[1]}, 3),
          make(fx::Shape{shape[0]}, 4)};
}

struct SumCase {
  const char* name;
  std::function<fx::Tensor(const Operands&)> terms;  // the summed values
  std::vector<int64_t> axes;
};

/// Sums whose operand a fused group computes: over all elements (register programs' sum
/// instruction), rows, columns; with a power-of-two factor moved past the sum and other factors
/// not.
const std::vector<SumCase>& sum_cases() {
  using O = const Operands&;
  static const std::vector<SumCase> c{
      {"sum(x*y)", [](O o) { return o.x * o.y; }, {0, 1}},
      {"row sums of -(x*y)", [](O o) { return -(o.x * o.y); }, {1}},
      {"column sums of x*4", [](O o) { return o.x * 4.0; }, {0}},
      {"sum(x*0.1)", [](O o) { return o.x * 0.1; }, {0, 1}},
      {"row sums of x*s", [](O o) { return o.x * o.s; }, {1}},
      {"sum((x - row)^2)", [](O o) { return (o.x - o.row) * (o.x - o.row); }, {0, 1}},
      {"column sums of exp(x) - y", [](O o) { return fx::exp(o.x) - o.y; }, {0}},
      {"row sums of x*y + z", [](O o) { return o.x * o.y + o.z; }, {1}},
  };
  return c;
}

}  // namespace

TEST_CASE("jit equals eager: fused sums within the summation error bound, the values they sum bit for bit") {
  // A fused group sums in double (eager: in the operand's type, in another order), so the sums
  // are compared within 2 n eps Σ|terms| and the summed values, also an output, bit for bit.
  for (fx::DType dt : {fx::f32, fx::f64}) {
    for (const fx::Shape& shape : chain_shapes()) {
      const Vec in = sum_operands(shape, dt, 60).all();
      for (const SumCase& sc : sum_cases()) {
        const std::string name = sc.name, dtype = fx::dtype_name(dt);
        CAPTURE(dtype);
        CAPTURE(shape);
        CAPTURE(name);
        auto sum_only = [&](const Vec& v) { return fx::sum(sc.terms(operands(v)), sc.axes); };
        auto both = [&](const Vec& v) {
          fx::Tensor t = sc.terms(operands(v));
          return std::make_tuple(t, fx::sum(t, sc.axes));
        };
        const fx::Tensor terms = sc.terms(operands(in)), want = fx::sum(terms, sc.axes);
        const fx::Tensor magnitude = fx::sum(fx::abs(fx::astype(terms, fx::f64)), sc.axes);
        int64_t count = 1;
        for (int64_t a : sc.axes) count *= shape[a];
        on_threads(shape, [&](int threads) {
          CAPTURE(threads);
          std::string diff = within_bound(fx::jit(sum_only)(in), want, magnitude, count);
          CHECK_MESSAGE(diff.empty(), diff);
          const auto [t, s] = fx::jit(both)(in);
          diff = bit_difference(t, terms);
          CHECK_MESSAGE(diff.empty(), "summed values: " << diff);
          diff = within_bound(s, want, magnitude, count);
          CHECK_MESSAGE(diff.empty(), diff);
        });
      }
      // Sums of -0 values are -0, as eager's (a sum starting from +0 would give +0).
      const std::string dtype = fx::dtype_name(dt);
      CAPTURE(dtype);
      CAPTURE(shape);
      const Vec zeros{fx::full(shape, -0.0, dt), fx::full(shape, 1.0, dt)};
      for (bool rows : {true, false}) {  // row sums run on blocks; a full sum by register programs
        auto f = [rows](const Vec& v) { return rows ? fx::sum(v[0] * v[1], {1}) : fx::sum(v[0] * v[1]); };
        const std::string diff = bit_difference(fx::jit(f)(zeros), f(zeros));
        CHECK_MESSAGE(diff.empty(), std::string(rows ? "row sums" : "sum") << " of -0 values: " << diff);
      }
    }
  }
}

// ---------------------------------------------------------------- product and sum rewrites

namespace {

/// Values center + u, |u| <= spread, on a grid of 1/16: their differences cancel.
fx::Tensor near(const fx::Shape& shape, fx::DType dt, uint64_t seed, double center, double spread) {
  std::vector<double> v = random_tensor(shape, fx::f64, seed).to_vector<double>();
  for (double& x : v) x = center + std::round(x * spread * 8) / 16;
  return fx::astype(fx::from_vector(v, shape), dt);
}

/// One rewrite's case: `f` on `args` under jit and eagerly; `magnitude` computes Σ|terms| of each
/// output element (from the same args), `terms` how many terms each sums.
struct Case {
  std::string name;
  std::function<fx::Tensor(const Vec&)> f;
  Vec args;
  std::function<fx::Tensor(const Vec&)> magnitude;
  int64_t terms;
};

void check(const Case& c) {
  CAPTURE(c.name);
  const fx::Tensor want = c.f(c.args);
  const fx::Tensor got = fx::jit(c.f)(c.args);
  const std::string diff = within_bound(got, want, c.magnitude(c.args), c.terms);
  CHECK_MESSAGE(diff.empty(), diff);
}

fx::Tensor abs64(const fx::Tensor& t) { return fx::abs(fx::astype(t, fx::f64)); }

}  // namespace

TEST_CASE(
    "jit equals eager, rewrites: a product of differences of broadcast values near 1e12 keeps eager's precision") {
  // Issue 28: dot(broadcast(a) - broadcast(b), W) was rewritten as a ⊗ sum(W) - broadcast(b·W),
  // two products of magnitude 1e12 |W| cancelling to the result (relative error 9e-3 at 1e12;
  // bench W8's centred points x_i - mu_k are such a difference).
  for (fx::DType dt : {fx::f32, fx::f64}) {
    for (double center : {1e8, 1e12}) {
      if (dt == fx::f32 && center > 1e8) continue;  // f32 differences near 1e12 are all zero
      const int64_t K = 4, n = 50, d = 6, m = 5;
      auto centred = [](const Vec& v) { return fx::expand_dims(v[0], 0) - fx::expand_dims(v[1], 1); };  // [K, n, d]
      Case c{"pairwise differences times W",
             [&](const Vec& v) { return fx::matmul(centred(v), v[2]); },
             {near({n, d}, dt, 1, center, 100), near({K, d}, dt, 2, center, 100), random_tensor({d, m}, dt, 3)},
             [&](const Vec& v) { return fx::matmul(abs64(centred(v)), abs64(v[2])); },
             d};
      CAPTURE(center);
      check(c);
      // Reduced afterwards as W8 does (a transpose of the product moves into the sum).
      c.name = "summed squares of pairwise differences times W";
      c.f = [&](const Vec& v) { return fx::sum(fx::square(fx::matmul(centred(v), v[2])), {2}); };
      c.magnitude = [&](const Vec& v) {
        const fx::Tensor p = fx::matmul(abs64(centred(v)), abs64(v[2]));
        return fx::sum(p * p, {2});
      };
      c.terms = 2 * d + m;
      check(c);
    }
  }
}

TEST_CASE(
    "jit equals eager, rewrites: a broadcast operand's constant contracted dim is summed out only for exact factors") {
  // dot(broadcast(v) along k, W) is v Σ_k W: for a constant v = +2^k that is Σ v W in another
  // order; for a runtime v it is not (v = inf with a zero in W: inf where eager is NaN), nor for
  // other constants (they round differently).
  const double inf = std::numeric_limits<double>::infinity();
  for (fx::DType dt : {fx::f32, fx::f64}) {
    const int64_t n = 5, k = 40, m = 3;
    const double big = dt == fx::f32 ? 1e30 : 1e300;
    std::vector<double> v{inf, -inf, big, 3.0, 0.0};
    fx::Tensor w = random_tensor({k, m}, dt, 5);
    w = fx::where(fx::abs(w) < 0.25, fx::zeros({k, m}, dt), w);  // zeros among non-zero terms
    auto spread = [](const fx::Tensor& x, int64_t kk) { return lax::broadcast_in_dim(x, {x.shape()[0], kk}, {0}); };
    check({"runtime factor",
           [&](const Vec& a) { return fx::matmul(spread(a[0], k), a[1]); },
           {fx::astype(fx::from_vector(v), dt), w},
           [&](const Vec& a) { return fx::matmul(spread(abs64(a[0]), k), abs64(a[1])); },
           k});
    for (double c : {1.0, 0.5, 4.0, 3.0}) {
      CAPTURE(c);
      check({"constant factor",
             [&](const Vec& a) {
               return fx::matmul(fx::full({n, k}, c, dt), a[0]);
             },
             {near({k, m}, dt, 6, 1e6, 1e6)},
             [&](const Vec& a) {
               return fx::matmul(fx::full({n, k}, std::fabs(c), fx::f64), abs64(a[0]));
             },
             k});
    }
  }
}

TEST_CASE("jit equals eager, rewrites: a sum over a product's free dims keeps eager's values, infinities and NaN") {
  // sum_n (A B)[n, j] was rewritten (sum_n A) B: for A's rows near 1e12 cancelling and for an
  // infinite B times a zero of A (eager NaN), it differs from eager.
  const double inf = std::numeric_limits<double>::infinity();
  for (fx::DType dt : {fx::f32, fx::f64}) {
    const int64_t n = 30, k = 4, m = 3;
    // Rows near ±1e12 (alternating signs): the sum over them cancels.
    std::vector<double> signs(static_cast<size_t>(n * k));
    for (size_t i = 0; i < signs.size(); ++i) signs[i] = (i / k) % 2 ? -1.0 : 1.0;
    const fx::Tensor a =
        near({n, k}, dt, 7, dt == fx::f32 ? 1e6 : 1e12, 100) * fx::astype(fx::from_vector(signs, fx::Shape{n, k}), dt);
    const fx::Tensor b = random_tensor({k, m}, dt, 8);
    auto f = [](const Vec& v) { return fx::sum(fx::matmul(v[0], v[1]), {0}); };
    auto magnitude = [](const Vec& v) { return fx::sum(fx::matmul(abs64(v[0]), abs64(v[1])), {0}); };
    check({"rows near ±1e12", f, {a, b}, magnitude, n * k});
    std::vector<double> bv = b.to_vector<double>();
    bv[0] = inf;
    std::vector<double> av = random_tensor({n, k}, fx::f64, 9).to_vector<double>();
    av[0] = 0.0;  // A[0, 0] B[0, 0] = 0 inf
    check({"an infinite B times a zero of A",
           f,
           {fx::astype(fx::from_vector(av, fx::Shape{n, k}), dt), fx::astype(fx::from_vector(bv, fx::Shape{k, m}), dt)},
           magnitude,
           n * k});
  }
}

TEST_CASE("jit equals eager, rewrites: a scaled sum keeps eager's values, infinities and NaN") {
  // sum(x * c) -> sum(x) * c only for c = +2^k: sum(x * 10) overflows term by term for x near
  // max / 4 (eager inf - inf = NaN), sum(x) * 10 does not; a negation stays before the sum (a sum
  // cancelling to +0 would be -0 after it).
  for (fx::DType dt : {fx::f32, fx::f64}) {
    const double big = (dt == fx::f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max()) / 4;
    const fx::Tensor x = fx::astype(fx::from_vector(std::vector<double>{big, -big, 1.0, -1.0, 2.5}), dt);
    for (double c : {10.0, 0.1, 4.0, 0.25, -2.0}) {
      CAPTURE(c);
      check({"sum(x * c)",
             [c](const Vec& v) { return fx::sum(v[0] * c); },
             {x},
             [c](const Vec& v) { return fx::sum(abs64(v[0]) * std::fabs(c)); },
             5});
    }
    const fx::Tensor cancel =
        fx::astype(fx::from_vector(std::vector<double>{1.0, -1.0, 0.0, -0.0}, fx::Shape{2, 2}), dt);
    auto f = [](const Vec& v) { return 1.0 / fx::sum(-v[0], {1}); };  // the sign of a zero sum, seen by 1/s
    const Vec in{cancel};
    const std::vector<double> got = fx::jit(f)(in).to_vector<double>(), want = f(in).to_vector<double>();
    CHECK(got == want);
  }
}

TEST_CASE("jit equals eager, rewrites: transposed, batched and symmetric products keep eager's precision") {
  // Rewrites that change only a product's accumulation order, on values near 1e8 that cancel:
  // transpose(A B) -> B^T A^T, a transpose absorbed by the product reading it, a batch dim of a
  // broadcast operand turned into a free dim, a transpose moved into a reduction, a product
  // computed by tiles, and x^T diag(s) x as a gram product.
  for (fx::DType dt : {fx::f32, fx::f64}) {
    const double center = dt == fx::f32 ? 1e4 : 1e8;
    const fx::Tensor a = near({6, 40}, dt, 10, 0, center), b = near({40, 5}, dt, 11, 0, center);
    check({"transpose of a product",
           [](const Vec& v) {
             return fx::transpose(fx::matmul(v[0], v[1]), {1, 0});
           },
           {a, b},
           [](const Vec& v) {
             return fx::transpose(fx::matmul(abs64(v[0]), abs64(v[1])), {1, 0});
           },
           40});
    check({"transposed operand",
           [](const Vec& v) {
             return fx::matmul(fx::transpose(v[0], {1, 0}), v[1]);
           },
           {fx::transpose(a, {1, 0}), b},
           [](const Vec& v) {
             return fx::matmul(fx::transpose(abs64(v[0]), {1, 0}), abs64(v[1]));
           },
           40});
    const fx::Tensor q = near({3, 40, 5}, dt, 12, 0, center);
    auto batched = [](const fx::Tensor& x, const fx::Tensor& y) {
      return lax::dot_general(lax::broadcast_in_dim(x, {3, 6, 40}, {1, 2}), y, {{2}, {1}}, {{0}, {0}});
    };
    check({"broadcast batch dim, summed",
           [&](const Vec& v) { return fx::sum(batched(v[0], v[1]), {1}); },
           {a, q},
           [&](const Vec& v) { return fx::sum(batched(abs64(v[0]), abs64(v[1])), {1}); },
           40 * 6});
    // A product of 1 MiB and more read by one fused group is computed tile by tile inside it.
    const fx::Tensor l = near({400, 24}, dt, 15, 0, center), r = near({24, 700}, dt, 16, 0, center);
    check({"a product computed by tiles",
           [](const Vec& v) { return fx::matmul(v[0], v[1]) * 2.0 - v[2]; },
           {l, r, fx::ones({400, 700}, dt)},
           [](const Vec& v) { return fx::matmul(abs64(v[0]), abs64(v[1])) * 2.0 + 1.0; },
           24});
    const int64_t n = 300, d = 40;
    const fx::Tensor x = near({n, d}, dt, 13, 0, center / 8), s = random_tensor({n}, dt, 14, 0.1, 1);
    auto xsx = [](const fx::Tensor& xx, const fx::Tensor& ss) {
      return fx::matmul(fx::transpose(xx, {1, 0}), xx * fx::expand_dims(ss, 1));
    };
    check({"x^T diag(s) x",
           [&](const Vec& v) { return xsx(v[0], v[1]); },
           {x, s},
           [&](const Vec& v) { return xsx(abs64(v[0]), abs64(v[1])); },
           n});
  }
}
