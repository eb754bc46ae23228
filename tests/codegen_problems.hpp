// The two programs emit_cpp is measured on (tests/test_codegen.cpp, bench/codegen_vs_jit.cpp): the
// gradient of a 2-layer tanh MLP's mean squared error, and a damped pendulum integrated with RK4
// in fx::scan.
#pragma once
#include <fluxion/fluxion.hpp>

#include "passes/passes.hpp"

namespace fluxion::testing::codegen_problems {

/// mean((tanh(x W1 + b1) W2 + b2 - y)^2)
inline Tensor mlp_loss(const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2, const Tensor& x,
                       const Tensor& y) {
  Tensor h = fluxion::tanh(matmul(x, w1) + b1);
  return mean(square(matmul(h, w2) + b2 - y));
}

/// The gradient with respect to the four parameters, as fx::jit runs it.
inline auto mlp_grad() { return grad(&mlp_loss, argnums<0, 1, 2, 3>); }

/// Deterministic values uniform in [lo, hi) (a 64-bit LCG), of `dtype`.
inline Tensor pseudo_random(const Shape& shape, DType dtype, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (double& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<double>(state >> 11) * 0x1p-53;
  }
  return astype(from_vector(v, shape), dtype);
}

/// (w1, b1, w2, b2, x, y) for a batch of `batch` examples with `in` features, `hidden` units and
/// `out` targets, deterministic.
inline std::vector<Tensor> mlp_args(int64_t batch, int64_t in, int64_t hidden, int64_t out, DType dtype) {
  return {pseudo_random({in, hidden}, dtype, 1, -0.5, 0.5),
          pseudo_random({hidden}, dtype, 2, -0.1, 0.1),
          pseudo_random({hidden, out}, dtype, 3, -0.5, 0.5),
          pseudo_random({out}, dtype, 4, -0.1, 0.1),
          pseudo_random({batch, in}, dtype, 5),
          pseudo_random({batch, out}, dtype, 6)};
}

/// The damped pendulum theta'' = -k sin(theta) - c theta' (params = (k, c)) from state s0 = (theta,
/// omega), `steps` RK4 steps of `dt`: (final state, theta after each step).
inline std::pair<Tensor, Tensor> pendulum_rk4(const Tensor& params, const Tensor& s0, int64_t steps, double dt) {
  auto rhs = [params](const Tensor& s) {
    Tensor th = slice(s, {0}, {1}), om = slice(s, {1}, {2});
    Tensor k = slice(params, {0}, {1}), c = slice(params, {1}, {2});
    return concatenate({om, -k * fluxion::sin(th) - c * om}, 0);
  };
  auto step = [rhs, dt](const Tensor& s, const Tensor&) {
    Tensor k1 = rhs(s), k2 = rhs(s + k1 * (dt / 2)), k3 = rhs(s + k2 * (dt / 2)), k4 = rhs(s + k3 * dt);
    Tensor next = s + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (dt / 6);
    return std::make_pair(next, slice(next, {0}, {1}));
  };
  return scan(step, s0, zeros({steps}, f64));
}

/// fx::jit's optimized Jaxprs of the two (make_jaxpr, then the pipeline jit runs).
inline Jaxpr mlp_grad_jaxpr(const std::vector<Tensor>& a) {
  return passes::optimize_for_execution(make_jaxpr(mlp_grad())(a[0], a[1], a[2], a[3], a[4], a[5]));
}
inline Jaxpr pendulum_jaxpr(const Tensor& params, const Tensor& s0, int64_t steps, double dt) {
  auto f = [steps, dt](const Tensor& p, const Tensor& s) { return pendulum_rk4(p, s, steps, dt); };
  return passes::optimize_for_execution(make_jaxpr(f)(params, s0));
}

}  // namespace fluxion::testing::codegen_problems
