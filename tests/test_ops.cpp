// The numpy-style op layer: promotion, weak scalars, broadcasting, math, products and reductions,
// and every error path with its type and message (shapes and indexing: test_ops_shapes.cpp).
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

#include "ops_util.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using doctest::Contains;
using fluxion::testing::jaxpr_text;

using namespace ops_test;

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
  CHECK_THROWS_WITH_AS(fx::dot(fx::ones({2, 3}), fx::ones({2, 3})),
                       Contains("[dot] cannot contract f64[2,3] with f64[2,3]"), fx::ShapeError);
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
