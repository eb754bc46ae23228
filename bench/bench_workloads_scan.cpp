// Side-by-side workload W9 (issue 5): scan over 1000 steps of a small state.
//   An RK4 integrator of the 4-dimensional ODE  dx/dt = tanh(W x + b) - gamma x  (f64), h = 0.01,
//   1000 steps via fx::scan; loss = sum(x_T^2); gradient w.r.t. theta = (W [4, 4], b [4]).
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        grad of the loss w.r.t. (W, b)
//   fluxion_jit_fn / fluxion_eager_fn  the loss
//   eigen_fn  the loss by hand (Eigen fixed-size 4x4, one loop)
//   eigen     the gradient by hand: the discrete adjoint of RK4 (stage inputs and tanh values
//             stored on the way forward, one reverse sweep)
// The hand-written gradient is checked against central finite differences of the hand-written loss
// (all 20 parameters, not timed); every Fluxion gradient row is checked against the hand-written
// gradient, every loss row against the hand-written loss. The same workload in JAX (lax.scan under
// jax.jit) and PyTorch (a Python loop): bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_scan
#include "workloads.hpp"

namespace bench_s {

constexpr int kN = 4;  // state dimension
constexpr int64_t kSteps = 1000;
constexpr double kH = 0.01;     // time step
constexpr double kGamma = 0.5;  // damping
// Inputs (bench/compare_common.py scan_data): W ~ N(0, 1/n), b ~ N(0, 0.01), x0 ~ N(0, 1).
constexpr uint64_t kSeedW = 9001, kSeedB = 9002, kSeedX = 9003;

// ---------------------------------------------------------------- Fluxion

fx::Tensor rhs(const fx::Tensor& W, const fx::Tensor& b, const fx::Tensor& x) {
  return fx::tanh(fx::matmul(W, x) + b) - kGamma * x;
}

/// sum(x_T^2) after kSteps RK4 steps from x0, as one fx::scan (no per-step outputs).
fx::Tensor loss(const fx::Tensor& W, const fx::Tensor& b, const fx::Tensor& x0) {
  auto step = [W, b](const fx::Tensor& x, const fx::Tensor&) {
    fx::Tensor k1 = rhs(W, b, x);
    fx::Tensor k2 = rhs(W, b, x + k1 * (kH / 2));
    fx::Tensor k3 = rhs(W, b, x + k2 * (kH / 2));
    fx::Tensor k4 = rhs(W, b, x + k3 * kH);
    return std::make_pair(x + (k1 + 2.0 * k2 + 2.0 * k3 + k4) * (kH / 6), std::tuple<>{});
  };
  fx::Tensor xT = fx::scan(step, x0, fx::zeros({kSteps}, fx::f64)).first;
  return fx::sum(xT * xT);
}

// ---------------------------------------------------------------- by hand

using Mat = Eigen::Matrix<double, kN, kN, Eigen::RowMajor>;
using V = Eigen::Matrix<double, kN, 1>;

inline V rhs_hand(const Mat& W, const V& b, const V& u, V& t) {
  t = (W * u + b).array().tanh().matrix();
  return t - kGamma * u;
}

double loss_hand(const Mat& W, const V& b, V x) {
  V t;
  for (int64_t i = 0; i < kSteps; ++i) {
    V k1 = rhs_hand(W, b, x, t);
    V k2 = rhs_hand(W, b, x + (kH / 2) * k1, t);
    V k3 = rhs_hand(W, b, x + (kH / 2) * k2, t);
    V k4 = rhs_hand(W, b, x + kH * k3, t);
    x += (kH / 6) * (k1 + 2 * k2 + 2 * k3 + k4);
  }
  return x.squaredNorm();
}

/// The discrete adjoint of the RK4 loop: the forward sweep stores each stage's input u and tanh
/// value t (kSteps x 4 stages, preallocated); the reverse sweep runs the stages backwards.
struct AdjointRk4 {
  std::vector<V, Eigen::aligned_allocator<V>> u, t;  // [step * 4 + stage]
  AdjointRk4() : u(4 * kSteps), t(4 * kSteps) {}

  /// Returns the loss; writes d loss / d W and d loss / d b.
  double run(const Mat& W, const V& b, const V& x0, Mat& gW, V& gb) {
    static constexpr double c_in[4] = {0, kH / 2, kH / 2, kH};  // stage s input: x + c_in[s] k_{s-1}
    V x = x0;
    for (int64_t i = 0; i < kSteps; ++i) {
      V k[4], sum = V::Zero();
      for (int s = 0; s < 4; ++s) {
        size_t j = static_cast<size_t>(4 * i + s);
        u[j] = s == 0 ? x : V(x + c_in[s] * k[s - 1]);
        k[s] = rhs_hand(W, b, u[j], t[j]);
        sum += (s == 0 || s == 3 ? 1.0 : 2.0) * k[s];
      }
      x += (kH / 6) * sum;
    }
    const double value = x.squaredNorm();
    gW.setZero();
    gb.setZero();
    V a = 2 * x;  // d loss / d x_T
    for (int64_t i = kSteps; i-- > 0;) {
      // x' = x + h/6 (k1 + 2 k2 + 2 k3 + k4), u_s = x + c_s k_{s-1}: stage 4 down to 1.
      V xbar = a, kbar = (kH / 6) * a;
      for (int s = 3; s >= 0; --s) {
        size_t j = static_cast<size_t>(4 * i + s);
        V dz = kbar.cwiseProduct((V::Ones() - t[j].cwiseAbs2()));
        gW.noalias() += dz * u[j].transpose();
        gb += dz;
        V ubar = W.transpose() * dz - kGamma * kbar;
        xbar += ubar;
        if (s > 0) kbar = (s == 1 ? kH / 6 : kH / 3) * a + c_in[s] * ubar;  // weights 1, 2, 2, 1
      }
      a = xbar;
    }
    return value;
  }
};

// ---------------------------------------------------------------- data and checks

struct ScanData {
  fx::Tensor W, b, x0;
  Mat We;
  V be, x0e;
  double want_value;
  std::vector<double> want_grad;  // W row-major, then b
  std::string grad_error;         // hand-written gradient vs finite differences ("" when they agree)

  ScanData() {
    std::vector<double> wv = wl::normal_values(kN * kN, kSeedW, 1.0 / std::sqrt(double(kN)));
    std::vector<double> bv = wl::normal_values(kN, kSeedB, 0.1), xv = wl::normal_values(kN, kSeedX, 1.0);
    W = wl::make_tensor<double>(wv, {kN, kN});
    b = wl::make_tensor<double>(bv, {kN});
    x0 = wl::make_tensor<double>(xv, {kN});
    We = Eigen::Map<const Mat>(wv.data());
    be = Eigen::Map<const V>(bv.data());
    x0e = Eigen::Map<const V>(xv.data());
    want_value = loss_hand(We, be, x0e);
    Mat gW;
    V gb;
    AdjointRk4 adj;
    adj.run(We, be, x0e, gW, gb);
    wl::append_values(gW, want_grad);
    wl::append_values(gb, want_grad);
    // Central differences of the hand-written loss at every parameter (step 1e-6: error ~1e-9).
    std::vector<double> fd;
    for (int p = 0; p < kN * kN + kN; ++p) {
      Mat Wp = We, Wm = We;
      V bp = be, bm = be;
      const double e = 1e-6;
      if (p < kN * kN) {
        Wp.data()[p] += e;
        Wm.data()[p] -= e;
      } else {
        bp[p - kN * kN] += e;
        bm[p - kN * kN] -= e;
      }
      fd.push_back((loss_hand(Wp, bp, x0e) - loss_hand(Wm, bm, x0e)) / (2 * e));
    }
    grad_error = wl::compare_values("hand-written adjoint vs finite differences", want_grad, fd, 1e-6);
  }

  std::string check_grad(const std::vector<double>& got) const {
    if (!grad_error.empty()) return grad_error;
    return wl::compare_values("grad", got, want_grad, 1e-9);
  }
  std::string check_value(double got) const { return wl::compare_values("loss", {got}, {want_value}, 1e-10); }
};

void register_w9() {
  auto data = wl::lazy<ScanData>();
  const std::string size = "/rk4:n=" + std::to_string(kN) + ",steps=" + std::to_string(kSteps);
  auto check_grad = [data](const std::tuple<fx::Tensor, fx::Tensor>& g) {
    return data->get().check_grad(wl::flat_values(g));
  };
  auto check_value = [data](const fx::Tensor& v) { return data->get().check_value(v.item<double>()); };
  wl::reg(
      "W9/fluxion_jit" + size,
      [=](benchmark::State& st) {
        const auto& d = data->get();
        auto g = fx::jit(fx::grad(loss, fx::argnums<0, 1>));
        wl::run_case(
            st, [&] { return g(d.W, d.b, d.x0); }, check_grad);
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W9/fluxion_eager" + size,
      [=](benchmark::State& st) {
        const auto& d = data->get();
        auto g = fx::grad(loss, fx::argnums<0, 1>);
        wl::run_case(
            st, [&] { return g(d.W, d.b, d.x0); }, check_grad);
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W9/fluxion_jit_fn" + size,
      [=](benchmark::State& st) {
        const auto& d = data->get();
        auto f = fx::jit(loss);
        wl::run_case(
            st, [&] { return f(d.W, d.b, d.x0); }, check_value);
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W9/fluxion_eager_fn" + size,
      [=](benchmark::State& st) {
        const auto& d = data->get();
        wl::run_case(
            st, [&] { return loss(d.W, d.b, d.x0); }, check_value);
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W9/eigen" + size,
      [=](benchmark::State& st) {
        const auto& d = data->get();
        AdjointRk4 adj;
        Mat gW;
        V gb;
        wl::run_case(
            st, [&] { return adj.run(d.We, d.be, d.x0e, gW, gb); },
            [&](double) {
              std::vector<double> got;
              wl::append_values(gW, got);
              wl::append_values(gb, got);
              return d.check_grad(got);
            });
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W9/eigen_fn" + size,
      [=](benchmark::State& st) {
        const auto& d = data->get();
        wl::run_case(
            st, [&] { return loss_hand(d.We, d.be, d.x0e); }, [&](double v) { return d.check_value(v); });
      },
      benchmark::kMicrosecond);
}

}  // namespace bench_s

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_s::register_w9(); });
}
