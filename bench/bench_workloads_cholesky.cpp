// Side-by-side workload Wchol (issue 31): Cholesky factorization and the gradient of a log-determinant,
// f64. NOT BUILT YET: it needs fx::linalg::cholesky (include/fluxion/linalg_triangular.hpp, another
// branch); bench/CMakeLists.txt leaves it out until that merges.
//   A = X Xᵀ / n + I, X ~ N(0, 1) (seed 31003), n = 32 and 128: symmetric positive definite.
//   fn:   L = cholesky(A)
//   grad: ∇ log det A = ∇ 2 Σ log L_ii = A⁻¹ (cholesky symmetrizes its input, as JAX's does)
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager  (and _fn for the factorization)
//   eigen  by hand: Eigen's LLT, and its inverse for the gradient
//   ./build-bench/bench/bench_workloads_cholesky
#include "workloads.hpp"

namespace bench_cholesky {

using wl::MatR;
using ColMat = Eigen::MatrixXd;

fx::Tensor cholesky_fn(const fx::Tensor& a) { return fx::linalg::cholesky(a); }

fx::Tensor logdet_grad(const fx::Tensor& a) {
  return fx::grad([](const fx::Tensor& x) {
    const int64_t n = x.shape()[0];
    fx::Tensor l = fx::linalg::cholesky(x);
    return 2.0 * fx::sum(fx::log(fx::sum(l * fx::eye(n), {1})));
  })(a);
}

struct SpdData {
  int64_t n;
  fx::Tensor a;
  ColMat ae;
  std::vector<double> factor, inverse;

  explicit SpdData(int64_t n_) : n(n_) {
    std::vector<double> x = wl::normal_values(n * n, 31003);
    MatR<double> xm = Eigen::Map<MatR<double>>(x.data(), n, n);
    MatR<double> am = xm * xm.transpose() / double(n) + MatR<double>::Identity(n, n);
    ae = am;
    a = wl::make_tensor<double>(std::vector<double>(am.data(), am.data() + n * n), {n, n});
    Eigen::LLT<ColMat> llt(ae);
    wl::append_values(ColMat(llt.matrixL()), factor);
    wl::append_values(ColMat(llt.solve(ColMat::Identity(n, n))), inverse);
  }
};

void register_cholesky() {
  for (int64_t n : {32, 128}) {
    const std::string size = "/n=" + std::to_string(n);
    auto data = wl::lazy<SpdData>(n);
    auto arg = [](const SpdData& d) { return std::make_tuple(d.a); };
    wl::reg_jit_and_eager("Wchol", "", size, data, logdet_grad, arg, [data](const fx::Tensor& g) {
      return wl::compare_values("gradient", wl::flat_values(g), data->get().inverse, 1e-10);
    });
    wl::reg_jit_and_eager("Wchol", "_fn", size, data, cholesky_fn, arg, [data](const fx::Tensor& l) {
      return wl::compare_values("factor", wl::flat_values(l), data->get().factor, 1e-12);
    });
    wl::reg("Wchol/eigen" + size, [data](benchmark::State& st) {
      const SpdData& d = data->get();
      Eigen::LLT<ColMat> llt(d.n);
      MatR<double> g;
      wl::run_case(
          st,
          [&] {
            llt.compute(d.ae);
            g = llt.solve(ColMat::Identity(d.n, d.n));
            return g.data();
          },
          [&](const double*) {
            std::vector<double> v;
            wl::append_values(g, v);
            return wl::compare_values("gradient", v, d.inverse, 1e-10);
          });
    });
    wl::reg("Wchol/eigen_fn" + size, [data](benchmark::State& st) {
      const SpdData& d = data->get();
      Eigen::LLT<ColMat> llt(d.n);
      wl::run_case(
          st,
          [&] {
            llt.compute(d.ae);
            return llt.matrixLLT().data();
          },
          [&](const double*) {
            std::vector<double> v;
            wl::append_values(ColMat(llt.matrixL()), v);
            return wl::compare_values("factor", v, d.factor, 1e-12);
          });
    });
  }
}

}  // namespace bench_cholesky

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_cholesky::register_cholesky(); });
}
