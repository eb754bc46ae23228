// Side-by-side workload W13 (issue 29 item 6): a nonlinear least-squares Jacobian.
//   A sum of K exponential decays fitted to m = 256 samples (f64): residual
//   r(p) = E(λ) a - y with E[i, k] = exp(-λ_k t_i), p = (a, λ) of 2K = 50 or 200 parameters;
//   one Gauss-Newton step's normal equations: J = ∂r/∂p by jacfwd or jacrev, then (JᵀJ, Jᵀr).
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager  (JᵀJ, Jᵀr) with J from jacfwd or jacrev (size "jacfwd:..." / "jacrev:...")
//   eigen  by hand: the analytic J = [E, -a_k t_i E[i, k]], one GEMM (one row per size, shared by
//          both modes in the table)
// References: the analytic J in f64, plainly. The same workload in JAX and PyTorch:
// bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_least_squares
#include "workloads.hpp"

namespace bench_least_squares {

using wl::MatR;
using wl::Vec;

constexpr int64_t kSamples = 256;
// Inputs (bench/compare_common.py decay_data): t = 4 i / (m - 1); y = 1.5 exp(-0.7 t) + 0.5 exp(-2.5 t)
// + N(0, 1e-4) (seed 13001); a ~ U(0.5, 1.5) / K (13002), λ ~ U(0.1, 3) (13003).
constexpr uint64_t kSeed = 13001;

// ---------------------------------------------------------------- Fluxion

fx::Tensor residual(const fx::Tensor& p, const fx::Tensor& t, const fx::Tensor& y) {
  const int64_t K = p.shape()[0] / 2;
  fx::Tensor a = fx::slice(p, {0}, {K}), lambda = fx::slice(p, {K}, {2 * K});
  return fx::matmul(fx::exp(-fx::outer(t, lambda)), a) - y;
}

/// (JᵀJ, Jᵀr) at p, J from fx::jacfwd (Forward) or fx::jacrev.
template <bool Forward>
std::pair<fx::Tensor, fx::Tensor> normal_equations(const fx::Tensor& p, const fx::Tensor& t, const fx::Tensor& y) {
  auto r_of = [&](const fx::Tensor& q) { return residual(q, t, y); };
  fx::Tensor J = Forward ? fx::jacfwd(r_of)(p) : fx::jacrev(r_of)(p);
  return {fx::matmul(fx::transpose(J), J), fx::matmul(r_of(p), J)};
}

// ---------------------------------------------------------------- by hand

struct NormalEquationsByHand {
  MatR<double> J, JtJ;
  Vec<double> r, Jtr;
  void run(const Vec<double>& p, const Vec<double>& t, const Vec<double>& y) {
    const Eigen::Index K = p.size() / 2, m = t.size();
    J.resize(m, 2 * K);
    for (Eigen::Index i = 0; i < m; ++i)
      for (Eigen::Index k = 0; k < K; ++k) {
        double e = std::exp(-p[K + k] * t[i]);
        J(i, k) = e;
        J(i, K + k) = -p[k] * t[i] * e;
      }
    r.noalias() = J.leftCols(K) * p.head(K);
    r -= y;
    JtJ.noalias() = J.transpose() * J;
    Jtr.noalias() = J.transpose() * r;
  }
  std::vector<double> values() const {
    std::vector<double> v;
    wl::append_values(JtJ, v);
    wl::append_values(Jtr.transpose(), v);
    return v;
  }
};

// ---------------------------------------------------------------- data and checks

struct DecayData {
  int64_t K;
  fx::Tensor p, t, y;
  Vec<double> pe, te, ye;
  std::vector<double> want;

  explicit DecayData(int64_t K_) : K(K_) {
    std::vector<double> tv(kSamples), yv = wl::normal_values(kSamples, kSeed, 0.01);
    for (int64_t i = 0; i < kSamples; ++i) {
      double ti = 4.0 * double(i) / double(kSamples - 1);
      tv[size_t(i)] = ti;
      yv[size_t(i)] += 1.5 * std::exp(-0.7 * ti) + 0.5 * std::exp(-2.5 * ti);
    }
    std::vector<double> pv = wl::uniform_values(K, kSeed + 1, 0.5, 1.5),
                        lv = wl::uniform_values(K, kSeed + 2, 0.1, 3.0);
    for (double& a : pv) a /= double(K);
    pv.insert(pv.end(), lv.begin(), lv.end());
    p = wl::make_tensor<double>(pv, {2 * K});
    t = wl::make_tensor<double>(tv, {kSamples});
    y = wl::make_tensor<double>(yv, {kSamples});
    pe = Eigen::Map<const Vec<double>>(pv.data(), 2 * K);
    te = Eigen::Map<const Vec<double>>(tv.data(), kSamples);
    ye = Eigen::Map<const Vec<double>>(yv.data(), kSamples);
    NormalEquationsByHand ref;
    ref.run(pe, te, ye);
    want = ref.values();
  }
  std::string check(const std::vector<double>& got) const { return wl::compare_values("(JᵀJ, Jᵀr)", got, want, 1e-10); }
};

void register_w13() {
  using Fn = std::pair<fx::Tensor, fx::Tensor> (*)(const fx::Tensor&, const fx::Tensor&, const fx::Tensor&);
  const std::pair<const char*, Fn> modes[] = {{"jacfwd", normal_equations<true>}, {"jacrev", normal_equations<false>}};
  for (int64_t K : {25, 100}) {
    auto data = wl::lazy<DecayData>(K);
    const std::string shape = "K=" + std::to_string(K) + ",m=" + std::to_string(kSamples);
    auto check = [data](const std::pair<fx::Tensor, fx::Tensor>& ne) { return data->get().check(wl::flat_values(ne)); };
    for (const auto& [mode, fn] : modes) {
      const std::string size = std::string("/") + mode + ":" + shape;
      auto args = [](const DecayData& d) { return std::make_tuple(d.p, d.t, d.y); };
      wl::reg_jit_and_eager("W13", "", size, data, fn, args, check, benchmark::kMicrosecond);
    }
    // One hand-written row per size: the analytic Jacobian does not depend on the AD mode.
    wl::reg(
        "W13/eigen/" + shape,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          NormalEquationsByHand e;
          wl::run_case(
              st,
              [&] {
                e.run(d.pe, d.te, d.ye);
                return e.JtJ.data();
              },
              [&](const double*) { return d.check(e.values()); });
        },
        benchmark::kMicrosecond);
  }
}

}  // namespace bench_least_squares

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_least_squares::register_w13(); });
}
