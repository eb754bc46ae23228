// fx::amp::LossScaler: its scale schedule (growth, backoff, skipped steps), option checks, and a bf16 MLP
// trained 100 steps with it ending within 1 % of the loss of its f32 twin (f16 too, with and without overflow).
#include <doctest/doctest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "fluxion/amp.hpp"
#include "fluxion/fluxion.hpp"
#include "samples.hpp"

namespace fx = fluxion;

TEST_CASE("amp: LossScaler grows, backs off, skips non-finite steps and validates its options") {
  fx::amp::LossScaler scaler(fx::amp::LossScalerOptions{1024.0, 2.0, 0.5, 3});
  CHECK(scaler.get_scale() == 1024);
  const fx::Tensor loss = fx::astype(fx::tensor<float>({0.5f}), fx::f16);
  CHECK(scaler.scale(loss).dtype() == fx::f16);
  CHECK(scaler.scale(loss).to_vector<double>() == std::vector<double>{512});
  std::vector<fx::Tensor> grads{fx::astype(fx::tensor<float>({1024, -2048}), fx::f16)};
  std::vector<fx::Tensor> unscaled = scaler.unscale(grads);
  CHECK(unscaled[0].dtype() == fx::f32);
  CHECK(unscaled[0].to_vector<double>() == std::vector<double>{1, -2});
  int applied = 0;
  for (int i = 0; i < 3; ++i) CHECK(scaler.step(grads, [&](const std::vector<fx::Tensor>&) { ++applied; }));
  CHECK(applied == 3);
  CHECK(scaler.get_scale() == 2048);  // grown after growth_interval finite steps
  CHECK(scaler.growth_tracker() == 0);
  std::vector<fx::Tensor> bad{fx::tensor<float>({1, INFINITY}), fx::tensor<float>({NAN})};
  CHECK(!fx::amp::LossScaler::all_finite(bad));
  CHECK(!scaler.step(bad, [&](const std::vector<fx::Tensor>&) { ++applied; }));
  CHECK(applied == 3);
  CHECK(scaler.get_scale() == 1024);
  CHECK(scaler.skipped_steps() == 1);
  CHECK_THROWS_AS(fx::amp::LossScaler(fx::amp::LossScalerOptions{0.0}), fx::Error);
  CHECK_THROWS_AS(fx::amp::LossScaler(fx::amp::LossScalerOptions{1.0, 1.0}), fx::Error);
  CHECK_THROWS_AS(fx::amp::LossScaler(fx::amp::LossScalerOptions{1.0, 2.0, 1.5}), fx::Error);
  CHECK_THROWS_AS(fx::amp::LossScaler(fx::amp::LossScalerOptions{1.0, 2.0, 0.5, 0}), fx::Error);
  try {
    fx::amp::LossScaler(fx::amp::LossScalerOptions{-1.0});
  } catch (const fx::Error& e) {
    CHECK(std::string(e.what()).rfind("[amp.LossScaler] init_scale must be positive", 0) == 0);
  }
}

namespace {

/// A two-layer tanh MLP regressing a smooth function with noise: params in f32 (master weights), forward pass
/// in `compute` (f32, or bf16 / f16 through converts), mean squared error.
struct Mlp {
  fx::Tensor x, y;
  explicit Mlp(int64_t n) {
    x = fx::testing::random_tensor(fx::Shape{n, 4}, fx::f32, 11, -1, 1);
    const fx::Tensor noise = fx::testing::random_tensor(fx::Shape{n, 1}, fx::f32, 12, -0.1, 0.1);
    y = fx::sin(fx::sum(x, {1}, true) * 1.5) + noise;
  }
  static std::vector<fx::Tensor> init() {
    return {fx::testing::random_tensor(fx::Shape{4, 32}, fx::f32, 13, -0.5, 0.5), fx::zeros(fx::Shape{32}, fx::f32),
            fx::testing::random_tensor(fx::Shape{32, 1}, fx::f32, 14, -0.5, 0.5)};
  }
  fx::Tensor loss(const std::vector<fx::Tensor>& p, fx::DType compute) const {
    auto c = [&](const fx::Tensor& t) { return fx::astype(t, compute); };
    const fx::Tensor h = fx::tanh(fx::matmul(c(x), c(p[0])) + c(p[1]));
    const fx::Tensor d = fx::matmul(h, c(p[2])) - c(y);
    return fx::mean(d * d);
  }
};

/// 100 SGD steps; with a LossScaler for the half dtypes. Returns the final f32 loss of the trained params.
double train(const Mlp& mlp, fx::DType compute, fx::amp::LossScaler* scaler) {
  std::vector<fx::Tensor> p = Mlp::init();
  const double lr = 0.2;
  for (int step = 0; step < 100; ++step) {
    if (!scaler) {
      auto g = fx::grad([&](const std::vector<fx::Tensor>& q) { return mlp.loss(q, compute); })(p);
      for (size_t i = 0; i < p.size(); ++i) p[i] = p[i] - g[i] * lr;
      continue;
    }
    auto g = fx::grad([&](const std::vector<fx::Tensor>& q) { return scaler->scale(mlp.loss(q, compute)); })(p);
    scaler->step(g, [&](const std::vector<fx::Tensor>& grads) {
      for (size_t i = 0; i < p.size(); ++i) p[i] = p[i] - grads[i] * lr;
    });
  }
  return mlp.loss(p, fx::f32).item<double>();
}

}  // namespace

TEST_CASE("amp: a bf16 MLP trained 100 steps with the loss scaler ends within 1% of the f32 loss") {
  const Mlp mlp(256);
  const double initial = mlp.loss(Mlp::init(), fx::f32).item<double>();
  const double f32_loss = train(mlp, fx::f32, nullptr);
  fx::amp::LossScaler bf16_scaler;
  const double bf16_loss = train(mlp, fx::bf16, &bf16_scaler);
  fx::amp::LossScaler f16_scaler;
  const double f16_loss = train(mlp, fx::f16, &f16_scaler);
  // f16 overflows above 65504: a scale of 2^24 makes the scaled loss infinite, so the first steps are skipped
  // and the scale backs off until the gradients are finite; training then proceeds.
  fx::amp::LossScaler high_scaler(fx::amp::LossScalerOptions{0x1p24});
  const double high_loss = train(mlp, fx::f16, &high_scaler);
  std::cout << "[half] MLP loss: initial " << initial << ", f32 " << f32_loss << ", bf16 " << bf16_loss << " (scale "
            << bf16_scaler.get_scale() << "), f16 " << f16_loss << " (scale " << f16_scaler.get_scale() << ", "
            << f16_scaler.skipped_steps() << " steps skipped), f16 from 2^24 " << high_loss << " (scale "
            << high_scaler.get_scale() << ", " << high_scaler.skipped_steps() << " steps skipped)\n";
  CHECK(f32_loss < 0.5 * initial);  // it trained
  CHECK(std::fabs(bf16_loss - f32_loss) <= 0.01 * f32_loss);
  // f16 with the default scale: its first step overflows at 2^16 and is skipped (99 updates), then rounding in
  // f16 (2^-11) rather than bf16 (2^-8): a few percent.
  CHECK(std::fabs(f16_loss - f32_loss) <= 0.05 * f32_loss);
  CHECK(high_scaler.skipped_steps() >= 1);
  CHECK(high_scaler.get_scale() < 0x1p24);
  CHECK(high_loss < 0.5 * initial);
}
