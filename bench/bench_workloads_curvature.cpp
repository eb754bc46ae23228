// Side-by-side workloads W4-W6 (issue 4 item 6): second derivatives and Jacobians.
//   W4  full hessian of L2-regularised logistic regression, d = 1000, N = 1000, f64
//   W5  hvp on W4's loss, and on W2's MLP (784-512-512-10, batch 256, f32)
//   W6  jacfwd / jacrev / jacobian of tanh(W x + b), (m, n) = (2048, 32), (32, 2048), (1024, 1024), f32
// Data are dynamic arguments of the jit'd function (like jax.jit(f)(w, X, y)); the differentiated
// function closes over them inside the trace. Names, rows and checks: bench/workloads.hpp.
//   ./build-bench/bench/bench_workloads_curvature --benchmark_filter='^W6/'
#include "workloads.hpp"

namespace bench_c {

using wl::MatR;
using wl::Vec;

// ---------------------------------------------------------------- W4 / W5 logistic regression

constexpr double kLambda = 1e-2;

/// mean(log(1 + exp(-y * (X w)))) + lambda/2 |w|^2, labels y in {-1, +1}.
fx::Tensor logreg_loss(const fx::Tensor& w, const fx::Tensor& X, const fx::Tensor& y) {
  fx::Tensor m = y * fx::matmul(X, w);
  return fx::mean(fx::log1p(fx::exp(-m))) + 0.5 * kLambda * fx::sum(w * w);
}

fx::Tensor logreg_hessian(const fx::Tensor& w, const fx::Tensor& X, const fx::Tensor& y) {
  return fx::hessian([&](const fx::Tensor& w2) { return logreg_loss(w2, X, y); })(w);
}

fx::Tensor logreg_hvp(const fx::Tensor& w, const fx::Tensor& v, const fx::Tensor& X, const fx::Tensor& y) {
  return fx::hvp([&](const fx::Tensor& w2) { return logreg_loss(w2, X, y); }, w, v);
}

struct LogReg {
  int64_t d, n;
  fx::Tensor w, v, X, y;
  Vec<double> we, ve, ye;
  MatR<double> Xe;
  std::vector<double> want_hessian, want_hvp;
  LogReg(int64_t d_, int64_t n_) : d(d_), n(n_) {
    std::vector<double> xv = wl::normal_values(n * d, 4004, 1.0);
    std::vector<double> wv = wl::normal_values(d, 4005, 1.0 / std::sqrt(static_cast<double>(d)));
    std::vector<double> vv = wl::normal_values(d, 4006, 1.0);
    std::vector<double> yv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) yv[static_cast<size_t>(i)] = (i * 5 + 1) % 3 == 0 ? -1.0 : 1.0;
    X = wl::make_tensor<double>(xv, {n, d});
    w = wl::make_tensor<double>(wv, {d});
    v = wl::make_tensor<double>(vv, {d});
    y = wl::make_tensor<double>(yv, {n});
    Xe = wl::make_matrix<double>(xv, n, d);
    we = Eigen::Map<const Vec<double>>(wv.data(), d);
    ve = Eigen::Map<const Vec<double>>(vv.data(), d);
    ye = Eigen::Map<const Vec<double>>(yv.data(), n);
    // Reference: H = X^T diag(s (1 - s) / n) X + lambda I with s = sigmoid(y * X w), plainly.
    Vec<double> m = ye.cwiseProduct(Xe * we);
    Vec<double> D(n);
    for (int64_t i = 0; i < n; ++i) {
      double s = 1 / (1 + std::exp(-m[i]));
      D[i] = s * (1 - s) / static_cast<double>(n);
    }
    MatR<double> H = Xe.transpose() * D.asDiagonal() * Xe;
    H.diagonal().array() += kLambda;
    wl::append_values(H, want_hessian);
    Vec<double> hv = H * ve;
    wl::append_values(hv, want_hvp);
  }
};

/// The hand-written Hessian: curvature weights, then one symmetric rank-n update (half a GEMM).
struct EigenLogRegHessian {
  Vec<double> m, r;
  MatR<double> Xs, H;
  void run(const LogReg& p) {
    m.noalias() = p.Xe * p.we;
    m = m.cwiseProduct(p.ye);
    r.resize(p.n);
    for (int64_t i = 0; i < p.n; ++i) {
      double s = 1 / (1 + std::exp(-m[i]));
      r[i] = std::sqrt(s * (1 - s) / static_cast<double>(p.n));
    }
    Xs.noalias() = r.asDiagonal() * p.Xe;
    H.setZero(p.d, p.d);
    H.selfadjointView<Eigen::Lower>().rankUpdate(Xs.transpose());
    H.diagonal().array() += kLambda;
    H.triangularView<Eigen::StrictlyUpper>() = H.transpose();
  }
};

/// The hand-written Hessian-vector product: X^T (D (X v)) + lambda v, D from the same pass.
struct EigenLogRegHvp {
  Vec<double> m, t, hv;
  void run(const LogReg& p) {
    m.noalias() = p.Xe * p.we;
    t.noalias() = p.Xe * p.ve;
    for (int64_t i = 0; i < p.n; ++i) {
      double s = 1 / (1 + std::exp(-m[i] * p.ye[i]));
      t[i] *= s * (1 - s) / static_cast<double>(p.n);
    }
    hv.noalias() = p.Xe.transpose() * t;
    hv += kLambda * p.ve;
  }
};

void register_w4() {
  auto data = wl::lazy<LogReg>(1000, 1000);
  std::string size = "/d=1000,N=1000";
  auto check = [data](const fx::Tensor& h) {
    return wl::compare_values("hessian", wl::flat_values(h), data->get().want_hessian, 1e-10);
  };
  wl::reg("W4/fluxion_jit" + size, [=](benchmark::State& st) {
    const auto& d = data->get();
    auto h = fx::jit(logreg_hessian);
    wl::run_case(
        st, [&] { return h(d.w, d.X, d.y); }, check);
  });
  wl::reg("W4/fluxion_eager" + size, [=](benchmark::State& st) {
    const auto& d = data->get();
    wl::run_case(
        st, [&] { return logreg_hessian(d.w, d.X, d.y); }, check);
  });
  wl::reg("W4/eigen" + size, [=](benchmark::State& st) {
    const auto& d = data->get();
    EigenLogRegHessian e;
    wl::run_case(
        st,
        [&] {
          e.run(d);
          return e.H.data();
        },
        [&](const double*) {
          std::vector<double> got;
          wl::append_values(e.H, got);
          return wl::compare_values("hessian", got, d.want_hessian, 1e-10);
        });
  });
}

// ---------------------------------------------------------------- W5

wl::Mlp3 mlp_hvp_full(const wl::Mlp3& p, const wl::Mlp3& v, const fx::Tensor& x, const fx::Tensor& onehot) {
  return fx::hvp([&](const wl::Mlp3& q) { return wl::mlp3_loss(q, x, onehot); }, p, v);
}

struct MlpHvpData : wl::MlpBatch {
  wl::Mlp3 p, v;
  std::vector<double> want;
  explicit MlpHvpData(int64_t batch_) : wl::MlpBatch({784, 512, 512, 10}, batch_), p(wl::to_mlp3(pe)) {
    wl::EigenMlp<float> ve(sizes, 5005);  // a direction with the parameters' shapes and scales
    v = wl::to_mlp3(ve);
    // Reference: central differences of the hand-written gradient, in double precision, with the
    // relu pattern of p frozen (exact for a piecewise-linear activation).
    wl::EigenMlp<double> pd = wl::cast_mlp<double>(pe), vd = wl::cast_mlp<double>(ve);
    MatR<double> xd = xe.cast<double>();
    const double eps = 1e-4;
    wl::EigenMlp<double> plus = pd, minus = pd, gp = pd.zeros_like(), gm = pd.zeros_like();
    plus.axpy(eps, vd);
    minus.axpy(-eps, vd);
    wl::MlpWork<double> w;
    w.record = true;  // the relu pattern at p, then frozen for the differences
    wl::mlp_forward(pd, xd, labels, w);
    w.record = false;
    w.freeze = true;
    wl::mlp_value_and_grad(plus, xd, labels, gp, w);
    wl::mlp_value_and_grad(minus, xd, labels, gm, w);
    std::vector<double> a = gp.values(), b = gm.values();
    want.resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) want[i] = (a[i] - b[i]) / (2 * eps);
  }
};

void register_w5() {
  auto lr = wl::lazy<LogReg>(1000, 1000);
  std::string size = "/logreg:d=1000,N=1000";
  auto check_lr = [lr](const fx::Tensor& hv) {
    return wl::compare_values("hvp", wl::flat_values(hv), lr->get().want_hvp, 1e-10);
  };
  wl::reg(
      "W5/fluxion_jit" + size,
      [=](benchmark::State& st) {
        const auto& d = lr->get();
        auto f = fx::jit(logreg_hvp);
        wl::run_case(
            st, [&] { return f(d.w, d.v, d.X, d.y); }, check_lr);
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W5/fluxion_eager" + size,
      [=](benchmark::State& st) {
        const auto& d = lr->get();
        wl::run_case(
            st, [&] { return logreg_hvp(d.w, d.v, d.X, d.y); }, check_lr);
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W5/eigen" + size,
      [=](benchmark::State& st) {
        const auto& d = lr->get();
        EigenLogRegHvp e;
        wl::run_case(
            st,
            [&] {
              e.run(d);
              return e.hv.data();
            },
            [&](const double*) {
              std::vector<double> got(e.hv.data(), e.hv.data() + e.hv.size());
              return wl::compare_values("hvp", got, d.want_hvp, 1e-10);
            });
      },
      benchmark::kMicrosecond);

  auto mlp = wl::lazy<MlpHvpData>(256);
  std::string msize = "/mlp:batch=256";
  // f32 forward-over-reverse against f64 central differences: 1e-3 of the largest component.
  auto check_mlp = [mlp](const wl::Mlp3& hv) {
    return wl::compare_values("hvp", wl::flat_values(hv), mlp->get().want, 1e-3);
  };
  wl::reg("W5/fluxion_jit" + msize, [=](benchmark::State& st) {
    const auto& d = mlp->get();
    auto f = fx::jit(mlp_hvp_full);
    wl::run_case(
        st, [&] { return f(d.p, d.v, d.x, d.onehot); }, check_mlp);
  });
  wl::reg("W5/fluxion_eager" + msize, [=](benchmark::State& st) {
    const auto& d = mlp->get();
    wl::run_case(
        st, [&] { return mlp_hvp_full(d.p, d.v, d.x, d.onehot); }, check_mlp);
  });
}

// ---------------------------------------------------------------- W6

fx::Tensor layer(const fx::Tensor& x, const fx::Tensor& W, const fx::Tensor& b) {
  return fx::tanh(fx::matmul(W, x) + b);
}

fx::Tensor jac_fwd(const fx::Tensor& x, const fx::Tensor& W, const fx::Tensor& b) {
  return fx::jacfwd([&](const fx::Tensor& x2) { return layer(x2, W, b); })(x);
}
fx::Tensor jac_rev(const fx::Tensor& x, const fx::Tensor& W, const fx::Tensor& b) {
  return fx::jacrev([&](const fx::Tensor& x2) { return layer(x2, W, b); })(x);
}
fx::Tensor jac_auto(const fx::Tensor& x, const fx::Tensor& W, const fx::Tensor& b) {
  return fx::jacobian([&](const fx::Tensor& x2) { return layer(x2, W, b); })(x);
}

struct LayerData {
  int64_t m, n;
  fx::Tensor x, W, b;
  Vec<float> xe, be;
  MatR<float> We;
  std::vector<double> want;
  LayerData(int64_t m_, int64_t n_) : m(m_), n(n_) {
    std::vector<double> wv = wl::normal_values(m * n, 6006, 1.0 / std::sqrt(static_cast<double>(n)));
    std::vector<double> xv = wl::normal_values(n, 6007, 1.0), bv = wl::normal_values(m, 6008, 0.1);
    W = wl::make_tensor<float>(wv, {m, n});
    x = wl::make_tensor<float>(xv, {n});
    b = wl::make_tensor<float>(bv, {m});
    We = wl::make_matrix<float>(wv, m, n);
    xe = wl::make_matrix<float>(xv, n, 1);
    be = wl::make_matrix<float>(bv, m, 1);
    MatR<double> Wd = We.cast<double>();
    Vec<double> y = (Wd * xe.cast<double>() + be.cast<double>()).array().tanh().matrix();
    MatR<double> J = (1 - y.array().square()).matrix().asDiagonal() * Wd;
    wl::append_values(J, want);
  }
};

/// The hand-written Jacobian: diag(1 - tanh^2(W x + b)) W into a preallocated matrix.
struct EigenLayerJacobian {
  Vec<float> y;
  MatR<float> J;
  void run(const LayerData& p) {
    y.noalias() = p.We * p.xe;
    y = (y + p.be).array().tanh().matrix();
    y = (1 - y.array().square()).matrix();
    J.noalias() = y.asDiagonal() * p.We;
  }
};

void register_w6() {
  using JacFn = fx::Tensor (*)(const fx::Tensor&, const fx::Tensor&, const fx::Tensor&);
  const std::pair<const char*, JacFn> modes[] = {{"jacfwd", jac_fwd}, {"jacrev", jac_rev}, {"jacobian", jac_auto}};
  for (auto [m, n] : {std::pair<int64_t, int64_t>{2048, 32}, {32, 2048}, {1024, 1024}}) {
    auto data = wl::lazy<LayerData>(m, n);
    std::string shape = "m=" + std::to_string(m) + ",n=" + std::to_string(n);
    auto check = [data](const fx::Tensor& j) {
      return wl::compare_values("jacobian", wl::flat_values(j), data->get().want, 1e-5);
    };
    for (const auto& [mode, fn] : modes) {
      std::string size = std::string("/") + mode + ":" + shape;
      JacFn f = fn;
      wl::reg("W6/fluxion_jit" + size, [=](benchmark::State& st) {
        const auto& d = data->get();
        auto j = fx::jit(f);
        wl::run_case(
            st, [&] { return j(d.x, d.W, d.b); }, check);
      });
      wl::reg("W6/fluxion_eager" + size, [=](benchmark::State& st) {
        const auto& d = data->get();
        wl::run_case(
            st, [&] { return f(d.x, d.W, d.b); }, check);
      });
    }
    // One hand-written row per shape: the analytic Jacobian does not depend on the AD mode.
    wl::reg("W6/eigen/" + shape, [=](benchmark::State& st) {
      const auto& d = data->get();
      EigenLayerJacobian e;
      wl::run_case(
          st,
          [&] {
            e.run(d);
            return e.J.data();
          },
          [&](const float*) {
            std::vector<double> got;
            wl::append_values(e.J, got);
            return wl::compare_values("jacobian", got, d.want, 1e-5);
          });
    });
  }
}

}  // namespace bench_c

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] {
    bench_c::register_w4();
    bench_c::register_w5();
    bench_c::register_w6();
  });
}
