// Side-by-side workloads Weigh and Wsvd (issue 31): symmetric eigendecomposition and singular value
// decomposition, forward and reverse mode, f64.
//   Weigh  A = (X + Xᵀ) / (2 √n), X ~ N(0, 1) (seed 31001), n = 32 and 128.
//          fn:   (w, v) = eigh(A)
//          grad: ∇ Σ sin(w_i(A)) = V diag(cos w) Vᵀ
//   Wsvd   A = X / √n, X ~ N(0, 1) (seed 31002), n x n with n = 32 and 128.
//          fn:   (u, s, vt) = svd(A) (reduced)
//          grad: ∇ Σ s_i(A) (the nuclear norm) = U Vᵀ, through svdvals
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager  (and _fn for the forward decomposition)
//   eigen  by hand: Eigen's SelfAdjointEigenSolver / BDCSVD and the closed-form gradient
// Checks: the forward rows by their defining identities (A v = v diag(w), vᵀv = I; u diag(s) vt = A)
// and their values against Eigen's; the gradients against the closed forms. The sum of |values|
// compared across frameworks does not depend on their sign conventions.
//   ./build-bench/bench/bench_workloads_linalg
#include "workloads.hpp"

namespace bench_linalg {

using wl::MatR;
using wl::Vec;
using ColMat = Eigen::MatrixXd;

// ---------------------------------------------------------------- Fluxion

std::pair<fx::Tensor, fx::Tensor> eigh_fn(const fx::Tensor& a) { return fx::linalg::eigh(a); }

fx::Tensor eigh_grad(const fx::Tensor& a) {
  return fx::grad([](const fx::Tensor& x) { return fx::sum(fx::sin(fx::linalg::eigh(x).first)); })(a);
}

std::tuple<fx::Tensor, fx::Tensor, fx::Tensor> svd_fn(const fx::Tensor& a) { return fx::linalg::svd(a); }

fx::Tensor svd_grad(const fx::Tensor& a) {
  return fx::grad([](const fx::Tensor& x) { return fx::sum(fx::linalg::svdvals(x)); })(a);
}

// ---------------------------------------------------------------- data and checks

/// "" when |x| <= tol (x a norm of a residual).
std::string small(const char* what, double x, double tol) {
  if (x <= tol) return "";
  std::ostringstream os;
  os << what << ": residual " << x << " above " << tol;
  return os.str();
}

struct LinalgData {
  int64_t n;
  bool symmetric;
  fx::Tensor a;
  ColMat ae;
  std::vector<double> values, grad;  // Eigen's eigenvalues / singular values, and the closed-form gradient

  LinalgData(int64_t n_, bool symmetric_) : n(n_), symmetric(symmetric_) {
    std::vector<double> x = wl::normal_values(n * n, symmetric ? 31001 : 31002);
    MatR<double> xm = Eigen::Map<MatR<double>>(x.data(), n, n);
    const double scale = 1 / std::sqrt(static_cast<double>(n));
    MatR<double> am = symmetric ? MatR<double>((xm + xm.transpose()) * (scale / 2)) : MatR<double>(xm * scale);
    ae = am;
    a = wl::make_tensor<double>(std::vector<double>(am.data(), am.data() + n * n), {n, n});
    MatR<double> g;
    if (symmetric) {
      Eigen::SelfAdjointEigenSolver<ColMat> es(ae);
      g = es.eigenvectors() * es.eigenvalues().array().cos().matrix().asDiagonal() * es.eigenvectors().transpose();
      wl::append_values(es.eigenvalues().transpose(), values);
    } else {
      Eigen::BDCSVD<ColMat> sv(ae, Eigen::ComputeThinU | Eigen::ComputeThinV);
      g = sv.matrixU() * sv.matrixV().transpose();
      wl::append_values(sv.singularValues().transpose(), values);
    }
    wl::append_values(g, grad);
  }

  std::string check_grad(const fx::Tensor& g) const {
    return wl::compare_values("gradient", wl::flat_values(g), grad, 1e-9);
  }

  std::string check_eigh(const std::pair<fx::Tensor, fx::Tensor>& r) const {
    std::string e = wl::compare_values("eigenvalues", wl::flat_values(r.first), values, 1e-12);
    if (!e.empty()) return e;
    ColMat v = fx::to_eigen<double>(r.second);
    Vec<double> w = Eigen::Map<const Vec<double>>(values.data(), n);
    std::string f = small("A v - v diag(w)", (ae * v - v * w.asDiagonal()).norm(), 1e-12 * double(n));
    return f.empty() ? small("vᵀv - I", (v.transpose() * v - ColMat::Identity(n, n)).norm(), 1e-12 * double(n)) : f;
  }

  std::string check_svd(const std::tuple<fx::Tensor, fx::Tensor, fx::Tensor>& r) const {
    std::string e = wl::compare_values("singular values", wl::flat_values(std::get<1>(r)), values, 1e-12);
    if (!e.empty()) return e;
    ColMat u = fx::to_eigen<double>(std::get<0>(r)), vt = fx::to_eigen<double>(std::get<2>(r));
    Vec<double> s = Eigen::Map<const Vec<double>>(values.data(), n);
    return small("u diag(s) vt - A", (u * s.asDiagonal() * vt - ae).norm(), 1e-12 * double(n));
  }
};

// ---------------------------------------------------------------- registration

void register_eigh_and_svd() {
  for (int64_t n : {32, 128}) {
    const std::string size = "/n=" + std::to_string(n);
    auto sym = wl::lazy<LinalgData>(n, true);
    auto gen = wl::lazy<LinalgData>(n, false);
    auto arg = [](const LinalgData& d) { return std::make_tuple(d.a); };
    wl::reg_jit_and_eager("Weigh", "", size, sym, eigh_grad, arg,
                          [sym](const fx::Tensor& g) { return sym->get().check_grad(g); });
    wl::reg_jit_and_eager("Weigh", "_fn", size, sym, eigh_fn, arg,
                          [sym](const std::pair<fx::Tensor, fx::Tensor>& r) { return sym->get().check_eigh(r); });
    wl::reg_jit_and_eager("Wsvd", "", size, gen, svd_grad, arg,
                          [gen](const fx::Tensor& g) { return gen->get().check_grad(g); });
    wl::reg_jit_and_eager(
        "Wsvd", "_fn", size, gen, svd_fn, arg,
        [gen](const std::tuple<fx::Tensor, fx::Tensor, fx::Tensor>& r) { return gen->get().check_svd(r); });

    // By hand: Eigen's solvers, and the closed-form gradients from them.
    wl::reg("Weigh/eigen" + size, [sym](benchmark::State& st) {
      const LinalgData& d = sym->get();
      Eigen::SelfAdjointEigenSolver<ColMat> es(d.n);
      MatR<double> g;
      wl::run_case(
          st,
          [&] {
            es.compute(d.ae);
            g = es.eigenvectors() * es.eigenvalues().array().cos().matrix().asDiagonal() *
                es.eigenvectors().transpose();
            return g.data();
          },
          [&](const double*) {
            std::vector<double> v;
            wl::append_values(g, v);
            return wl::compare_values("gradient", v, d.grad, 1e-9);
          });
    });
    wl::reg("Weigh/eigen_fn" + size, [sym](benchmark::State& st) {
      const LinalgData& d = sym->get();
      Eigen::SelfAdjointEigenSolver<ColMat> es(d.n);
      wl::run_case(
          st,
          [&] {
            es.compute(d.ae);
            return es.eigenvalues().data();
          },
          [&](const double*) {
            std::vector<double> v;
            wl::append_values(es.eigenvalues().transpose(), v);
            return wl::compare_values("eigenvalues", v, d.values, 1e-12);
          });
    });
    wl::reg("Wsvd/eigen" + size, [gen](benchmark::State& st) {
      const LinalgData& d = gen->get();
      Eigen::BDCSVD<ColMat> sv(d.n, d.n, Eigen::ComputeThinU | Eigen::ComputeThinV);
      MatR<double> g;
      wl::run_case(
          st,
          [&] {
            sv.compute(d.ae, Eigen::ComputeThinU | Eigen::ComputeThinV);
            g = sv.matrixU() * sv.matrixV().transpose();
            return g.data();
          },
          [&](const double*) {
            std::vector<double> v;
            wl::append_values(g, v);
            return wl::compare_values("gradient", v, d.grad, 1e-9);
          });
    });
    wl::reg("Wsvd/eigen_fn" + size, [gen](benchmark::State& st) {
      const LinalgData& d = gen->get();
      Eigen::BDCSVD<ColMat> sv(d.n, d.n, Eigen::ComputeThinU | Eigen::ComputeThinV);
      wl::run_case(
          st,
          [&] {
            sv.compute(d.ae, Eigen::ComputeThinU | Eigen::ComputeThinV);
            return sv.singularValues().data();
          },
          [&](const double*) {
            std::vector<double> v;
            wl::append_values(sv.singularValues().transpose(), v);
            return wl::compare_values("singular values", v, d.values, 1e-12);
          });
    });
  }
}

}  // namespace bench_linalg

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_linalg::register_eigh_and_svd(); });
}
