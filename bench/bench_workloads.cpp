// Side-by-side workloads W1-W3 (issue 4 item 6): gradients of the kind ML code takes.
//   W1  grad of sum(tanh(x)*x + exp(-x^2)), f32, N = 4096, 65536, 2^24
//   W2  value_and_grad of an MLP softmax cross-entropy loss, 784-512-512-10 relu, batch 32/256/1024
//   W3  per-sample gradients vmap(grad(loss), in_axes(none, 0, 0)), MLP 784-128-10, batch 64/256
// Names, rows and checks: bench/workloads.hpp. The same workloads in JAX and PyTorch:
// bench/compare_jax.py, bench/compare_torch.py; bench/compare runs all three and prints the table.
//   ./build-bench/bench/bench_workloads --benchmark_filter='^W1/'
#include "workloads.hpp"

namespace bench_w {

using wl::MatR;
using wl::Mlp2;
using wl::mlp2_example_loss;
using wl::mlp2_loss;
using wl::Mlp3;
using wl::mlp3_loss;
using wl::MlpBatch;
using wl::to_mlp2;
using wl::to_mlp3;

// ---------------------------------------------------------------- W1

fx::Tensor w1_f(const fx::Tensor& x) { return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x))); }

struct W1Data {
  int64_t n;
  fx::Tensor x;
  Eigen::ArrayXf xe;
  std::vector<double> want_grad;
  double want_value;
  explicit W1Data(int64_t n_) : n(n_) {
    std::vector<double> v = wl::normal_values(n, 1001, 1.5);
    x = wl::make_tensor<float>(v, {n});
    xe.resize(n);
    for (int64_t i = 0; i < n; ++i) xe[i] = static_cast<float>(v[static_cast<size_t>(i)]);
    // References in double.
    want_grad.resize(static_cast<size_t>(n));
    want_value = 0;
    for (int64_t i = 0; i < n; ++i) {
      double a = static_cast<double>(xe[i]), t = std::tanh(a);
      want_grad[static_cast<size_t>(i)] = t + a * (1 - t * t) - 2 * a * std::exp(-a * a);
      want_value += t * a + std::exp(-a * a);
    }
  }
};

void register_w1() {
  for (int64_t n : {int64_t(4096), int64_t(65536), int64_t(1) << 24}) {
    auto data = wl::lazy<W1Data>(n);
    std::string size = "/N=" + std::to_string(n);
    auto check_grad = [data](const fx::Tensor& g) {
      return wl::compare_values("grad", wl::flat_values(g), data->get().want_grad, 1e-5);
    };
    // An f32 sum of N positive terms drifts from the f64 reference by up to ~N u / lanes (4.5e-4
    // relative at N = 2^24, for Eigen's reduction as for ours): 1e-4, or 1e-10 N when larger.
    const double value_rtol = std::max(1e-4, 1e-10 * static_cast<double>(n));
    auto check_value = [data, value_rtol](const fx::Tensor& v) {
      return wl::compare_values("value", {v.item<double>()}, {data->get().want_value}, value_rtol);
    };
    auto unit = n >= (int64_t(1) << 20) ? benchmark::kMillisecond : benchmark::kMicrosecond;
    wl::reg(
        "W1/fluxion_jit" + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          auto g = fx::jit(fx::grad(w1_f));
          wl::run_case(
              st, [&] { return g(d.x); }, check_grad);
        },
        unit);
    wl::reg(
        "W1/fluxion_eager" + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          auto g = fx::grad(w1_f);
          wl::run_case(
              st, [&] { return g(d.x); }, check_grad);
        },
        unit);
    wl::reg(
        "W1/fluxion_jit_fn" + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          auto f = fx::jit(w1_f);
          wl::run_case(
              st, [&] { return f(d.x); }, check_value);
        },
        unit);
    wl::reg(
        "W1/fluxion_eager_fn" + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          wl::run_case(
              st, [&] { return w1_f(d.x); }, check_value);
        },
        unit);
    wl::reg(
        "W1/eigen" + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          Eigen::ArrayXf g(d.n);
          wl::run_case(
              st,
              [&] {
                // One fused pass: g holds tanh(x) first, then the gradient (coefficient-wise, no aliasing issue).
                g = d.xe.tanh();
                g = g + d.xe * (1.0f - g.square()) - 2.0f * d.xe * (-d.xe.square()).exp();
                return g.data();
              },
              [&](const float*) {
                std::vector<double> got(g.data(), g.data() + g.size());
                return wl::compare_values("grad", got, d.want_grad, 1e-5);
              });
        },
        unit);
    wl::reg(
        "W1/eigen_fn" + size,
        [=](benchmark::State& st) {
          const auto& d = data->get();
          wl::run_case(
              st, [&] { return (d.xe.tanh() * d.xe + (-d.xe.square()).exp()).sum(); },
              [&](float v) { return wl::compare_values("value", {v}, {d.want_value}, value_rtol); });
        },
        unit);
  }
}

// ---------------------------------------------------------------- W2

struct W2Data : MlpBatch {
  Mlp3 p;
  std::vector<double> want;  // value, then the gradient leaves
  double want_value;
  explicit W2Data(int64_t batch_) : MlpBatch({784, 512, 512, 10}, batch_), p(to_mlp3(pe)) {
    // Reference in double precision from the same f32 values.
    wl::EigenMlp<double> pd = wl::cast_mlp<double>(pe);
    wl::EigenMlp<double> g = pd.zeros_like();
    wl::MlpWork<double> w;
    MatR<double> xd = xe.cast<double>();
    want_value = wl::mlp_value_and_grad(pd, xd, labels, g, w);
    want = g.values();
  }
};

void register_w2() {
  for (int64_t batch : {32, 256, 1024}) {
    auto data = wl::lazy<W2Data>(batch);
    std::string size = "/batch=" + std::to_string(batch);
    auto check_vg = [data](const std::pair<fx::Tensor, Mlp3>& r) {
      std::string e = wl::compare_values("value", {r.first.item<double>()}, {data->get().want_value}, 1e-4);
      if (!e.empty()) return e;
      return wl::compare_values("grad", wl::flat_values(r.second), data->get().want, 1e-3);
    };
    auto check_value = [data](const fx::Tensor& v) {
      return wl::compare_values("value", {v.item<double>()}, {data->get().want_value}, 1e-4);
    };
    wl::reg("W2/fluxion_jit" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      auto vg = fx::jit(fx::value_and_grad(mlp3_loss));
      wl::run_case(
          st, [&] { return vg(d.p, d.x, d.onehot); }, check_vg);
    });
    wl::reg("W2/fluxion_eager" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      auto vg = fx::value_and_grad(mlp3_loss);
      wl::run_case(
          st, [&] { return vg(d.p, d.x, d.onehot); }, check_vg);
    });
    wl::reg("W2/fluxion_jit_fn" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      auto f = fx::jit(mlp3_loss);
      wl::run_case(
          st, [&] { return f(d.p, d.x, d.onehot); }, check_value);
    });
    wl::reg("W2/fluxion_eager_fn" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      wl::run_case(
          st, [&] { return mlp3_loss(d.p, d.x, d.onehot); }, check_value);
    });
    wl::reg("W2/eigen" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      wl::EigenMlp<float> g = d.pe.zeros_like();
      wl::MlpWork<float> w;
      wl::run_case(
          st, [&] { return wl::mlp_value_and_grad(d.pe, d.xe, d.labels, g, w); },
          [&](float v) {
            std::vector<double> got{v};
            std::vector<double> gv = g.values();
            got.insert(got.end(), gv.begin(), gv.end());
            std::vector<double> want{d.want_value};
            want.insert(want.end(), d.want.begin(), d.want.end());
            return wl::compare_values("value_and_grad", got, want, 1e-3);
          });
    });
    wl::reg("W2/eigen_fn" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      wl::MlpWork<float> w;
      wl::run_case(
          st, [&] { return wl::mlp_forward(d.pe, d.xe, d.labels, w); },
          [&](float v) { return wl::compare_values("value", {v}, {d.want_value}, 1e-4); });
    });
  }
}

// ---------------------------------------------------------------- W3

/// Hand-written per-example gradients of mlp2: one batched forward/backward for the deltas
/// (GEMMs), then the per-example weight gradients as outer products written in place.
struct PerSampleEigen {
  MatR<float> h, z, d1, d2;        // hidden activations, logits, deltas
  MatR<float> gw1, gb1, gw2, gb2;  // [B, in*hid], [B, hid], [B, hid*out], [B, out]
  void run(const wl::EigenMlp<float>& p, const MatR<float>& x, const std::vector<int>& labels) {
    const Eigen::Index B = x.rows(), in = p.W[0].rows(), hid = p.W[0].cols(), out = p.W[1].cols();
    h.resize(B, hid);
    h.noalias() = x * p.W[0];
    h.rowwise() += p.b[0];
    h = h.cwiseMax(0.0f);
    z.resize(B, out);
    z.noalias() = h * p.W[1];
    z.rowwise() += p.b[1];
    // d2 = softmax(z) - onehot (per example: no 1/B)
    d2.resize(B, out);
    for (Eigen::Index i = 0; i < B; ++i) {
      float m = z.row(i).maxCoeff();
      d2.row(i) = (z.row(i).array() - m).exp();
      d2.row(i) /= d2.row(i).sum();
      d2(i, labels[static_cast<size_t>(i)]) -= 1.0f;
    }
    d1.resize(B, hid);
    d1.noalias() = d2 * p.W[1].transpose();
    d1 = d1.cwiseProduct((h.array() > 0.0f).cast<float>().matrix());
    gw1.resize(B, in * hid);
    gw2.resize(B, hid * out);
    for (Eigen::Index i = 0; i < B; ++i) {
      Eigen::Map<MatR<float>>(gw1.row(i).data(), in, hid).noalias() = x.row(i).transpose() * d1.row(i);
      Eigen::Map<MatR<float>>(gw2.row(i).data(), hid, out).noalias() = h.row(i).transpose() * d2.row(i);
    }
    gb1 = d1;
    gb2 = d2;
  }
  /// Leaves in Mlp2 order, each [B, ...] row-major.
  std::vector<double> values() const {
    std::vector<double> v;
    for (const MatR<float>* m : {&gw1, &gb1, &gw2, &gb2}) wl::append_values(*m, v);
    return v;
  }
};

struct W3Data : MlpBatch {
  Mlp2 p;
  std::vector<double> want;
  explicit W3Data(int64_t batch_) : MlpBatch({784, 128, 10}, batch_), p(to_mlp2(pe)) {
    // Reference: a loop of batch-1 value_and_grad calls in double precision.
    wl::EigenMlp<double> pd = wl::cast_mlp<double>(pe);
    std::vector<std::vector<double>> per_leaf(4);
    wl::EigenMlp<double> g = pd.zeros_like();
    wl::MlpWork<double> w;
    for (int64_t i = 0; i < batch; ++i) {
      MatR<double> xi = xe.row(i).cast<double>();
      wl::mlp_value_and_grad(pd, xi, {labels[static_cast<size_t>(i)]}, g, w);
      wl::append_values(g.W[0], per_leaf[0]);
      wl::append_values(g.b[0], per_leaf[1]);
      wl::append_values(g.W[1], per_leaf[2]);
      wl::append_values(g.b[1], per_leaf[3]);
    }
    for (auto& leaf : per_leaf) want.insert(want.end(), leaf.begin(), leaf.end());
  }
};

void register_w3() {
  for (int64_t batch : {64, 256}) {
    auto data = wl::lazy<W3Data>(batch);
    std::string size = "/batch=" + std::to_string(batch);
    auto check = [data](const Mlp2& g) {
      return wl::compare_values("per-sample grads", wl::flat_values(g), data->get().want, 1e-4);
    };
    wl::reg("W3/fluxion_jit" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      auto ps = fx::jit(fx::vmap(fx::grad(mlp2_example_loss), fx::in_axes(fx::none, 0, 0)));
      wl::run_case(
          st, [&] { return ps(d.p, d.x, d.onehot); }, check);
    });
    wl::reg("W3/fluxion_eager" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      auto ps = fx::vmap(fx::grad(mlp2_example_loss), fx::in_axes(fx::none, 0, 0));
      wl::run_case(
          st, [&] { return ps(d.p, d.x, d.onehot); }, check);
    });
    wl::reg("W3/eigen" + size, [=](benchmark::State& st) {
      const auto& d = data->get();
      PerSampleEigen e;
      wl::run_case(
          st,
          [&] {
            e.run(d.pe, d.xe, d.labels);
            return e.gw1.data();
          },
          [&](const float*) { return wl::compare_values("per-sample grads", e.values(), d.want, 1e-4); });
    });
  }
}

}  // namespace bench_w

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] {
    bench_w::register_w1();
    bench_w::register_w2();
    bench_w::register_w3();
  });
}
