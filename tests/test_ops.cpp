// The numpy-style op layer: promotion, weak scalars, broadcasting, math, products, reductions,
// shapes and indexing, and every error path with its type and message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace fx = fluxion;
using doctest::Contains;
using fluxion::testing::jaxpr_text;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> dims(const fx::Tensor& t) { return t.shape().dims(); }


// Element-wise closeness for floating results.
bool close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) || std::isinf(got[i])) {
      if (got[i] != want[i]) return false;
    } else if (std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]))) {
      return false;
    }
  }
  return true;
}

const fx::DType kAll[] = {fx::boolean, fx::i32, fx::i64, fx::f32, fx::f64};
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// ---- promotion ----

TEST_CASE("ops: tensor-tensor promotion follows the lattice for every pair of dtypes") {
  for (fx::DType a : kAll) {
    for (fx::DType b : kAll) {
      CAPTURE(a);
      CAPTURE(b);
      fx::DType want = a > b ? a : b;
      fx::Tensor x = fx::ones({2}, a), y = fx::ones({2}, b);
      CHECK(fx::result_type(x, y) == want);
      fx::Tensor s = x + y;
      CHECK(s.dtype() == want);
      CHECK(vals(s) == std::vector<double>(2, want == fx::boolean ? 1.0 : 2.0));
      CHECK((x * y).dtype() == want);
      CHECK((x < y).dtype() == fx::boolean);
      CHECK(fx::maximum(x, y).dtype() == want);
    }
  }
}

TEST_CASE("ops: weak scalar promotion for every tensor dtype") {
  for (fx::DType d : kAll) {
    CAPTURE(d);
    fx::Tensor x = fx::ones({2}, d);
    fx::DType with_int = d == fx::boolean ? fx::i32 : d;
    fx::DType with_float = fx::is_floating(d) ? d : fx::f64;
    CHECK(fx::result_type(x, 2) == with_int);
    CHECK(fx::result_type(x, 2.0) == with_float);
    CHECK(fx::result_type(x, 2.0f) == with_float);
    CHECK((x + 2).dtype() == with_int);
    CHECK((x * 2.0).dtype() == with_float);
    CHECK(vals(x + 2) == std::vector<double>{3, 3});
  }
}

TEST_CASE("ops: a weak double scalar keeps an f32 tensor f32") {
  fx::Tensor x = fx::tensor({1.f, 2.f});
  CHECK((x * 2.0).dtype() == fx::f32);
  CHECK((2.0 * x).dtype() == fx::f32);
  CHECK((x + 1).dtype() == fx::f32);
  CHECK(vals(x * 2.5) == std::vector<double>{2.5, 5.0});
  CHECK(fx::result_type(x, 2.0) == fx::f32);
}

TEST_CASE("ops: a float scalar with an integer or bool tensor gives f64") {
  fx::Tensor i = fx::tensor({1, 2});
  fx::Tensor b = fx::tensor({true, false});
  CHECK((i * 0.5).dtype() == fx::f64);
  CHECK(vals(i * 0.5) == std::vector<double>{0.5, 1.0});
  CHECK((b + 0.5).dtype() == fx::f64);
  CHECK(vals(b + 0.5) == std::vector<double>{1.5, 0.5});
  CHECK(fx::result_type(fx::tensor({int64_t{1}}), 1.5) == fx::f64);
}

TEST_CASE("ops: an integer scalar keeps integer tensors and makes bool tensors i32") {
  CHECK((fx::tensor({1, 2}) + 3).dtype() == fx::i32);
  CHECK((fx::tensor({int64_t{1}}) + 3).dtype() == fx::i64);
  fx::Tensor b = fx::tensor({true, false}) + 1;
  CHECK(b.dtype() == fx::i32);
  CHECK(vals(b) == std::vector<double>{2, 1});
  CHECK((fx::tensor({1.0}) + 3).dtype() == fx::f64);
}

TEST_CASE("ops: scalars on the left keep their operand order") {
  fx::Tensor x = fx::tensor({1.f, 4.f});
  CHECK(vals(10.0 - x) == std::vector<double>{9, 6});
  CHECK(vals(8.0 / x) == std::vector<double>{8, 2});
  CHECK(vals(3 * x) == std::vector<double>{3, 12});
  CHECK(vals(1 + x) == std::vector<double>{2, 5});
  CHECK(vals(2.0 < x) == std::vector<double>{0, 1});
  CHECK(vals(1.0 >= x) == std::vector<double>{1, 0});
}

TEST_CASE("ops: an integer scalar too large for an i32 tensor is a DTypeError") {
  fx::Tensor x = fx::tensor({1, 2});
  int64_t big = int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(x + big, Contains("[add] the integer 1099511627776 does not fit in i32"), fx::DTypeError);
  CHECK((fx::astype(x, fx::i64) + big).dtype() == fx::i64);
}

TEST_CASE("ops: dividing integers gives f64") {
  fx::Tensor q = fx::tensor({1, 3}) / fx::tensor({2, 2});
  CHECK(q.dtype() == fx::f64);
  CHECK(vals(q) == std::vector<double>{0.5, 1.5});
  CHECK((fx::tensor({1, 3}) / 2).dtype() == fx::f64);
  CHECK((fx::tensor({1.f}) / 2).dtype() == fx::f32);
}

TEST_CASE("ops: bool arithmetic is logical where numpy allows it and a DTypeError where not") {
  fx::Tensor a = fx::tensor({true, true, false}), b = fx::tensor({true, false, false});
  CHECK(vals(a + b) == std::vector<double>{1, 1, 0});
  CHECK(vals(a * b) == std::vector<double>{1, 0, 0});
  CHECK((a * b).dtype() == fx::boolean);
  CHECK(vals(fx::maximum(a, b)) == std::vector<double>{1, 1, 0});
  CHECK(vals(fx::minimum(a, b)) == std::vector<double>{1, 0, 0});
  CHECK_THROWS_WITH_AS(a - b, Contains("[subtract] is not defined for bool operands"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(-a, Contains("[negative] cannot negate bool[3]"), fx::DTypeError);
  CHECK(vals(a < b) == std::vector<double>{0, 0, 0});
  CHECK(vals(a > b) == std::vector<double>{0, 1, 0});
}

// ---- broadcasting ----

TEST_CASE("ops: a column plus a row broadcasts to a matrix") {
  fx::Tensor col = fx::from_vector(std::vector<double>{1, 2, 3}, {3, 1});
  fx::Tensor row = fx::tensor({10.0, 20.0, 30.0, 40.0});
  fx::Tensor s = col + row;
  CHECK(dims(s) == std::vector<int64_t>{3, 4});
  CHECK(vals(s) == std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
}

TEST_CASE("ops: a matrix times a vector broadcasts over rows") {
  fx::Tensor m = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  fx::Tensor v = fx::tensor({1.0, 10.0, 100.0});
  CHECK(vals(m * v) == std::vector<double>{1, 20, 300, 4, 50, 600});
  CHECK(vals(v - m) == std::vector<double>{0, 8, 97, -3, 5, 94});
}

TEST_CASE("ops: rank-0 tensors combine with any shape") {
  fx::Tensor s = fx::scalar(2.0f);
  fx::Tensor x = fx::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK(dims(s * x) == std::vector<int64_t>{2, 2});
  CHECK(vals(x / s) == std::vector<double>{0.5, 1, 1.5, 2});
  CHECK(dims(s + s) == std::vector<int64_t>{});
}

TEST_CASE("ops: size-1 dims on both sides broadcast against each other") {
  fx::Tensor a = fx::from_vector(std::vector<double>{1, 2}, {1, 2, 1});
  fx::Tensor b = fx::from_vector(std::vector<double>{10, 20, 30}, {3, 1, 1, 1});
  fx::Tensor s = a + b;
  CHECK(dims(s) == std::vector<int64_t>{3, 1, 2, 1});
  CHECK(vals(s) == std::vector<double>{11, 12, 21, 22, 31, 32});
}

TEST_CASE("ops: shapes that do not broadcast name both operands") {
  fx::Tensor a = fx::ones({3, 4}, fx::f32), b = fx::ones({5}, fx::f32);
  CHECK_THROWS_WITH_AS(a + b, Contains("[add] shapes f32[3,4] and f32[5] do not broadcast."), fx::ShapeError);
  CHECK_THROWS_WITH_AS(a * b, Contains("[multiply] shapes f32[3,4] and f32[5]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(static_cast<void>(a < b), Contains("[less] shapes"), fx::ShapeError);
}

TEST_CASE("ops: broadcast_shapes and broadcast_to follow numpy") {
  CHECK(fx::broadcast_shapes("add", {3, 1}, {4}) == std::vector<int64_t>{3, 4});
  CHECK(fx::broadcast_shapes("add", {}, {2, 0}) == std::vector<int64_t>{2, 0});
  CHECK_THROWS_WITH_AS(fx::broadcast_shapes("myop", {3}, {4}), Contains("[myop] shapes [3] and [4] do not broadcast"),
                       fx::ShapeError);
  fx::Tensor b = fx::broadcast_to(fx::tensor({1.0, 2.0}), {3, 2});
  CHECK(vals(b) == std::vector<double>{1, 2, 1, 2, 1, 2});
  CHECK_THROWS_WITH_AS(fx::broadcast_to(fx::tensor({1.0, 2.0}), {3}),
                       Contains("[broadcast_to] cannot broadcast f64[2] to shape [3]"), fx::ShapeError);
  CHECK_THROWS_AS(fx::broadcast_to(fx::ones({2, 2}), {2}), fx::ShapeError);
}

TEST_CASE("ops: x * 2.0 stages as one mul with an f32 literal and no broadcast") {
  auto f = [](const fx::Tensor& x) { return x * 2.0; };
  CHECK(jaxpr_text(f, fx::ones({3}, fx::f32)) ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = mul a 2.0:f32[]\n"
        "  in (b,) }");
}

TEST_CASE("ops: promotion and broadcasting stage as explicit convert and broadcast_in_dim") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return x * y; };
  std::string t = jaxpr_text(f, fx::ones({3}, fx::i32), fx::ones({2, 1}, fx::f32));
  CHECK(t.find("convert_element_type[new_dtype=f32] a") != std::string::npos);
  CHECK(t.find("broadcast_in_dim") != std::string::npos);
  CHECK(t.find("mul") != std::string::npos);
  // Equal shapes and dtypes need nothing but the primitive.
  std::string plain = jaxpr_text(f, fx::ones({2}, fx::f64), fx::ones({2}, fx::f64));
  CHECK(plain == "{ lambda ; a:f64[2] b:f64[2]. let\n    c:f64[2] = mul a b\n  in (c,) }");
  // An int tensor with a float scalar converts the tensor, and the literal is f64.
  auto g = [](const fx::Tensor& x) { return x * 2.5; };
  std::string t2 = jaxpr_text(g, fx::ones({2}, fx::i32));
  CHECK(t2.find("mul b 2.5:f64[]") != std::string::npos);
}

// ---- comparisons, logic, where ----

TEST_CASE("ops: comparisons return bool and promote their operands") {
  fx::Tensor i = fx::tensor({1, 2, 3});
  fx::Tensor c = i < 2.5;
  CHECK(c.dtype() == fx::boolean);
  CHECK(vals(c) == std::vector<double>{1, 1, 0});
  CHECK(vals(i == fx::tensor({1.0, 0.0, 3.0})) == std::vector<double>{1, 0, 1});
  CHECK(vals(i != 2) == std::vector<double>{1, 0, 1});
  CHECK(vals(i >= fx::scalar(2)) == std::vector<double>{0, 1, 1});
  CHECK(vals(i <= 2) == std::vector<double>{1, 1, 0});
  CHECK(vals(i > 1) == std::vector<double>{0, 1, 1});
}

TEST_CASE("ops: logical ops treat nonzero as true") {
  fx::Tensor a = fx::tensor({0, 1, 2}), b = fx::tensor({1.0, 0.0, 3.0});
  fx::Tensor land = a && b;
  CHECK(land.dtype() == fx::boolean);
  CHECK(vals(land) == std::vector<double>{0, 0, 1});
  CHECK(vals(a || b) == std::vector<double>{1, 1, 1});
  CHECK(vals(!a) == std::vector<double>{1, 0, 0});
  CHECK(vals(fx::logical_not(fx::tensor({true, false}))) == std::vector<double>{0, 1});
}

TEST_CASE("ops: where broadcasts the condition and both branches") {
  fx::Tensor cond = fx::from_vector(std::vector<bool>{true, false}, {2, 1});
  fx::Tensor a = fx::tensor({1.f, 2.f, 3.f});
  fx::Tensor w = fx::where(cond, a, 0.0);
  CHECK(w.dtype() == fx::f32);
  CHECK(dims(w) == std::vector<int64_t>{2, 3});
  CHECK(vals(w) == std::vector<double>{1, 2, 3, 0, 0, 0});
  fx::Tensor v = fx::where(fx::tensor({true, false}), fx::tensor({1, 2}), fx::tensor({0.5, 0.5}));
  CHECK(v.dtype() == fx::f64);
  CHECK(vals(v) == std::vector<double>{1, 0.5});
  CHECK(vals(fx::where(fx::tensor({false, true}), 1, fx::tensor({7, 8}))) == std::vector<double>{7, 1});
  fx::Tensor both = fx::where(fx::tensor({true, false}), 1, 2);
  CHECK(both.dtype() == fx::i32);
  CHECK(vals(both) == std::vector<double>{1, 2});
  CHECK(fx::where(fx::tensor({true}), 1, 2.5).dtype() == fx::f64);
  CHECK(vals(fx::where(fx::scalar(true), a, 9.0)) == std::vector<double>{1, 2, 3});
}

TEST_CASE("ops: where needs a bool condition and broadcastable shapes") {
  CHECK_THROWS_WITH_AS(fx::where(fx::tensor({1, 0}), fx::tensor({1.0, 2.0}), 0.0),
                       Contains("[where] the condition must be bool, got i32[2]"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::where(fx::tensor({true, false}), fx::ones({3}), fx::ones({4})),
                       Contains("[where] shapes bool[2], f64[3] and f64[4] do not broadcast"), fx::ShapeError);
}

// ---- elementwise math ----

TEST_CASE("ops: float functions convert integer and bool inputs to f64") {
  fx::Tensor i = fx::tensor({0, 4});
  CHECK(fx::sqrt(i).dtype() == fx::f64);
  CHECK(vals(fx::sqrt(i)) == std::vector<double>{0, 2});
  CHECK(vals(fx::exp(fx::tensor({0}))) == std::vector<double>{1});
  CHECK(vals(fx::sigmoid(fx::tensor({0}))) == std::vector<double>{0.5});
  CHECK(fx::sin(fx::tensor({true})).dtype() == fx::f64);
  CHECK(fx::tanh(fx::tensor({1.f})).dtype() == fx::f32);
  CHECK(close(vals(fx::log(fx::tensor({1.0, std::exp(2.0)}))), {0, 2}));
  CHECK(close(vals(fx::log1p(fx::tensor({0.0}))), {0}));
  CHECK(close(vals(fx::expm1(fx::tensor({0.0}))), {0}));
  CHECK(close(vals(fx::rsqrt(fx::tensor({4}))), {0.5}));
  CHECK(close(vals(fx::cos(fx::tensor({0}))), {1}));
  CHECK(close(vals(fx::tan(fx::tensor({0.0}))), {0}));
  CHECK(close(vals(fx::atan2(fx::tensor({1}), fx::tensor({1}))), {std::atan(1.0)}));
  CHECK(fx::atan2(fx::tensor({1}), fx::tensor({1})).dtype() == fx::f64);
}

TEST_CASE("ops: abs, sign, floor, ceil and round keep integer dtypes") {
  fx::Tensor i = fx::tensor({-3, 0, 2});
  CHECK(fx::abs(i).dtype() == fx::i32);
  CHECK(vals(fx::abs(i)) == std::vector<double>{3, 0, 2});
  CHECK(vals(fx::sign(i)) == std::vector<double>{-1, 0, 1});
  CHECK(fx::floor(i).dtype() == fx::i32);
  CHECK(vals(fx::ceil(i)) == std::vector<double>{-3, 0, 2});
  fx::Tensor f = fx::tensor({-1.5, 0.5, 2.5});
  CHECK(vals(fx::floor(f)) == std::vector<double>{-2, 0, 2});
  CHECK(vals(fx::ceil(f)) == std::vector<double>{-1, 1, 3});
  // Halfway cases (half to even) are in test_conventions.cpp.
  CHECK(vals(fx::round(fx::tensor({-1.6, 0.4, 2.7}))) == std::vector<double>{-2, 0, 3});
  CHECK(vals(fx::abs(fx::tensor({true, false}))) == std::vector<double>{1, 0});
  CHECK(vals(-fx::tensor({1, -2})) == std::vector<double>{-1, 2});
}

TEST_CASE("ops: pow keeps a float tensor's dtype and raises integers exactly") {
  fx::Tensor x = fx::tensor({2.f, 3.f});
  CHECK(fx::pow(x, 2).dtype() == fx::f32);
  CHECK(fx::pow(x, 0.5).dtype() == fx::f32);
  CHECK(vals(fx::pow(x, 2)) == std::vector<double>{4, 9});
  fx::Tensor i = fx::pow(fx::tensor({3, 2}), fx::tensor({4, 10}));
  CHECK(i.dtype() == fx::i32);
  CHECK(vals(i) == std::vector<double>{81, 1024});
  CHECK(vals(fx::pow(2.0, fx::tensor({1.0, 3.0}))) == std::vector<double>{2, 8});
  CHECK(fx::pow(fx::tensor({2}), 0.5).dtype() == fx::f64);
  fx::Tensor m = fx::pow(fx::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2}), fx::tensor({1.0, 2.0}));
  CHECK(vals(m) == std::vector<double>{1, 4, 3, 16});
}

TEST_CASE("ops: square, clip, maximum, minimum and remainder") {
  fx::Tensor x = fx::tensor({-2.f, 0.5f, 3.f});
  CHECK(vals(fx::square(x)) == std::vector<double>{4, 0.25, 9});
  fx::Tensor c = fx::clip(x, -1.0, 1.0);
  CHECK(c.dtype() == fx::f32);
  CHECK(vals(c) == std::vector<double>{-1, 0.5, 1});
  CHECK(vals(fx::clip(x, fx::tensor({0.f}), fx::tensor({2.f, 2.f, 2.f}))) == std::vector<double>{0, 0.5, 2});
  CHECK(vals(fx::maximum(x, 0)) == std::vector<double>{0, 0.5, 3});
  CHECK(vals(fx::minimum(x, 0)) == std::vector<double>{-2, 0, 0});
  CHECK(vals(fx::remainder(fx::tensor({7, -7}), fx::tensor({3}))) == std::vector<double>{1, 2});  // floored
  CHECK(vals(fx::remainder(fx::tensor({5.5}), fx::tensor({2.0}))) == std::vector<double>{1.5});
}

TEST_CASE("ops: stop_gradient and astype pass values through") {
  fx::Tensor x = fx::tensor({1.5, -2.0});
  CHECK(vals(fx::stop_gradient(x)) == vals(x));
  fx::Tensor i = fx::astype(x, fx::i32);
  CHECK(i.dtype() == fx::i32);
  CHECK(vals(i) == std::vector<double>{1, -2});
  CHECK(fx::astype(x, fx::f64).impl() == x.impl());
}

// ---- products ----

TEST_CASE("ops: matmul follows numpy for 1-d, 2-d and batched operands") {
  fx::Tensor v3 = fx::ones({3}), m23 = fx::ones({2, 3}), m34 = fx::ones({3, 4});
  CHECK(dims(fx::matmul(v3, v3)) == std::vector<int64_t>{});
  CHECK(vals(fx::matmul(v3, v3)) == std::vector<double>{3});
  CHECK(dims(fx::matmul(m23, v3)) == std::vector<int64_t>{2});
  CHECK(dims(fx::matmul(v3, m34)) == std::vector<int64_t>{4});
  CHECK(dims(fx::matmul(m23, m34)) == std::vector<int64_t>{2, 4});
  CHECK(dims(fx::matmul(fx::ones({5, 2, 3}), m34)) == std::vector<int64_t>{5, 2, 4});
  CHECK(dims(fx::matmul(m23, fx::ones({5, 3, 4}))) == std::vector<int64_t>{5, 2, 4});
  CHECK(dims(fx::matmul(v3, fx::ones({5, 3, 4}))) == std::vector<int64_t>{5, 4});
  CHECK(dims(fx::matmul(fx::ones({5, 2, 3}), v3)) == std::vector<int64_t>{5, 2});
}

TEST_CASE("ops: matmul broadcasts batch dimensions") {
  fx::Tensor a = fx::ones({5, 1, 2, 3}), b = fx::ones({4, 3, 2});
  fx::Tensor c = fx::matmul(a, b);
  CHECK(dims(c) == std::vector<int64_t>{5, 4, 2, 2});
  CHECK(vals(c) == std::vector<double>(80, 3.0));
}

TEST_CASE("ops: matmul computes the right values") {
  fx::Tensor a = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  fx::Tensor b = fx::from_vector(std::vector<double>{1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(vals(fx::matmul(a, b)) == std::vector<double>{4, 5, 10, 11});
  CHECK(vals(fx::matmul(a, fx::tensor({1.0, 1.0, 1.0}))) == std::vector<double>{6, 15});
  CHECK(vals(fx::matmul(fx::tensor({1.0, 1.0}), a)) == std::vector<double>{5, 7, 9});
  // Batched: the second batch multiplies by 2.
  fx::Tensor ab = fx::stack({a, a * 2.0});
  fx::Tensor bb = fx::stack({b, b});
  CHECK(vals(fx::matmul(ab, bb)) == std::vector<double>{4, 5, 10, 11, 8, 10, 20, 22});
  // Mixed dtypes promote.
  fx::Tensor mixed = fx::matmul(fx::astype(a, fx::f32), fx::astype(b, fx::i32));
  CHECK(mixed.dtype() == fx::f32);
  CHECK(vals(mixed) == std::vector<double>{4, 5, 10, 11});
}

TEST_CASE("ops: matmul errors name both operands") {
  CHECK_THROWS_WITH_AS(fx::matmul(fx::ones({2, 3}, fx::f32), fx::ones({4, 5}, fx::f32)),
                       Contains("[matmul] cannot contract f32[2,3] with f32[4,5]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::matmul(fx::ones({2, 3}), fx::ones({4})), Contains("the only dimension"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::matmul(fx::ones({2, 2, 3}), fx::ones({3, 3, 4})),
                       Contains("[matmul] batch dimensions [2] of f64[2,2,3] and [3] of f64[3,3,4] do not broadcast"),
                       fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::matmul(fx::scalar(1.0), fx::ones({2})), Contains("[matmul] operands must be at least 1-d"),
                       fx::ShapeError);
}

TEST_CASE("ops: dot follows numpy dot") {
  fx::Tensor a = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals(fx::dot(fx::tensor({1.0, 2.0}), fx::tensor({3.0, 4.0}))) == std::vector<double>{11});
  CHECK(vals(fx::dot(a, fx::tensor({1.0, 0.0, 1.0}))) == std::vector<double>{4, 10});
  CHECK(dims(fx::dot(fx::ones({2, 3, 4}), fx::ones({5, 4, 6}))) == std::vector<int64_t>{2, 3, 5, 6});
  CHECK(vals(fx::dot(fx::scalar(2.0), a)) == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK_THROWS_WITH_AS(fx::dot(fx::ones({2, 3}), fx::ones({2, 3})), Contains("[dot] cannot contract f64[2,3] with f64[2,3]"),
                       fx::ShapeError);
}

TEST_CASE("ops: outer multiplies the flattened operands") {
  fx::Tensor o = fx::outer(fx::tensor({1, 2}), fx::from_vector(std::vector<float>{1, 10, 100, 1000}, {2, 2}));
  CHECK(o.dtype() == fx::f32);
  CHECK(dims(o) == std::vector<int64_t>{2, 4});
  CHECK(vals(o) == std::vector<double>{1, 10, 100, 1000, 2, 20, 200, 2000});
}

// ---- reductions ----

TEST_CASE("ops: sum over negative axes with and without keepdims") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals(fx::sum(x)) == std::vector<double>{21});
  CHECK(dims(fx::sum(x)) == std::vector<int64_t>{});
  CHECK(vals(fx::sum(x, {-1})) == std::vector<double>{6, 15});
  CHECK(vals(fx::sum(x, {0})) == std::vector<double>{5, 7, 9});
  fx::Tensor k = fx::sum(x, {-1}, true);
  CHECK(dims(k) == std::vector<int64_t>{2, 1});
  CHECK(vals(k) == std::vector<double>{6, 15});
  CHECK(dims(fx::sum(x, {}, true)) == std::vector<int64_t>{1, 1});
  CHECK(dims(fx::sum(fx::ones({2, 3, 4}), {-1, 0})) == std::vector<int64_t>{3});
  CHECK(vals(fx::sum(fx::scalar(4.0))) == std::vector<double>{4});
}

TEST_CASE("ops: sum of bool counts true values as i32") {
  fx::Tensor s = fx::sum(fx::tensor({true, false, true}));
  CHECK(s.dtype() == fx::i32);
  CHECK(vals(s) == std::vector<double>{2});
}

TEST_CASE("ops: prod, max and min reduce over the given axes") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1, 5, 3, 4, 2, 6}, {2, 3});
  CHECK(vals(fx::prod(x)) == std::vector<double>{720});
  CHECK(vals(fx::prod(x, {1})) == std::vector<double>{15, 48});
  CHECK(vals(fx::max(x, {0})) == std::vector<double>{4, 5, 6});
  CHECK(vals(fx::min(x, {-1}, true)) == std::vector<double>{1, 2});
  CHECK(dims(fx::min(x, {-1}, true)) == std::vector<int64_t>{2, 1});
  CHECK(vals(fx::max(fx::tensor({3, 9, 1}))) == std::vector<double>{9});
}

TEST_CASE("ops: sums, products and extrema over a leading or middle axis, narrow and wide rows") {
  // [outer, n, inner] reduced over n: the kernel picks Eigen's column reduction (inner < 8), a
  // plain per-column loop (8..31) or chunked row accumulation (>= 32).
  for (int64_t inner : {int64_t(3), int64_t(8), int64_t(10), int64_t(17), int64_t(31), int64_t(40)}) {
    for (fx::DType dtype : {fx::f64, fx::f32, fx::i32}) {
      CAPTURE(inner);
      CAPTURE(dtype);
      const int64_t outer = 3, n = 50;
      std::vector<double> v(static_cast<size_t>(outer * n * inner));
      for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 37) % 11) - 5 + (i % 3 == 0 ? 0.5 : 1.0);
      if (dtype == fx::i32)
        for (double& e : v) e = std::floor(e);
      // Factors for the product: +-1, and 2 or 0.5 in floating types (exact in f32).
      std::vector<double> w(v.size());
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = (i * 7) % 3 == 0 ? -1.0 : dtype == fx::i32 || i % 5 < 2 ? 1.0 : i % 5 == 2 ? 2.0 : 0.5;
      fx::Tensor x = fx::astype(fx::from_vector(v, {outer, n, inner}), dtype);
      fx::Tensor f = fx::astype(fx::from_vector(w, {outer, n, inner}), dtype);
      const std::vector<fx::Tensor> got = {fx::sum(x, {1}), fx::max(x, {1}), fx::min(x, {1}), fx::prod(f, {1})};
      for (int k = 0; k < 4; ++k) {
        std::vector<double> g = fx::astype(got[static_cast<size_t>(k)], fx::f64).to_vector<double>();
        REQUIRE(g.size() == static_cast<size_t>(outer * inner));
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t c = 0; c < inner; ++c) {
            double want = k == 0 ? 0 : k == 1 ? -1e300 : k == 2 ? 1e300 : 1;
            for (int64_t r = 0; r < n; ++r) {
              const size_t at = static_cast<size_t>((o * n + r) * inner + c);
              const double e = v[at];
              want = k == 0 ? want + e : k == 1 ? std::max(want, e) : k == 2 ? std::min(want, e) : want * w[at];
            }
            const double at = g[static_cast<size_t>(o * inner + c)];
            CHECK_MESSAGE(std::abs(at - want) <= 1e-4 * (1 + std::abs(want)),
                          "reduction " << k << " at (" << o << ", " << c << "): got " << at << ", want " << want);
          }
      }
    }
  }
}

TEST_CASE("ops: max and min reject bool and empty axes") {
  CHECK_THROWS_WITH_AS(fx::max(fx::tensor({true})), Contains("[max] does not take bool tensors"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::min(fx::tensor({true})), Contains("[min] does not take bool tensors"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::max(fx::zeros({2, 0}), {1}), Contains("[max] axis 1 of f64[2,0] is empty"), fx::ShapeError);
}

TEST_CASE("ops: reduction axes out of range or repeated are AxisErrors") {
  fx::Tensor x = fx::ones({2, 3});
  CHECK_THROWS_WITH_AS(fx::sum(x, {2}), Contains("[sum] axis 2 is out of range for rank 2"), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::sum(x, {1, -1}), Contains("[sum] axis -1 is repeated"), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::mean(x, {-3}), Contains("[mean] axis -3"), fx::AxisError);
  CHECK_THROWS_AS(fx::sum(fx::scalar(1.0), {0}), fx::AxisError);
}

TEST_CASE("ops: mean of integers is f64 and mean of f32 stays f32") {
  fx::Tensor m = fx::mean(fx::tensor({1, 2, 3, 4}));
  CHECK(m.dtype() == fx::f64);
  CHECK(vals(m) == std::vector<double>{2.5});
  fx::Tensor x = fx::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  fx::Tensor r = fx::mean(x, {-1}, true);
  CHECK(r.dtype() == fx::f32);
  CHECK(dims(r) == std::vector<int64_t>{2, 1});
  CHECK(vals(r) == std::vector<double>{2, 5});
  CHECK(vals(fx::mean(x, {0})) == std::vector<double>{2.5, 3.5, 4.5});
}

TEST_CASE("ops: argmax and argmin over the flattened tensor and along an axis") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1, 9, 3, 7, 2, 8}, {2, 3});
  fx::Tensor a = fx::argmax(x);
  CHECK(a.dtype() == fx::i32);
  CHECK(dims(a) == std::vector<int64_t>{});
  CHECK(vals(a) == std::vector<double>{1});
  CHECK(vals(fx::argmin(x)) == std::vector<double>{0});
  CHECK(vals(fx::argmax(x, 0)) == std::vector<double>{1, 0, 1});
  CHECK(vals(fx::argmax(x, -1)) == std::vector<double>{1, 2});
  CHECK(vals(fx::argmin(x, 1)) == std::vector<double>{0, 1});
  CHECK(dims(fx::argmax(x, 1, true)) == std::vector<int64_t>{2, 1});
  CHECK(vals(fx::argmax(fx::tensor({false, true, true}))) == std::vector<double>{1});
  CHECK_THROWS_AS(fx::argmax(x, 2), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::argmax(fx::zeros({0})), Contains("[argmax] axis 0 of f64[0] is empty"), fx::ShapeError);
}

TEST_CASE("ops: cumsum runs along the given axis") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals(fx::cumsum(x)) == std::vector<double>{1, 2, 3, 5, 7, 9});
  CHECK(vals(fx::cumsum(x, -1)) == std::vector<double>{1, 3, 6, 4, 9, 15});
  CHECK(fx::cumsum(fx::tensor({true, true})).dtype() == fx::i32);
  CHECK_THROWS_AS(fx::cumsum(x, 2), fx::AxisError);
}

TEST_CASE("ops: logsumexp is stable for large values and -inf") {
  fx::Tensor big = fx::tensor({1000.0, 1000.0});
  CHECK(close(vals(fx::logsumexp(big)), {1000 + std::log(2.0)}));
  fx::Tensor big32 = fx::tensor({1000.f, 1000.f});
  CHECK(fx::logsumexp(big32).dtype() == fx::f32);
  CHECK(close(vals(fx::logsumexp(big32)), {1000 + std::log(2.0)}));
  // An all -inf slice gives -inf (this also needs exp(-inf) to be exactly 0).
  CHECK(vals(fx::logsumexp(fx::tensor({-kInf, -kInf}))) == std::vector<double>{-kInf});
  CHECK(close(vals(fx::logsumexp(fx::tensor({-kInf, 0.0}))), {0}));
  CHECK(vals(fx::logsumexp(fx::tensor({kInf, 0.0}))) == std::vector<double>{kInf});
  fx::Tensor x = fx::from_vector(std::vector<double>{0, 0, -1000, 1000}, {2, 2});
  CHECK(close(vals(fx::logsumexp(x, {-1})), {std::log(2.0), 1000}));
  CHECK(dims(fx::logsumexp(x, {1}, true)) == std::vector<int64_t>{2, 1});
  CHECK(close(vals(fx::logsumexp(fx::tensor({0, 0}))), {std::log(2.0)}));
}

TEST_CASE("ops: softmax sums to one and log_softmax is its log") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1000, 1001, 1002, -5, 0, 5}, {2, 3});
  fx::Tensor s = fx::softmax(x);
  CHECK(close(vals(fx::sum(s, {-1})), {1, 1}));
  std::vector<double> sv = vals(s);
  double z = 1 + std::exp(1.0) + std::exp(2.0);
  CHECK(close({sv[0], sv[1], sv[2]}, {1 / z, std::exp(1.0) / z, std::exp(2.0) / z}));
  CHECK(close(vals(fx::log_softmax(x)), vals(fx::log(s))));
  CHECK(close(vals(fx::sum(fx::softmax(x, 0), {0})), {1, 1, 1}));
  CHECK(fx::softmax(fx::tensor({1.f, 2.f})).dtype() == fx::f32);
  CHECK(fx::softmax(fx::tensor({1, 2})).dtype() == fx::f64);
}

TEST_CASE("ops: norm is the square root of the sum of squares") {
  CHECK(vals(fx::norm(fx::tensor({3.0, 4.0}))) == std::vector<double>{5});
  fx::Tensor m = fx::from_vector(std::vector<double>{3, 4, 6, 8}, {2, 2});
  CHECK(vals(fx::norm(m, {1})) == std::vector<double>{5, 10});
  CHECK(dims(fx::norm(m, {1}, true)) == std::vector<int64_t>{2, 1});
  CHECK(fx::norm(fx::tensor({3, 4})).dtype() == fx::f64);
}

TEST_CASE("ops: composite ops stage into Jaxprs that typecheck") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) {
    fx::Tensor h = fx::matmul(x, w);
    return fx::logsumexp(h, {-1}) + fx::sum(fx::softmax(h), {-1}) + fx::mean(fx::take(h, fx::tensor({-1}), 2), {-1});
  };
  std::string t = jaxpr_text(f, fx::ones({2, 3, 4}, fx::f32), fx::ones({4, 5}, fx::f32));
  CHECK(t.find("stop_gradient") != std::string::npos);
  CHECK(t.find("dot_general") != std::string::npos);
}

// ---- shapes ----

TEST_CASE("ops: reshape infers one -1 dimension") {
  fx::Tensor x = fx::arange(6);
  CHECK(dims(fx::reshape(x, {2, -1})) == std::vector<int64_t>{2, 3});
  CHECK(dims(fx::reshape(x, {-1, 1, 2})) == std::vector<int64_t>{3, 1, 2});
  CHECK(vals(fx::reshape(x, {3, 2})) == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(fx::reshape(x, {6}).impl() == x.impl());
  CHECK(dims(fx::reshape(fx::scalar(1.0), {1, 1})) == std::vector<int64_t>{1, 1});
  CHECK(dims(fx::ravel(fx::ones({2, 3}))) == std::vector<int64_t>{6});
}

TEST_CASE("ops: reshape errors say which sizes cannot match") {
  fx::Tensor x = fx::ones({2, 3});
  CHECK_THROWS_WITH_AS(fx::reshape(x, {4, -1}), Contains("[reshape] cannot reshape f64[2,3] (6 elements) into [4,-1]"),
                       fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::reshape(x, {-1, -1}), Contains("[reshape] more than one -1"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::reshape(x, {7}), Contains("cannot reshape f64[2,3]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::reshape(x, {-2, -3}), Contains("[reshape] negative dimension -2"), fx::ShapeError);
  CHECK_THROWS_AS(fx::reshape(fx::zeros({0}), {0, -1}), fx::ShapeError);
}

TEST_CASE("ops: transpose reverses by default and accepts negative axes") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(dims(fx::transpose(x)) == std::vector<int64_t>{3, 2});
  CHECK(vals(fx::transpose(x)) == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(dims(fx::transpose(fx::ones({2, 3, 4}), {-1, 0, 1})) == std::vector<int64_t>{4, 2, 3});
  CHECK(fx::transpose(x, {0, 1}).impl() == x.impl());
  CHECK_THROWS_WITH_AS(fx::transpose(x, {0, 0}), Contains("[transpose] axes [0,0] are not a permutation"), fx::AxisError);
  CHECK_THROWS_AS(fx::transpose(x, {0}), fx::AxisError);
  CHECK_THROWS_AS(fx::transpose(x, {0, 2}), fx::AxisError);
}

TEST_CASE("ops: transposes of planes with full and partial 16 x 16 tiles move every element") {
  // The copy engine transposes planes by tiles of 16 x 16 in bands of 64 destination columns:
  // sizes below, at and across those, every element size, and a plane inside a 3-d permutation.
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  const std::vector<Case> cases = {{{16, 16}, {1, 0}},      {{37, 50}, {1, 0}},     {{64, 129}, {1, 0}},
                                   {{130, 17}, {1, 0}},     {{3, 40, 70}, {0, 2, 1}}, {{40, 3, 70}, {2, 1, 0}},
                                   {{33, 2, 65}, {2, 0, 1}}};
  for (fx::DType dtype : {fx::f64, fx::f32, fx::i64, fx::i32, fx::boolean}) {
    for (const Case& c : cases) {
      CAPTURE(dtype);
      CAPTURE(c.shape);
      const fx::Shape shape(c.shape);
      std::vector<double> v(static_cast<size_t>(shape.num_elements()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = dtype == fx::boolean ? double((i * 7 / 3) % 2) : double(i % 1000);
      fx::Tensor x = fx::astype(fx::from_vector(v, shape), dtype);
      std::vector<double> got = fx::astype(fx::transpose(x, c.perm), fx::f64).to_vector<double>();
      // Reference: out[i] = x[j] where out's index is x's index permuted.
      const size_t rank = c.shape.size();
      std::vector<int64_t> in_strides(rank, 1), out_dims(rank);
      for (size_t d = rank - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * c.shape[d];
      for (size_t d = 0; d < rank; ++d) out_dims[d] = c.shape[static_cast<size_t>(c.perm[d])];
      bool same = got.size() == v.size();
      for (size_t o = 0; o < got.size() && same; ++o) {
        int64_t rest = static_cast<int64_t>(o), src = 0;
        for (size_t d = rank; d-- > 0;) {
          src += rest % out_dims[d] * in_strides[static_cast<size_t>(c.perm[d])];
          rest /= out_dims[d];
        }
        same = got[o] == v[static_cast<size_t>(src)];
        CHECK_MESSAGE(same, "element " << o << ": got " << got[o] << ", want " << v[static_cast<size_t>(src)]);
      }
    }
  }
}

TEST_CASE("ops: expand_dims counts axes in the output rank") {
  fx::Tensor x = fx::ones({2, 3});
  CHECK(dims(fx::expand_dims(x, 0)) == std::vector<int64_t>{1, 2, 3});
  CHECK(dims(fx::expand_dims(x, -1)) == std::vector<int64_t>{2, 3, 1});
  CHECK(dims(fx::expand_dims(x, std::vector<int64_t>{0, -1})) == std::vector<int64_t>{1, 2, 3, 1});
  CHECK(dims(fx::expand_dims(x, std::vector<int64_t>{1, 2})) == std::vector<int64_t>{2, 1, 1, 3});
  CHECK_THROWS_WITH_AS(fx::expand_dims(x, std::vector<int64_t>{1, 1}), Contains("[expand_dims] axis 1 is repeated"),
                       fx::AxisError);
  CHECK_THROWS_AS(fx::expand_dims(x, 4), fx::AxisError);
}

TEST_CASE("ops: squeeze removes size-1 axes") {
  fx::Tensor x = fx::ones({1, 2, 1, 3});
  CHECK(dims(fx::squeeze(x)) == std::vector<int64_t>{2, 3});
  CHECK(dims(fx::squeeze(x, {-2})) == std::vector<int64_t>{1, 2, 3});
  CHECK(dims(fx::squeeze(fx::ones({1}))) == std::vector<int64_t>{});
  CHECK_THROWS_WITH_AS(fx::squeeze(x, {1}), Contains("[squeeze] axis 1 of f64[1,2,1,3] has size 2, not 1"),
                       fx::ShapeError);
  CHECK_THROWS_AS(fx::squeeze(x, {4}), fx::AxisError);
}

TEST_CASE("ops: concatenate promotes dtypes and joins along an axis") {
  fx::Tensor a = fx::from_vector(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  fx::Tensor b = fx::from_vector(std::vector<float>{5, 6}, {2, 1});
  fx::Tensor c = fx::concatenate({a, b}, -1);
  CHECK(c.dtype() == fx::f32);
  CHECK(dims(c) == std::vector<int64_t>{2, 3});
  CHECK(vals(c) == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK(vals(fx::concatenate({fx::tensor({1.0}), fx::tensor({2.0, 3.0})})) == std::vector<double>{1, 2, 3});
  CHECK(vals(fx::concatenate({fx::tensor({1.0})})) == std::vector<double>{1});
}

TEST_CASE("ops: concatenate errors name the mismatched operands") {
  CHECK_THROWS_WITH_AS(fx::concatenate({fx::ones({2, 3}), fx::ones({2, 3}), fx::ones({4, 4}, fx::f32)}, 0),
                       Contains("[concatenate] shapes f64[2,3] (argument 0) and f32[4,4] (argument 2) differ outside axis 0"),
                       fx::ShapeError);
  CHECK_THROWS_AS(fx::concatenate({fx::ones({2}), fx::ones({2, 1})}), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::concatenate({}), Contains("[concatenate] needs at least one tensor"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::concatenate({fx::scalar(1.0), fx::scalar(2.0)}), Contains("rank-0"), fx::ShapeError);
  CHECK_THROWS_AS(fx::concatenate({fx::ones({2}), fx::ones({2})}, 1), fx::AxisError);
}

TEST_CASE("ops: stack adds a new axis anywhere") {
  fx::Tensor a = fx::tensor({1.0, 2.0}), b = fx::tensor({3.0, 4.0});
  fx::Tensor s0 = fx::stack({a, b});
  CHECK(dims(s0) == std::vector<int64_t>{2, 2});
  CHECK(vals(s0) == std::vector<double>{1, 2, 3, 4});
  fx::Tensor s1 = fx::stack({a, b}, -1);
  CHECK(vals(s1) == std::vector<double>{1, 3, 2, 4});
  CHECK(dims(fx::stack({fx::scalar(1), fx::scalar(2.5)})) == std::vector<int64_t>{2});
  CHECK(fx::stack({fx::scalar(1), fx::scalar(2.5)}).dtype() == fx::f64);
  CHECK_THROWS_WITH_AS(fx::stack({a, fx::ones({3})}), Contains("[stack] shapes f64[2] (argument 0) and f64[3] (argument 1) differ"),
                       fx::ShapeError);
  CHECK_THROWS_AS(fx::stack({a, b}, 2), fx::AxisError);
  CHECK_THROWS_AS(fx::stack({}), fx::ShapeError);
}

// ---- indexing ----

TEST_CASE("ops: slice counts negative starts from the end and clamps limits") {
  fx::Tensor x = fx::arange(10);
  CHECK(vals(fx::slice(x, {-3}, {10})) == std::vector<double>{7, 8, 9});
  CHECK(vals(fx::slice(x, {7}, {100})) == std::vector<double>{7, 8, 9});
  CHECK(vals(fx::slice(x, {1}, {-6})) == std::vector<double>{1, 2, 3});
  CHECK(vals(fx::slice(x, {0}, {10}, {3})) == std::vector<double>{0, 3, 6, 9});
  CHECK(vals(fx::slice(x, {-100}, {2})) == std::vector<double>{0, 1});
  CHECK(dims(fx::slice(x, {5}, {2})) == std::vector<int64_t>{0});
  CHECK(fx::slice(x, {0}, {10}).impl() == x.impl());
  fx::Tensor m = fx::reshape(fx::arange(12), {3, 4});
  CHECK(vals(fx::slice(m, {-2, 1}, {3, 3})) == std::vector<double>{5, 6, 9, 10});
  CHECK(vals(fx::slice(m, {2}, {3})) == std::vector<double>{8, 9, 10, 11});
}

TEST_CASE("ops: slice with mismatched lists or a non-positive stride is a ShapeError") {
  fx::Tensor x = fx::arange(10);
  CHECK_THROWS_WITH_AS(fx::slice(x, {0, 0}, {1, 1}), Contains("[slice] starts [0,0]"), fx::ShapeError);
  CHECK_THROWS_AS(fx::slice(x, {0}, {1, 2}), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::slice(x, {0}, {5}, {0}), Contains("[slice] stride 0 for axis 0"), fx::ShapeError);
}

TEST_CASE("ops: take counts negative indices from the end and clamps the rest") {
  fx::Tensor x = fx::tensor({10.0, 20.0, 30.0});
  CHECK(vals(fx::take(x, fx::tensor({-1, 0, -3}), 0)) == std::vector<double>{30, 10, 10});
  CHECK(vals(fx::take(x, fx::tensor({5, -7}), 0)) == std::vector<double>{30, 10});
  fx::Tensor m = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  fx::Tensor cols = fx::take(m, fx::tensor({int64_t{2}, int64_t{-3}}), -1);
  CHECK(dims(cols) == std::vector<int64_t>{2, 2});
  CHECK(vals(cols) == std::vector<double>{3, 1, 6, 4});
  fx::Tensor idx2 = fx::from_vector(std::vector<int32_t>{0, 1, 1, 0}, {2, 2});
  CHECK(dims(fx::take(m, idx2, 0)) == std::vector<int64_t>{2, 2, 3});
  CHECK(vals(fx::take(m, fx::tensor({-1, 0}))) == std::vector<double>{6, 1});
}

TEST_CASE("ops: take of traced indices stages the negative-index fix-up before gather") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& i) { return fx::take(x, i, 0); };
  std::string t = jaxpr_text(f, fx::ones({3}), fx::tensor({-1, 0}));
  CHECK(t.find("select") != std::string::npos);
  CHECK(t.find("gather") != std::string::npos);
}

TEST_CASE("ops: take needs integer indices and a valid axis") {
  CHECK_THROWS_WITH_AS(fx::take(fx::ones({3}), fx::tensor({0.0}), 0), Contains("[take] indices must be integers, got f64[1]"),
                       fx::DTypeError);
  CHECK_THROWS_AS(fx::take(fx::ones({3}), fx::tensor({0}), 1), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::take(fx::zeros({0}), fx::tensor({0}), 0), Contains("[take] cannot take indices from axis 0"),
                       fx::ShapeError);
}

TEST_CASE("ops: f64 tanh is within 2 ulp of a long-double tanh, vectorised and scalar, with its special values") {
  // Both branches (|x| < 0.625: continued fraction; above: exp), the switch point, tiny and huge
  // arguments; lengths 3 (scalar path only) and 1000 (vector packets plus a scalar tail).
  std::vector<double> xs{0.0, -0.0, 1e-300, -1e-20, 1e-8, 0.1, -0.3, 0.6249999999, 0.625, -0.625, 0.6250000001,
                         0.9, -1.7, 3.0, 9.5, -19.0, 20.0, 400.0, -1e300};
  for (int i = 0; i < 1000; ++i) xs.push_back(-3.0 + 6.0 * i / 999.0);
  for (int64_t n : {int64_t{3}, static_cast<int64_t>(xs.size())}) {
    std::vector<double> in(xs.begin(), xs.begin() + n);
    std::vector<double> got = fx::tanh(fx::from_vector(in)).to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      const long double want = std::tanh(static_cast<long double>(in[i]));
      const double w = static_cast<double>(want);
      const double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
      CAPTURE(in[i]);
      CHECK(std::fabs(static_cast<long double>(got[i]) - want) <= 2 * ulp);
      CHECK(std::signbit(got[i]) == std::signbit(in[i]));  // -0 stays -0
    }
  }
  std::vector<double> special =
      fx::tanh(fx::from_vector(std::vector<double>{INFINITY, -INFINITY, NAN, 0.5, 2.0, NAN, -INFINITY, 1.0, NAN}))
          .to_vector<double>();
  CHECK(special[0] == 1.0);
  CHECK(special[1] == -1.0);
  CHECK(std::isnan(special[2]));
  CHECK(std::isnan(special[5]));
  CHECK(special[6] == -1.0);
  CHECK(std::isnan(special[8]));
}

TEST_CASE("ops: exp near overflow and underflow, vectorised and scalar: finite where the result is, inf above, exact 0 far below") {
  // Arguments just below the overflow threshold (f32 88.72, f64 709.78) have finite results that
  // a clamped argument would get wrong; above it the result is inf. Lengths 3 (scalar path) and
  // 64 (vector packets).
  auto check = [](auto zero, std::vector<double> args) {
    using T = decltype(zero);
    for (size_t n : {size_t{3}, size_t{64}}) {
      std::vector<T> in(n, T(0));
      for (size_t i = 0; i < n; ++i) in[i] = static_cast<T>(args[i % args.size()]);
      std::vector<T> got = fx::exp(fx::from_vector(in)).template to_vector<T>();
      for (size_t i = 0; i < n; ++i) {
        const T want = std::exp(in[i]);
        CAPTURE(n);
        CAPTURE(double(in[i]));
        if (std::isinf(want) || want == 0)
          CHECK(got[i] == want);
        else
          CHECK(std::fabs(double(got[i]) - double(want)) <= 4 * std::numeric_limits<T>::epsilon() * double(want));
      }
    }
  };
  check(0.0f, {88.5, 88.7, 88.72, 88.75, 89.0, 100.0, -150.0, 3.0});
  check(0.0, {709.5, 709.7, 709.78, 709.8, 710.0, 1000.0, -1000.0, 3.0, -707.5, -5000.0});
}

/// The largest distance of got[i] from want(in[i]) (in double), in ulps of the float nearest the
/// wanted value, and the argument where it is (NaN counts as the worst).
template <class F>
std::pair<double, double> worst_ulp_error(const std::vector<float>& in, const std::vector<float>& got, F want) {
  double worst = 0, worst_at = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double y = want(static_cast<double>(in[i]));
    const float w = std::fabs(static_cast<float>(y));
    const double ulp = w == 0 ? std::numeric_limits<float>::denorm_min() : std::nextafter(w, INFINITY) - w;
    const double err = std::fabs(static_cast<double>(got[i]) - y) / ulp;
    if (!(err <= worst)) worst = err, worst_at = in[i];
  }
  return {worst, worst_at};
}

TEST_CASE("ops: f32 exp within 1.1 ulp over its whole finite range, 0 below -87, inf above 88.7228, NaN kept") {
  // Every 499th float of [-87, 88.72] (4.4M arguments, both signs) against double exp. The
  // vectorised path (backends/cpu/special_functions.hpp, exp_f32) measured 1.059 ulp at most
  // over every float there; a polynomial one degree lower, or r reduced by ln 2 in one part,
  // exceeds 1.1.
  std::vector<float> in;
  for (float top : {-87.0f, 88.72f}) {  // magnitudes from 0 up to |top|, with top's sign
    const float magnitude = std::fabs(top);
    uint32_t last;
    std::memcpy(&last, &magnitude, 4);
    for (uint32_t u = 0; u <= last; u += 499) {
      float v;
      std::memcpy(&v, &u, 4);
      in.push_back(std::copysign(v, top));
    }
  }
  const std::vector<float> got = fx::exp(fx::from_vector(in)).to_vector<float>();
  const auto [worst, worst_at] = worst_ulp_error(in, got, [](double x) { return std::exp(x); });
  CAPTURE(worst_at);
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  CHECK(worst <= 1.1);
#else
  CHECK(worst <= 1.5);  // pmadd a rounded multiply and add: 1.32 ulp measured with SSE2
#endif
  // The edges, in a vectorised length: flushed, finite just below overflow, inf, NaN, signed zero.
  std::vector<float> edge = {-87.01f, -88.5f, -1e30f, -INFINITY, -87.0f, -86.995f, 88.376f, 88.7228f,
                             88.72284f, 89.5f, 1e30f, INFINITY, NAN, -0.0f, 0.0f, 1.0f};
  const std::vector<float> e = fx::exp(fx::from_vector(edge)).to_vector<float>();
  for (int i = 0; i < 4; ++i) CHECK(e[i] == 0.0f);
  for (int i = 4; i < 8; ++i) CHECK(std::fabs(e[i] / std::exp(double(edge[i])) - 1) < 2e-7);
  for (int i = 8; i < 12; ++i) CHECK(e[i] == INFINITY);
  CHECK(std::isnan(e[12]));
  CHECK(e[13] == 1.0f);
  CHECK(e[14] == 1.0f);
  CHECK(std::fabs(e[15] - 2.7182817f) <= 2.4e-7f);
}

TEST_CASE("ops: f64 exp within 1.1 ulp over its normal range, 0 below -708, inf above 709.7827, NaN kept") {
  // 3M arguments spread over [-708, 709.78] and 1M each over [-1, 1] and [-0.01, 0.01] against long
  // double exp. The vectorised path (backends/cpu/special_functions.hpp, exp_f64) measured 1.000
  // ulp at most with FMA, 1.143 with SSE2.
  std::mt19937_64 gen(7);
  std::vector<double> in;
  for (auto [lo, hi, count] : {std::tuple{-708.0, 709.78, 3000000}, {-1.0, 1.0, 1000000}, {-0.01, 0.01, 1000000}}) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (int i = 0; i < count; ++i) in.push_back(u(gen));
  }
  const std::vector<double> got = fx::exp(fx::from_vector(in)).to_vector<double>();
  double worst = 0, worst_at = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const long double want = std::exp(static_cast<long double>(in[i]));
    const double w = static_cast<double>(want);
    const double err = static_cast<double>(std::fabs(got[i] - want)) / (std::nextafter(w, INFINITY) - w);
    if (!(err <= worst)) worst = err, worst_at = in[i];
  }
  CAPTURE(worst_at);
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  CHECK(worst <= 1.1);
#else
  CHECK(worst <= 1.5);
#endif
  std::vector<double> edge = {-708.01, -745.2, -1e300, -INFINITY, -708.0, -707.99, 709.78, 709.7827,
                              709.78272, 710.0, 1e300, INFINITY, NAN, -0.0, 0.0, 1.0};
  const std::vector<double> e = fx::exp(fx::from_vector(edge)).to_vector<double>();
  for (int i = 0; i < 4; ++i) CHECK(e[i] == 0.0);
  for (int i = 4; i < 8; ++i) CHECK(std::fabs(e[i] / static_cast<double>(std::exp(static_cast<long double>(edge[i]))) - 1) < 3e-16);
  for (int i = 8; i < 12; ++i) CHECK(e[i] == INFINITY);
  CHECK(std::isnan(e[12]));
  CHECK(e[13] == 1.0);
  CHECK(e[14] == 1.0);
  CHECK(std::fabs(e[15] - 2.718281828459045) <= 4.5e-16);
}

TEST_CASE("ops: f32 tanh within 5.1 ulp over every magnitude, exact at the edges, NaN kept") {
  // Every 499th float of [0, 10] with both signs against double tanh. The vectorised path
  // (backends/cpu/special_functions.hpp, tanh_f32) measured 5.03 ulp at most over every float
  // (Eigen 3.4's ptanh 4.90); without FMA 5.87 on every 7th (Eigen 6.40).
  std::vector<float> in;
  const float top = 10.0f;
  uint32_t last;
  std::memcpy(&last, &top, 4);
  for (uint32_t u = 0; u <= last; u += 499) {
    float v;
    std::memcpy(&v, &u, 4);
    in.push_back(v);
    in.push_back(-v);
  }
  const std::vector<float> got = fx::tanh(fx::from_vector(in)).to_vector<float>();
  const auto [worst, worst_at] = worst_ulp_error(in, got, [](double x) { return std::tanh(x); });
  CAPTURE(worst_at);
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  CHECK(worst <= 5.1);
#else
  CHECK(worst <= 6.0);
#endif
  // In a vectorised length: ±1 from the clamp on, -0, subnormals and tiny values unchanged, NaN.
  std::vector<float> edge = {8.6f, 9.5f, 1e30f, INFINITY, -8.7f, -1e30f, -INFINITY, -0.0f,
                             0.0f, 1e-40f, -1e-40f, 1e-30f, NAN, -NAN, 0.5f, -2.0f};
  const std::vector<float> t = fx::tanh(fx::from_vector(edge)).to_vector<float>();
  for (int i = 0; i < 4; ++i) CHECK(t[i] == 1.0f);
  for (int i = 4; i < 7; ++i) CHECK(t[i] == -1.0f);
  CHECK((t[7] == 0.0f && std::signbit(t[7])));
  CHECK((t[8] == 0.0f && !std::signbit(t[8])));
  for (int i = 9; i < 12; ++i) CHECK(t[i] == edge[i]);
  CHECK(std::isnan(t[12]));
  CHECK(std::isnan(t[13]));
  CHECK(std::fabs(t[14] - std::tanh(0.5)) <= 1.2e-7);  // 4 ulp
  CHECK(std::fabs(t[15] - std::tanh(-2.0)) <= 2.4e-7);
}
