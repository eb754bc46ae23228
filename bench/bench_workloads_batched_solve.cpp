// Side-by-side workload W15 (issue 34): many small linear solves under vmap.
//   x_i = A_i⁻¹ b_i for 4096 systems of size n = 4 or 8 (f64), written as vmap(solve) of one system;
//   loss = sum_i |x_i|². Small dense systems by the thousand: per-element Newton steps, Kalman
//   updates, finite-element assembly, rigid-body dynamics.
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        grad of the loss w.r.t. (A, b)
//   fluxion_jit_fn / fluxion_eager_fn  the solutions x [4096, n]
//   eigen / eigen_fn  by hand: a fixed-size partial-pivoting LU per system; the gradient
//                     ḃ = A⁻ᵀ (2 x), Ā = -ḃ xᵀ with the same factorization
// Reference: the hand-written code (f64). The same workload in JAX and PyTorch: bench/compare_jax.py,
// bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_batched_solve
#include "workloads.hpp"

namespace bench_batched_solve {

constexpr int64_t kSystems = 4096;
// Inputs (bench/compare_common.py batched_solve_data): A_i = I + N(0, 0.25 / n) (seed 15001),
// b ~ N(0, 1) (15002).
constexpr uint64_t kSeedA = 15001, kSeedB = 15002;

// ---------------------------------------------------------------- Fluxion

fx::Tensor solve_one(const fx::Tensor& a, const fx::Tensor& b) { return fx::solve(a, b); }

fx::Tensor solve_all(const fx::Tensor& A, const fx::Tensor& b) { return fx::vmap(solve_one)(A, b); }

fx::Tensor solve_loss(const fx::Tensor& A, const fx::Tensor& b) {
  fx::Tensor x = solve_all(A, b);
  return fx::sum(x * x);
}

// ---------------------------------------------------------------- by hand

/// Solutions (and with `with_grad` the gradient of sum |x_i|²) for systems of fixed size N.
template <int N> struct SolvesByHand {
  using Mat = Eigen::Matrix<double, N, N, Eigen::RowMajor>;
  using V = Eigen::Matrix<double, N, 1>;
  std::vector<double> x, dA, db;

  void run(const double* A, const double* b, int64_t count, bool with_grad) {
    x.resize(size_t(count * N));
    if (with_grad) {
      dA.resize(size_t(count * N * N));
      db.resize(size_t(count * N));
    }
    Eigen::PartialPivLU<Mat> lu;
    for (int64_t i = 0; i < count; ++i) {
      lu.compute(Eigen::Map<const Mat>(A + i * N * N));
      Eigen::Map<V> xi(x.data() + i * N);
      xi = lu.solve(Eigen::Map<const V>(b + i * N));
      if (!with_grad) continue;
      Eigen::Map<V> dbi(db.data() + i * N);
      dbi = lu.transpose().solve(2.0 * xi);
      Eigen::Map<Mat>(dA.data() + i * N * N).noalias() = -dbi * xi.transpose();
    }
  }
  std::vector<double> grad_values() const {
    std::vector<double> g(dA);
    g.insert(g.end(), db.begin(), db.end());
    return g;
  }
};

// ---------------------------------------------------------------- data and checks

struct SolveData {
  int64_t n;
  fx::Tensor A, b;
  std::vector<double> Av, bv, want_x, want_grad;

  explicit SolveData(int64_t n_) : n(n_) {
    Av = wl::normal_values(kSystems * n * n, kSeedA, 0.5 / std::sqrt(double(n)));
    for (int64_t i = 0; i < kSystems; ++i)
      for (int64_t j = 0; j < n; ++j) Av[size_t(i * n * n + j * n + j)] += 1.0;
    bv = wl::normal_values(kSystems * n, kSeedB);
    A = wl::make_tensor<double>(Av, {kSystems, n, n});
    b = wl::make_tensor<double>(bv, {kSystems, n});
    run_by_hand(
        [&](auto& ref) {
          want_x = ref.x;
          want_grad = ref.grad_values();
        },
        true);
  }
  /// Runs the fixed-size solver of this n and hands it to `use`.
  template <class Use> void run_by_hand(Use&& use, bool with_grad) const {
    if (n == 4) {
      SolvesByHand<4> e;
      e.run(Av.data(), bv.data(), kSystems, with_grad);
      use(e);
    } else if (n == 8) {
      SolvesByHand<8> e;
      e.run(Av.data(), bv.data(), kSystems, with_grad);
      use(e);
    } else {
      throw std::runtime_error("W15: no fixed-size solver for n = " + std::to_string(n));
    }
  }
  std::string check_x(const std::vector<double>& got) const { return wl::compare_values("x", got, want_x, 1e-10); }
  std::string check_grad(const std::vector<double>& got) const {
    return wl::compare_values("grad", got, want_grad, 1e-10);
  }
};

/// The hand-written row for systems of size N.
template <int N> void register_by_hand(const std::string& size, std::shared_ptr<wl::Lazy<SolveData>> data) {
  for (bool with_grad : {true, false}) {
    wl::reg(
        "W15/eigen" + std::string(with_grad ? "" : "_fn") + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          SolvesByHand<N> e;
          wl::run_case(
              st,
              [&] {
                e.run(d.Av.data(), d.bv.data(), kSystems, with_grad);
                return e.x.data();
              },
              [&](const double*) { return with_grad ? d.check_grad(e.grad_values()) : d.check_x(e.x); });
        },
        benchmark::kMicrosecond);
  }
}

void register_w15() {
  for (int64_t n : {4, 8}) {
    auto data = wl::lazy<SolveData>(n);
    const std::string size = "/batch=" + std::to_string(kSystems) + ",n=" + std::to_string(n);
    using Grads = std::tuple<fx::Tensor, fx::Tensor>;
    auto check_grad = [data](const Grads& g) { return data->get().check_grad(wl::flat_values(g)); };
    auto check_x = [data](const fx::Tensor& x) { return data->get().check_x(wl::flat_values(x)); };
    auto args = [](const SolveData& d) { return std::make_tuple(d.A, d.b); };
    wl::reg_jit_and_eager("W15", "", size, data, fx::grad(solve_loss, fx::argnums<0, 1>), args, check_grad,
                          benchmark::kMicrosecond);
    wl::reg_jit_and_eager("W15", "_fn", size, data, solve_all, args, check_x, benchmark::kMicrosecond);
    if (n == 4) register_by_hand<4>(size, data);
    else register_by_hand<8>(size, data);
  }
}

}  // namespace bench_batched_solve

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_batched_solve::register_w15(); });
}
