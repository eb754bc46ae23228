// Catalogue: unary and binary elementwise ops (mirrors unary() and binary() in cat_ops.py).
#include "harness.hpp"

namespace diff {

void add_unary_binary(Catalogue& c) {
  c.add("unary/neg", [](const Args& a) { return fx::negative(a[0]); });
  c.add("unary/neg_operator", [](const Args& a) { return -a[0] * 2.0; });
  c.add("unary/sin", [](const Args& a) { return fx::sin(a[0]); });
  c.add("unary/cos", [](const Args& a) { return fx::cos(a[0]); });
  c.add("unary/tan", [](const Args& a) { return fx::tan(a[0]); });
  c.add("unary/exp", [](const Args& a) { return fx::exp(a[0]); });
  c.add("unary/log", [](const Args& a) { return fx::log(a[0]); });
  c.add("unary/log1p", [](const Args& a) { return fx::log1p(a[0]); });
  c.add("unary/expm1", [](const Args& a) { return fx::expm1(a[0]); });
  c.add("unary/sqrt", [](const Args& a) { return fx::sqrt(a[0]); });
  c.add("unary/rsqrt", [](const Args& a) { return fx::rsqrt(a[0]); });
  c.add("unary/tanh", [](const Args& a) { return fx::tanh(a[0]); });
  c.add("unary/sigmoid", [](const Args& a) { return fx::sigmoid(a[0]); });
  c.add("unary/softplus", [](const Args& a) { return fx::softplus(a[0]); });
  c.add("unary/abs", [](const Args& a) { return fx::abs(a[0]); });
  c.add("unary/sign", [](const Args& a) { return fx::sign(a[0]) * a[0]; });
  c.add("unary/floor", [](const Args& a) { return fx::floor(a[0]) + a[0]; });
  c.add("unary/ceil", [](const Args& a) { return fx::ceil(a[0]) * a[0]; });
  c.add("unary/round", [](const Args& a) { return fx::round(a[0]) - a[0]; });
  c.add("unary/square", [](const Args& a) { return fx::square(a[0]); });
  c.add("unary/pow_int_exponent", [](const Args& a) { return fx::pow(a[0], 3); });
  c.add("unary/pow_half_exponent", [](const Args& a) { return fx::pow(a[0], 0.5); });
  c.add("unary/pow_scalar_base", [](const Args& a) { return fx::pow(2.0, a[0]); });
  c.add("unary/stop_gradient",
        [](const Args& a) { return fx::stop_gradient(a[0]) * a[0] + fx::sin(fx::stop_gradient(a[0] * 2.0)); });
  c.add("unary/astype_round_trip", [](const Args& a) { return fx::astype(fx::astype(a[0], fx::f32), fx::f64) * a[0]; });
  c.add("unary/creation_ops", [](const Args& a) {
    return a[0] * fx::full_like(a[0], 2.0) + fx::reshape(fx::linspace(0.0, 1.0, 12), {3, 4}) + fx::ones_like(a[0]) -
           fx::zeros({3, 4}) + fx::slice(fx::eye(4), {0, 0}, {3, 4}) +
           fx::full({3, 4}, 0.5) * fx::reshape(fx::arange(12), {3, 4}) + fx::zeros_like(a[0]);
  });
  c.add("unary/chain",
        [](const Args& a) { return fx::exp(fx::sin(a[0]) * fx::tanh(a[0])) / (1.0 + fx::square(a[0])); });

  c.add("binary/add", [](const Args& a) { return a[0] + a[1]; });
  c.add("binary/subtract", [](const Args& a) { return fx::subtract(a[0], a[1]); });
  c.add("binary/multiply", [](const Args& a) { return fx::multiply(a[0], a[1]); });
  c.add("binary/divide", [](const Args& a) { return a[0] / a[1]; });
  c.add("binary/pow", [](const Args& a) { return fx::pow(a[0], a[1]); });
  c.add("binary/maximum", [](const Args& a) { return fx::maximum(a[0], a[1]); });
  c.add("binary/minimum", [](const Args& a) { return fx::minimum(a[0], a[1]); });
  c.add("binary/maximum_scalar", [](const Args& a) { return fx::maximum(a[0], 0.25); });
  c.add("binary/minimum_scalar", [](const Args& a) { return fx::minimum(a[0], -0.25); });
  c.add("binary/atan2", [](const Args& a) { return fx::atan2(a[0], a[1]); });
  c.add("binary/remainder_positive", [](const Args& a) { return fx::remainder(a[0], a[1]); });
  c.add("binary/add_broadcast", [](const Args& a) { return a[0] + a[1]; });
  c.add("binary/multiply_broadcast_rank", [](const Args& a) { return a[0] * a[1]; });
  c.add("binary/add_scalar", [](const Args& a) { return a[0] + 1.5; });
  c.add("binary/subtract_scalar_left", [](const Args& a) { return 1.0 - a[0]; });
  c.add("binary/multiply_scalar", [](const Args& a) { return 3.0 * a[0] * 0.5; });
  c.add("binary/divide_scalar", [](const Args& a) { return a[0] / 3.0; });
  c.add("binary/divide_scalar_left", [](const Args& a) { return 2.0 / a[0]; });
  c.add("binary/rank0_operand", [](const Args& a) { return a[0] * a[1] + a[1]; });
  c.add("binary/pow_tensor_scalar_exponent", [](const Args& a) { return fx::pow(a[0], 2.5) - fx::pow(a[0], -1.5); });
}

}  // namespace diff
