// Side-by-side workload W12 (issue 29 item 6): a physics-informed Laplacian through vmap(hessian).
//   u(x) = w3 · tanh(tanh(x W1 + b1) W2 + b2) for x in 3-D (a 3-64-64-1 MLP, f32); the Laplacian
//   Δu = trace(hessian(u)(x)) at 256 points as vmap of the trace of the Hessian, the inner term
//   of a physics-informed loss.
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        the 256 Laplacians
//   fluxion_jit_fn / fluxion_eager_fn  u at the 256 points (vmap(u))
//   eigen / eigen_fn  by hand: second-order forward propagation through the two layers, batched
// References: the hand-written code in double precision on the f32-rounded values. The same
// workload in JAX and PyTorch: bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_laplacian
#include "workloads.hpp"

namespace bench_laplacian {

using wl::MatR;
using wl::RowVec;

constexpr int64_t kPoints = 256, kDim = 3, kWidth = 64;
// Inputs (bench/compare_common.py laplacian_data): X ~ U(-1, 1) (seed 12001), W1 ~ N(0, 1/3) (12002),
// b1 ~ N(0, 0.01) (12003), W2 ~ N(0, 1/64) (12004), b2 ~ N(0, 0.01) (12005), w3 ~ N(0, 1/64) (12006).
constexpr uint64_t kSeed = 12001;

// ---------------------------------------------------------------- Fluxion

struct Net {
  fx::Tensor W1, b1, W2, b2, w3;
  fx::Tensor operator()(const fx::Tensor& x) const {
    fx::Tensor h1 = fx::tanh(fx::matmul(x, W1) + b1);
    return fx::sum(fx::tanh(fx::matmul(h1, W2) + b2) * w3);
  }
};

fx::Tensor laplacians(const fx::Tensor& W1, const fx::Tensor& b1, const fx::Tensor& W2, const fx::Tensor& b2,
                      const fx::Tensor& w3, const fx::Tensor& X) {
  Net u{W1, b1, W2, b2, w3};
  fx::Tensor eye = fx::eye(kDim, fx::f32);
  return fx::vmap([&](const fx::Tensor& x) { return fx::sum(fx::hessian(u)(x) * eye); })(X);
}

fx::Tensor values(const fx::Tensor& W1, const fx::Tensor& b1, const fx::Tensor& W2, const fx::Tensor& b2,
                  const fx::Tensor& w3, const fx::Tensor& X) {
  return fx::vmap(Net{W1, b1, W2, b2, w3})(X);
}

// ---------------------------------------------------------------- by hand

/// u and Δu at every row of X. With t = tanh(z): t' = 1 - t², t'' = -2 t t'. Per input
/// direction i, z1 changes by W1[i, :] (second derivative 0), h1 by t1' ⊙ W1[i, :] and
/// t1'' ⊙ W1[i, :]²; z2 = h1 W2 is linear; so
///   Δu = [t2'' ⊙ Σ_i ((t1' ⊙ W1[i, :]) W2)² + t2' ⊙ ((t1'' ⊙ Σ_i W1[i, :]²) W2)] · w3.
template <class T> struct LaplacianByHand {
  MatR<T> W1, W2;
  RowVec<T> b1, b2, w3, s1;  // s1 = Σ_i W1[i, :]²
  MatR<T> t1, d1, t2, d2, g, acc, second;
  std::vector<T> u, lap;

  LaplacianByHand(const std::vector<std::vector<double>>& p) {
    W1 = wl::make_matrix<T>(p[0], kDim, kWidth);
    b1 = wl::make_matrix<T>(p[1], 1, kWidth);
    W2 = wl::make_matrix<T>(p[2], kWidth, kWidth);
    b2 = wl::make_matrix<T>(p[3], 1, kWidth);
    w3 = wl::make_matrix<T>(p[4], 1, kWidth);
    s1 = W1.colwise().squaredNorm();
  }
  void run(const MatR<T>& X, bool with_laplacian) {
    const Eigen::Index n = X.rows();
    t1.noalias() = X * W1;
    t1 = (t1.rowwise() + b1).array().tanh().matrix();
    t2.noalias() = t1 * W2;
    t2 = (t2.rowwise() + b2).array().tanh().matrix();
    u.resize(static_cast<size_t>(n));
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(u.data(), n).noalias() = t2 * w3.transpose();
    if (!with_laplacian) return;
    d1 = (1 - t1.array().square()).matrix();
    d2 = (1 - t2.array().square()).matrix();
    acc.setZero(n, kWidth);
    for (int64_t i = 0; i < kDim; ++i) {
      g.noalias() = (d1.array().rowwise() * W1.row(i).array()).matrix() * W2;
      acc += g.cwiseAbs2();
    }
    // t1'' ⊙ s1 = -2 t1 ⊙ t1' ⊙ s1; t2'' = -2 t2 ⊙ t2'.
    second = ((-2 * t1.array() * d1.array()).rowwise() * s1.array()).matrix();
    g.noalias() = second * W2;
    acc = (-2 * t2.array() * d2.array() * acc.array() + d2.array() * g.array()).matrix();
    lap.resize(static_cast<size_t>(n));
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(lap.data(), n).noalias() = acc * w3.transpose();
  }
};

// ---------------------------------------------------------------- data and checks

struct LaplacianData {
  std::vector<std::vector<double>> params;  // W1, b1, W2, b2, w3, rounded to f32
  std::vector<fx::Tensor> t;                // the same, then X
  MatR<float> Xf;
  std::vector<double> want_u, want_lap;

  LaplacianData() {
    const std::vector<std::vector<int64_t>> shapes{{kDim, kWidth}, {kWidth}, {kWidth, kWidth}, {kWidth}, {kWidth}};
    const double scale[5] = {1.0 / std::sqrt(double(kDim)), 0.1, 1.0 / std::sqrt(double(kWidth)), 0.1,
                             1.0 / std::sqrt(double(kWidth))};
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<double> v =
          wl::normal_values(shapes[i][0] * (shapes[i].size() > 1 ? shapes[i][1] : 1), kSeed + 1 + i, scale[i]);
      for (double& x : v) x = static_cast<float>(x);
      params.push_back(v);
      t.push_back(wl::make_tensor<float>(v, shapes[i]));
    }
    std::vector<double> xv = wl::uniform_values(kPoints * kDim, kSeed, -1.0, 1.0);
    t.push_back(wl::make_tensor<float>(xv, {kPoints, kDim}));
    Xf = wl::make_matrix<float>(xv, kPoints, kDim);
    LaplacianByHand<double> ref(params);
    ref.run(Xf.cast<double>(), true);
    want_u = ref.u;
    want_lap = ref.lap;
  }
  std::string check_u(const std::vector<double>& got) const { return wl::compare_values("u", got, want_u, 1e-5); }
  std::string check_lap(const std::vector<double>& got) const {
    return wl::compare_values("laplacian", got, want_lap, 1e-4);
  }
};

void register_w12() {
  auto data = wl::lazy<LaplacianData>();
  const std::string size =
      "/mlp:points=" + std::to_string(kPoints) + ",dim=" + std::to_string(kDim) + ",width=" + std::to_string(kWidth);
  auto check_lap = [data](const fx::Tensor& l) { return data->get().check_lap(wl::flat_values(l)); };
  auto check_u = [data](const fx::Tensor& u) { return data->get().check_u(wl::flat_values(u)); };
  auto args = [](const LaplacianData& d) { return std::make_tuple(d.t[0], d.t[1], d.t[2], d.t[3], d.t[4], d.t[5]); };
  wl::reg_jit_and_eager("W12", "", size, data, laplacians, args, check_lap, benchmark::kMicrosecond);
  wl::reg_jit_and_eager("W12", "_fn", size, data, values, args, check_u, benchmark::kMicrosecond);
  for (bool with_lap : {true, false}) {
    wl::reg(
        std::string("W12/eigen") + (with_lap ? "" : "_fn") + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          LaplacianByHand<float> e(d.params);
          wl::run_case(
              st,
              [&] {
                e.run(d.Xf, with_lap);
                return e.u.data();
              },
              [&](const float*) {
                return with_lap ? d.check_lap(std::vector<double>(e.lap.begin(), e.lap.end()))
                                : d.check_u(std::vector<double>(e.u.begin(), e.u.end()));
              });
        },
        benchmark::kMicrosecond);
  }
}

}  // namespace bench_laplacian

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_laplacian::register_w12(); });
}
