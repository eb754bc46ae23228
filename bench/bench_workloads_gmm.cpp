// Side-by-side workload W8 (issue 4 item 6): the GMM objective of ADBench / GradBench, f64.
//   d in {2, 10, 32, 64}, K in {5, 25, 100}, n = 1000 points; gradient w.r.t. (alphas, means, icf).
//
// The ADBench formulation: alphas [K] (log mixture weights, unnormalised), means [K, d], icf
// [K, d(d+1)/2]: per component the log of the diagonal of the inverse-covariance factor Q_k,
// then its strictly-lower entries column by column; x [n, d]; Wishart prior gamma = 1, m = 0.
//   f = -n d/2 log(2 pi) + sum_i logsumexp_k(alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2)
//       - n logsumexp(alphas)
//       + sum_k [gamma^2/2 (|exp(q_k)|^2 + |l_k|^2) - m sum(q_k)] - K C(d, gamma, m)
//   C = n' d (log gamma - log(2)/2) - log Gamma_d(n'/2), n' = d + m + 1 (multivariate log-gamma).
// Rows: fluxion_jit / fluxion_eager (gradient), fluxion_jit_fn / fluxion_eager_fn (objective),
// eigen_fn (the objective by hand with Eigen: per component a triangular product; no hand-written
// gradient). The objective is checked against a plain-loop reference, the gradient against
// central finite differences of the hand-written objective at a sample of coordinates (not timed).
//   ./build-bench/bench/bench_workloads_gmm --benchmark_filter='d=2,'
#include "workloads.hpp"

namespace bench_g {

using wl::MatR;
using wl::Vec;

constexpr int64_t kPoints = 1000;
constexpr double kGamma = 1.0;
constexpr int kWishartM = 0;

/// log of the multivariate gamma function Gamma_p(a).
double log_gamma_distrib(double a, int64_t p) {
  double out = 0.25 * static_cast<double>(p * (p - 1)) * std::log(M_PI);
  for (int64_t j = 1; j <= p; ++j) out += std::lgamma(a + 0.5 * static_cast<double>(1 - j));
  return out;
}

/// The constant part of the objective: -n d/2 log(2 pi) - K C.
double gmm_constant(int64_t d, int64_t K, int64_t n) {
  int64_t np = d + kWishartM + 1;
  double C = static_cast<double>(np * d) * (std::log(kGamma) - 0.5 * std::log(2.0)) -
             log_gamma_distrib(0.5 * static_cast<double>(np), d);
  return -static_cast<double>(n * d) * 0.5 * std::log(2 * M_PI) - static_cast<double>(K) * C;
}

struct GmmConsts {
  int64_t d, K, n;
  double constant;
  fx::Tensor tril_idx;  // i32 [d, d]: 1 + position of (i, j) in icf's off-diagonal part, 0 on and above the diagonal
  fx::Tensor eye;       // f64 [d, d]
};

fx::Tensor gmm_objective(const fx::Tensor& alphas, const fx::Tensor& means, const fx::Tensor& icf, const fx::Tensor& x,
                         const GmmConsts& c) {
  const int64_t d = c.d, K = c.K, tri = d * (d + 1) / 2;
  fx::Tensor q = fx::slice(icf, {0, 0}, {K, d});    // log-diagonals
  fx::Tensor l = fx::slice(icf, {0, d}, {K, tri});  // strictly-lower entries, column by column
  fx::Tensor qdiag = fx::exp(q);
  fx::Tensor sum_qs = fx::sum(q, {1});
  fx::Tensor lpad = fx::concatenate({fx::zeros({K, 1}, fx::f64), l}, 1);
  fx::Tensor Q = fx::take(lpad, c.tril_idx, 1) + fx::expand_dims(qdiag, 2) * c.eye;            // [K, d, d] lower
  fx::Tensor xc = fx::expand_dims(x, 0) - fx::expand_dims(means, 1);                           // [K, n, d]
  fx::Tensor qx = fx::matmul(xc, fx::transpose(Q, {0, 2, 1}));                                 // rows Q_k (x_i - mu_k)
  fx::Tensor main = fx::expand_dims(alphas + sum_qs, 1) - 0.5 * fx::sum(fx::square(qx), {2});  // [K, n]
  fx::Tensor slse = fx::sum(fx::logsumexp(main, {0}));
  fx::Tensor prior = 0.5 * kGamma * kGamma * (fx::sum(fx::square(qdiag)) + fx::sum(fx::square(l))) -
                     static_cast<double>(kWishartM) * fx::sum(sum_qs);
  return slse - static_cast<double>(c.n) * fx::logsumexp(alphas) + prior + c.constant;
}

struct GmmData {
  int64_t d, K, n, tri;
  GmmConsts consts;
  fx::Tensor alphas, means, icf, x;
  std::vector<double> av, mv, iv, xv;  // the same values, row-major
  MatR<double> xe;
  double want_value;

  GmmData(int64_t d_, int64_t K_) : d(d_), K(K_), n(kPoints), tri(d_ * (d_ + 1) / 2) {
    uint64_t seed = 7000 + static_cast<uint64_t>(100 * d + K);
    av = wl::normal_values(K, seed, 1.0);
    mv = wl::uniform_values(K * d, seed + 1, 0.0, 1.0);
    iv = wl::normal_values(K * tri, seed + 2, 1.0);
    xv = wl::normal_values(n * d, seed + 3, 1.0);
    alphas = wl::make_tensor<double>(av, {K});
    means = wl::make_tensor<double>(mv, {K, d});
    icf = wl::make_tensor<double>(iv, {K, tri});
    x = wl::make_tensor<double>(xv, {n, d});
    xe = wl::make_matrix<double>(xv, n, d);
    std::vector<int32_t> idx(static_cast<size_t>(d * d), 0);
    int32_t pos = 1;
    for (int64_t j = 0; j < d; ++j)
      for (int64_t i = j + 1; i < d; ++i) idx[static_cast<size_t>(i * d + j)] = pos++;
    consts = GmmConsts{d, K, n, gmm_constant(d, K, n), fx::from_vector(idx, fx::Shape{d, d}), fx::eye(d, fx::f64)};
    want_value = naive_objective(av, mv, iv);
  }

  /// ADBench's loops, plainly: the reference the objective rows are checked against.
  double naive_objective(const std::vector<double>& a, const std::vector<double>& m,
                         const std::vector<double>& ic) const {
    double slse = 0;
    std::vector<double> main(static_cast<size_t>(K)), xc(static_cast<size_t>(d)), qx(static_cast<size_t>(d));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < K; ++k) {
        const double* icf_k = &ic[static_cast<size_t>(k * tri)];
        double sum_q = 0;
        for (int64_t r = 0; r < d; ++r) {
          sum_q += icf_k[r];
          xc[r] = xv[static_cast<size_t>(i * d + r)] - m[static_cast<size_t>(k * d + r)];
          qx[r] = std::exp(icf_k[r]) * xc[r];
        }
        int64_t p = d;
        for (int64_t col = 0; col < d; ++col)
          for (int64_t row = col + 1; row < d; ++row) qx[row] += icf_k[p++] * xc[col];
        double sq = 0;
        for (int64_t r = 0; r < d; ++r) sq += qx[r] * qx[r];
        main[k] = a[k] + sum_q - 0.5 * sq;
      }
      double mx = *std::max_element(main.begin(), main.end()), s = 0;
      for (double v : main) s += std::exp(v - mx);
      slse += mx + std::log(s);
    }
    double amax = *std::max_element(a.begin(), a.end()), as = 0;
    for (double v : a) as += std::exp(v - amax);
    double prior = 0;
    for (int64_t k = 0; k < K; ++k) {
      double frob = 0, sum_q = 0;
      for (int64_t r = 0; r < tri; ++r) {
        double v = ic[static_cast<size_t>(k * tri + r)];
        frob += r < d ? std::exp(2 * v) : v * v;
        if (r < d) sum_q += v;
      }
      prior += 0.5 * kGamma * kGamma * frob - kWishartM * sum_q;
    }
    return consts.constant + slse - static_cast<double>(n) * (amax + std::log(as)) + prior;
  }
};

/// The objective by hand with Eigen: per component, Q_k (lower triangular) applied to all
/// centred points as one triangular product, then a row-wise logsumexp.
struct EigenGmm {
  MatR<double> main, xc, y;
  Eigen::MatrixXd Q;
  double run(const GmmData& g, const double* a, const double* m, const double* ic) {
    const int64_t d = g.d, K = g.K, n = g.n;
    main.resize(n, K);
    Q.setZero(d, d);
    double prior = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double* icf_k = ic + k * g.tri;
      double sum_q = 0, frob = 0;
      for (int64_t r = 0; r < d; ++r) {
        Q(r, r) = std::exp(icf_k[r]);
        sum_q += icf_k[r];
        frob += Q(r, r) * Q(r, r);
      }
      int64_t p = d;
      for (int64_t col = 0; col < d; ++col)
        for (int64_t row = col + 1; row < d; ++row, ++p) {
          Q(row, col) = icf_k[p];
          frob += icf_k[p] * icf_k[p];
        }
      prior += 0.5 * kGamma * kGamma * frob - kWishartM * sum_q;
      xc = g.xe.rowwise() - Eigen::Map<const wl::RowVec<double>>(m + k * d, d);
      y.noalias() = xc * Q.triangularView<Eigen::Lower>().transpose();
      main.col(k) = (a[k] + sum_q) - 0.5 * y.rowwise().squaredNorm().array();
    }
    double slse = 0;
    for (int64_t i = 0; i < n; ++i) {
      double mx = main.row(i).maxCoeff();
      slse += mx + std::log((main.row(i).array() - mx).exp().sum());
    }
    Eigen::Map<const Vec<double>> av(a, K);
    double amax = av.maxCoeff();
    double lse_a = amax + std::log((av.array() - amax).exp().sum());
    return g.consts.constant + slse - static_cast<double>(n) * lse_a + prior;
  }
};

/// Central differences of the hand-written objective at a sample of coordinates of each
/// argument; returns "" when the gradient matches.
std::string check_gradient(const GmmData& g, const std::tuple<fx::Tensor, fx::Tensor, fx::Tensor>& grads) {
  std::vector<std::vector<double>> params{g.av, g.mv, g.iv};
  std::vector<std::vector<double>> got{std::get<0>(grads).to_vector<double>(), std::get<1>(grads).to_vector<double>(),
                                       std::get<2>(grads).to_vector<double>()};
  const char* names[] = {"alphas", "means", "icf"};
  EigenGmm e;
  std::mt19937_64 gen(99);
  for (size_t arg = 0; arg < 3; ++arg) {
    if (got[arg].size() != params[arg].size()) return std::string("grad ") + names[arg] + ": wrong size";
    std::vector<size_t> coords{0, params[arg].size() - 1};
    // icf: a log-diagonal entry and an off-diagonal one of a middle component too.
    if (arg == 2) {
      size_t k = static_cast<size_t>(g.K / 2) * static_cast<size_t>(g.tri);
      coords.push_back(k + static_cast<size_t>(g.d) - 1);
      coords.push_back(k + static_cast<size_t>(g.d));
    }
    for (int r = 0; r < 4; ++r) coords.push_back(std::uniform_int_distribution<size_t>(0, params[arg].size() - 1)(gen));
    std::vector<double> fd, sel;
    for (size_t c : coords) {
      std::vector<std::vector<double>> p = params;
      double h = 1e-5 * std::max(1.0, std::abs(p[arg][c]));
      p[arg][c] = params[arg][c] + h;
      double fp = e.run(g, p[0].data(), p[1].data(), p[2].data());
      p[arg][c] = params[arg][c] - h;
      double fm = e.run(g, p[0].data(), p[1].data(), p[2].data());
      fd.push_back((fp - fm) / (2 * h));
      sel.push_back(got[arg][c]);
    }
    std::string err = wl::compare_values(std::string("grad ") + names[arg] + " vs finite differences", sel, fd, 1e-5);
    if (!err.empty()) return err;
  }
  return "";
}

void register_w8() {
  for (int64_t d : {2, 10, 32, 64})
    for (int64_t K : {5, 25, 100}) {
      auto data = wl::lazy<GmmData>(d, K);
      std::string size = "/d=" + std::to_string(d) + ",K=" + std::to_string(K);
      auto check_value = [data](const fx::Tensor& v) {
        return wl::compare_values("objective", {v.item<double>()}, {data->get().want_value}, 1e-10);
      };
      auto check_grad = [data](const std::tuple<fx::Tensor, fx::Tensor, fx::Tensor>& g) {
        return check_gradient(data->get(), g);
      };
      // The objective of the parameters, closing over the constants (index map, identity).
      auto objective = [data](const fx::Tensor& a, const fx::Tensor& m, const fx::Tensor& ic, const fx::Tensor& x) {
        return gmm_objective(a, m, ic, x, data->get().consts);
      };
      wl::reg("W8/fluxion_jit" + size, [=](benchmark::State& st) {
        const auto& g = data->get();
        auto f = fx::jit(fx::grad(objective, fx::argnums<0, 1, 2>));
        wl::run_case(
            st, [&] { return f(g.alphas, g.means, g.icf, g.x); }, check_grad);
      });
      wl::reg("W8/fluxion_eager" + size, [=](benchmark::State& st) {
        const auto& g = data->get();
        auto f = fx::grad(objective, fx::argnums<0, 1, 2>);
        wl::run_case(
            st, [&] { return f(g.alphas, g.means, g.icf, g.x); }, check_grad);
      });
      wl::reg("W8/fluxion_jit_fn" + size, [=](benchmark::State& st) {
        const auto& g = data->get();
        auto f = fx::jit(objective);
        wl::run_case(
            st, [&] { return f(g.alphas, g.means, g.icf, g.x); }, check_value);
      });
      wl::reg("W8/fluxion_eager_fn" + size, [=](benchmark::State& st) {
        const auto& g = data->get();
        wl::run_case(
            st, [&] { return objective(g.alphas, g.means, g.icf, g.x); }, check_value);
      });
      wl::reg("W8/eigen_fn" + size, [=](benchmark::State& st) {
        const auto& g = data->get();
        EigenGmm e;
        wl::run_case(
            st, [&] { return e.run(g, g.av.data(), g.mv.data(), g.iv.data()); },
            [&](double v) { return wl::compare_values("objective", {v}, {g.want_value}, 1e-10); });
      });
    }
}

}  // namespace bench_g

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_g::register_w8(); });
}
