// item() and to_vector() under the transforms (issue 35). Reading a value that is being
// differentiated into a C++ number gives its value (DESIGN: C++ control flow on values works under
// the eager transforms) but the number carries no derivative: such reads are counted and the first
// one of the process warns, naming fx::stop_gradient. Reads without a derivative to lose never count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "test_util.hpp"
#include "transforms/jvp.hpp"

namespace fx = fluxion;
using fluxion::testing::message_of;

TEST_CASE("host reads: item<double>() under grad reads the value, for control flow on values") {
  // The design's own example: a piecewise function branching on a read number.
  auto piecewise = [](const fx::Tensor& x) { return x.item<double>() > 0 ? x * x : -x; };
  const int64_t before = fx::derivative_dropping_reads();
  CHECK(fx::grad(piecewise)(fx::scalar(3.0)).item<double>() == 6.0);
  CHECK(fx::grad(piecewise)(fx::scalar(-2.0)).item<double>() == -1.0);
  CHECK(fx::derivative_dropping_reads() == before + 2);
  // A Newton loop that stops on a read residual: d/da sqrt(a) = 1 / (2 sqrt(a)).
  auto newton_sqrt = [](const fx::Tensor& a) {
    fx::Tensor r = a;
    for (int i = 0; i < 50 && std::abs((r * r - a).item<double>()) > 1e-14; ++i) r = 0.5 * (r + a / r);
    return r;
  };
  CHECK(fx::grad(newton_sqrt)(fx::scalar(4.0)).item<double>() == doctest::Approx(0.25));
  CHECK(fx::derivative_dropping_reads() > before + 2);
}

TEST_CASE("host reads: a read number that feeds the result is a constant to the transform, and counted") {
  // d/dx (x * x.item()) at 3: the read 3 is a constant, so the derivative is 3, not 6. Documented,
  // counted, and warned about once per process (stderr).
  auto scaled = [](const fx::Tensor& x) { return x * x.item<double>(); };
  const int64_t before = fx::derivative_dropping_reads();
  CHECK(fx::grad(scaled)(fx::scalar(3.0)).item<double>() == 3.0);
  CHECK(fx::derivative_dropping_reads() == before + 1);
  // to_vector under jvp and value_and_grad, and at any depth of nesting, count as well.
  auto read_all = [](const fx::Tensor& x) {
    std::vector<double> v = x.to_vector<double>();
    return x * v[0];
  };
  fx::Tensor x = fx::tensor({1.0, 2.0});
  auto [y, dy] = fx::jvp(read_all, x, fx::ones({2}));
  CHECK(dy.to_vector<double>() == std::vector<double>{1.0, 1.0});
  CHECK(fx::derivative_dropping_reads() == before + 2);
  auto loss = [&](const fx::Tensor& v) { return fx::sum(read_all(v)); };
  fx::value_and_grad(loss)(x);
  const int64_t after_value_and_grad = fx::derivative_dropping_reads();
  CHECK(after_value_and_grad > before + 2);
  auto squared_norm = [](const fx::Tensor& v) { return fx::sum(v * v).item<double>() * fx::sum(v); };
  fx::grad(fx::grad(squared_norm))(fx::scalar(2.0));
  CHECK(fx::derivative_dropping_reads() > after_value_and_grad);
}

TEST_CASE("host reads: control flow on comparisons is differentiated along the path taken") {
  // A comparison is a bool Tensor: it has no derivative to lose (and is not counted).
  const int64_t before = fx::derivative_dropping_reads();
  auto my_abs = [](const fx::Tensor& x) { return (x > 0).item<bool>() ? x * x : -x; };
  CHECK(fx::grad(my_abs)(fx::scalar(3.0)).item<double>() == 6.0);
  CHECK(fx::grad(my_abs)(fx::scalar(-2.0)).item<double>() == -1.0);
  // A Newton loop that stops on a comparison: d/da sqrt(a) = 1 / (2 sqrt(a)).
  auto newton_sqrt = [](const fx::Tensor& a) {
    fx::Tensor r = a;
    for (int i = 0; i < 50 && (fx::abs(r * r - a) > 1e-14).item<bool>(); ++i) r = 0.5 * (r + a / r);
    return r;
  };
  CHECK(fx::grad(newton_sqrt)(fx::scalar(4.0)).item<double>() == doctest::Approx(0.25));
  CHECK(fx::derivative_dropping_reads() == before);
}

TEST_CASE("host reads: stop_gradient, integer values, constants and eager values read fine, uncounted") {
  const int64_t before = fx::derivative_dropping_reads();
  // stop_gradient says the derivative through the number is meant to be zero.
  auto scaled = [](const fx::Tensor& x) { return x * fx::stop_gradient(x).item<double>(); };
  CHECK(fx::grad(scaled)(fx::scalar(3.0)).item<double>() == 3.0);
  CHECK(fx::grad(fx::grad(scaled))(fx::scalar(3.0)).item<double>() == 0.0);
  // floor's derivative is zero (no tangent); integer values never carry one.
  auto stepped = [](const fx::Tensor& x) { return x * fx::floor(x).item<double>(); };
  CHECK(fx::grad(stepped)(fx::scalar(2.5)).item<double>() == 2.0);
  auto counted = [](const fx::Tensor& x) { return x * double(fx::astype(x, fx::i32).item<int32_t>()); };
  CHECK(fx::grad(counted)(fx::scalar(4.0)).item<double>() == 4.0);
  // A read into an integer or bool type is piecewise constant in the value: its zero derivative is
  // right (JAX's int(x) works under grad too), so it reads the value being differentiated.
  auto rounded = [](const fx::Tensor& x) {
    std::vector<int64_t> whole = x.to_vector<int64_t>();
    return x * double(x.item<int>()) + fx::sum(x) * double(whole[0]) * (x.item<bool>() ? 1.0 : 0.0);
  };
  CHECK(fx::grad(rounded)(fx::scalar(3.5)).item<double>() == 6.0);
  // A value that does not depend on the differentiated input is a constant.
  fx::Tensor c = fx::tensor({1.0, 2.0});
  auto with_constant = [&](const fx::Tensor& x) { return x * fx::sum(c * c).item<double>(); };
  CHECK(fx::grad(with_constant)(fx::scalar(1.0)).item<double>() == 5.0);
  // The results of a transform, and eager values, are plain arrays.
  CHECK(fx::grad(scaled)(fx::scalar(3.0)).to_vector<double>() == std::vector<double>{3.0});
  CHECK(fx::sum(c).item<double>() == 3.0);
  CHECK(fx::derivative_dropping_reads() == before);
}

TEST_CASE("host reads: under vmap and jit a read is still the ConcretizationError that names fx::where") {
  fx::Tensor xs = fx::tensor({1.0, -2.0});
  std::string msg = message_of<fx::ConcretizationError>(
      [&] { fx::vmap([](const fx::Tensor& v) { return v * fx::stop_gradient(v).item<double>(); })(xs); });
  CHECK(msg.find("[item] cannot convert a value traced by vmap (f64[])") == 0);
  CHECK(msg.find("fx::where, fx::cond or fx::while_loop") != std::string::npos);
}
