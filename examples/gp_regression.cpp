// Gaussian-process regression: fit the hyperparameters of an RBF kernel by gradient descent on the
// negative log marginal likelihood, computed with fx::linalg::cholesky and triangular solves (its log-determinant
// checked against fx::linalg::slogdet).
//
//   K = s² exp(-(xᵢ - xⱼ)² / (2 ℓ²)) + σ² I,  L = cholesky(K),  z = L⁻¹ y
//   NLL(θ) = ½ zᵀz + Σ log Lᵢᵢ + (n/2) log 2π,   θ = (log ℓ, log s², log σ²)
//
// The gradient (fx::value_and_grad under fx::jit) is checked against central finite differences at
// the start; the program exits with status 1 when they disagree beyond 1e-6 relative (f64).
// Run: build/examples/gp_regression
#include <fluxion/fluxion.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace fx = fluxion;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Deterministic standard normals (splitmix64 bits, Box-Muller), the same on every platform.
std::vector<double> normals(int64_t n, uint64_t seed) {
  auto next = [&seed] {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  std::vector<double> out;
  while (static_cast<int64_t>(out.size()) < n) {
    const double u = 1.0 - next(), v = next();
    out.push_back(std::sqrt(-2 * std::log(u)) * std::cos(2 * kPi * v));
  }
  return out;
}

/// The RBF covariance between the points a (n) and b (m): s² exp(-(aᵢ - bⱼ)² / (2 ℓ²)), (n, m).
fx::Tensor rbf(const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& lengthscale, const fx::Tensor& signal) {
  fx::Tensor d = fx::expand_dims(a, 1) - fx::expand_dims(b, 0);
  return signal * fx::exp(-fx::square(d) / (2.0 * fx::square(lengthscale)));
}

/// The negative log marginal likelihood of y at the points x, for θ = (log ℓ, log s², log σ²).
fx::Tensor nll(const fx::Tensor& theta, const fx::Tensor& x, const fx::Tensor& y) {
  const int64_t n = x.shape()[0];
  fx::Tensor p = fx::exp(theta);
  fx::Tensor lengthscale = fx::reshape(fx::slice(p, {0}, {1}), {});
  fx::Tensor signal = fx::reshape(fx::slice(p, {1}, {2}), {});
  fx::Tensor noise = fx::reshape(fx::slice(p, {2}, {3}), {});
  fx::Tensor identity = fx::eye(n);
  fx::Tensor k = rbf(x, x, lengthscale, signal) + noise * identity;
  fx::Tensor l = fx::linalg::cholesky(k);
  fx::Tensor z = fx::linalg::triangular_solve(l, fx::reshape(y, {n, 1}));  // L⁻¹ y
  // log det K = 2 Σ log Lᵢᵢ; the diagonal is read through the identity mask.
  fx::Tensor half_log_det = fx::sum(fx::log(fx::sum(l * identity, {1})));
  return 0.5 * fx::sum(fx::square(z)) + half_log_det + 0.5 * static_cast<double>(n) * std::log(2 * kPi);
}

}  // namespace

int main() {
  // 50 noisy observations of sin(2x) + x/2 on [-3, 3]; noise standard deviation 0.2.
  const int64_t n = 50;
  fx::Tensor x = fx::linspace(-3.0, 3.0, n);
  fx::Tensor noise = fx::from_vector(normals(n, 2026), fx::Shape{n});
  fx::Tensor y = fx::sin(2.0 * x) + 0.5 * x + 0.2 * noise;

  auto loss = [x, y](const fx::Tensor& theta) { return nll(theta, x, y); };
  auto step = fx::jit(fx::value_and_grad(loss));

  // Start from ℓ = 1, s² = 1, σ² = 0.5.
  fx::Tensor theta = fx::tensor({0.0, 0.0, std::log(0.5)});

  // The gradient against central differences of the NLL (f64, step 1e-5).
  auto [value0, grad0] = step(theta);
  std::vector<double> g = grad0.to_vector<double>(), t = theta.to_vector<double>();
  bool agree = true;
  std::printf("NLL at the start: %.6f\n", value0.item<double>());
  std::printf("%-22s %16s %16s %10s\n", "parameter", "grad", "finite diff", "rel. err");
  const char* names[] = {"log lengthscale", "log signal variance", "log noise variance"};
  for (int i = 0; i < 3; ++i) {
    const double h = 1e-5;
    std::vector<double> up = t, down = t;
    up[static_cast<size_t>(i)] += h;
    down[static_cast<size_t>(i)] -= h;
    const double fd = (loss(fx::from_vector(up)).item<double>() - loss(fx::from_vector(down)).item<double>()) / (2 * h);
    const double gi = g[static_cast<size_t>(i)];
    const double rel = std::fabs(gi - fd) / std::max(std::fabs(fd), 1e-12);
    std::printf("%-22s %16.9f %16.9f %10.2e\n", names[i], gi, fd, rel);
    if (!(rel <= 1e-6)) agree = false;
  }
  if (!agree) {
    std::printf("FAILED: the gradient disagrees with finite differences beyond 1e-6 relative\n");
    return 1;
  }

  // Gradient descent on θ.
  const double learning_rate = 0.01;
  fx::Tensor value = value0;
  for (int it = 0; it <= 500; ++it) {
    auto [v, grad] = step(theta);
    value = v;
    if (it % 100 == 0) std::printf("step %3d  NLL %.6f\n", it, v.item<double>());
    theta = theta - learning_rate * grad;
  }
  std::vector<double> fitted = fx::exp(theta).to_vector<double>();
  std::printf("fitted lengthscale %.4f, signal variance %.4f, noise variance %.4f (true noise variance 0.04)\n",
              fitted[0], fitted[1], fitted[2]);
  std::printf("final NLL %.6f\n", nll(theta, x, y).item<double>());

  // The posterior mean at a few new points: K(x*, x) (K + σ² I)⁻¹ y through cho_solve.
  fx::Tensor p = fx::exp(theta);
  fx::Tensor l_ = fx::reshape(fx::slice(p, {0}, {1}), {}), s_ = fx::reshape(fx::slice(p, {1}, {2}), {});
  fx::Tensor k = rbf(x, x, l_, s_) + fx::reshape(fx::slice(p, {2}, {3}), {}) * fx::eye(n);
  fx::Tensor chol = fx::linalg::cholesky(k);
  fx::Tensor alpha = fx::linalg::cho_solve(chol, y);
  // log det K through the Cholesky diagonal (what the NLL uses) against fx::linalg::slogdet (an LU).
  auto [sign, log_abs_det] = fx::linalg::slogdet(k);
  const double by_cholesky = 2 * fx::sum(fx::log(fx::sum(chol * fx::eye(n), {1}))).item<double>();
  std::printf("log det K: %.10f by Cholesky, %.10f by slogdet (sign %+.0f)\n", by_cholesky, log_abs_det.item<double>(),
              sign.item<double>());
  if (!(std::fabs(by_cholesky - log_abs_det.item<double>()) <= 1e-9 * std::fabs(by_cholesky)) ||
      sign.item<double>() != 1.0) {
    std::printf("FAILED: the two log-determinants disagree\n");
    return 1;
  }
  fx::Tensor xs = fx::tensor({-2.0, 0.0, 2.0});
  std::vector<double> mean = fx::matmul(rbf(xs, x, l_, s_), alpha).to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    const double at = -2.0 + 2.0 * i;
    std::printf("posterior mean at %+.1f: %.4f   (sin(2x) + x/2 = %.4f)\n", at, mean[static_cast<size_t>(i)],
                std::sin(2 * at) + at / 2);
  }
  return 0;
}
