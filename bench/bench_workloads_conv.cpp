// Side-by-side workload Wconv (issue 31): one 2-d convolution layer, the core of a CNN.
//   y = conv(x, w) for x [8, 32, 32, 32] (NCHW), w [64, 32, 3, 3] (OIHW), stride 1, SAME padding (f32).
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        grad of 0.5 sum(y²) w.r.t. (x, w): the forward and both backward
//                                      convolutions (input and weight gradients)
//   fluxion_jit_fn / fluxion_eager_fn  y alone
// References: direct loops in double on the same f32 values. The same workload in JAX and PyTorch:
// bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_conv
#include "workloads.hpp"

namespace bench_conv {

constexpr int64_t kN = 8, kC = 32, kO = 64, kH = 32, kW = 32, kK = 3;
// Inputs (bench/compare_common.py conv_data): x ~ N(0, 1), w ~ N(0, 1 / (C K K)).
constexpr uint64_t kSeedX = 14001, kSeedW = 14002;
const double kWeightScale = 1.0 / std::sqrt(double(kC * kK * kK));

fx::Tensor layer(const fx::Tensor& x, const fx::Tensor& w) { return fx::conv(x, w, {1, 1}, "SAME"); }

fx::Tensor layer_loss(const fx::Tensor& x, const fx::Tensor& w) {
  fx::Tensor y = layer(x, w);
  return 0.5 * fx::sum(y * y);
}

// ---------------------------------------------------------------- references

struct ConvData {
  fx::Tensor x, w;
  std::vector<double> want_y, want_grad;  // want_grad: dx then dw

  ConvData() {
    const std::vector<double> xv = wl::normal_values(kN * kC * kH * kW, kSeedX),
                              wv = wl::normal_values(kO * kC * kK * kK, kSeedW, kWeightScale);
    x = wl::make_tensor<float>(xv, {kN, kC, kH, kW});
    w = wl::make_tensor<float>(wv, {kO, kC, kK, kK});
    // f32-rounded inputs, in double.
    const std::vector<double> xd = x.to_vector<double>(), wd = w.to_vector<double>();
    auto X = [&](int64_t n, int64_t c, int64_t i, int64_t j) {
      return xd[static_cast<size_t>(((n * kC + c) * kH + i) * kW + j)];
    };
    auto Wt = [&](int64_t o, int64_t c, int64_t u, int64_t v) {
      return wd[static_cast<size_t>(((o * kC + c) * kK + u) * kK + v)];
    };
    // SAME with a 3x3 window at stride 1: one element of padding on each side.
    want_y.assign(static_cast<size_t>(kN * kO * kH * kW), 0.0);
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t o = 0; o < kO; ++o)
        for (int64_t i = 0; i < kH; ++i)
          for (int64_t j = 0; j < kW; ++j) {
            double acc = 0;
            for (int64_t c = 0; c < kC; ++c)
              for (int64_t u = 0; u < kK; ++u)
                for (int64_t v = 0; v < kK; ++v) {
                  const int64_t r = i + u - 1, s = j + v - 1;
                  if (r >= 0 && r < kH && s >= 0 && s < kW) acc += X(n, c, r, s) * Wt(o, c, u, v);
                }
            want_y[static_cast<size_t>(((n * kO + o) * kH + i) * kW + j)] = acc;
          }
    // d(0.5 |y|²)/dy = y; dx and dw by scattering each y back through the window.
    std::vector<double> dx(xd.size(), 0.0), dw(wd.size(), 0.0);
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t o = 0; o < kO; ++o)
        for (int64_t i = 0; i < kH; ++i)
          for (int64_t j = 0; j < kW; ++j) {
            const double g = want_y[static_cast<size_t>(((n * kO + o) * kH + i) * kW + j)];
            for (int64_t c = 0; c < kC; ++c)
              for (int64_t u = 0; u < kK; ++u)
                for (int64_t v = 0; v < kK; ++v) {
                  const int64_t r = i + u - 1, s = j + v - 1;
                  if (r < 0 || r >= kH || s < 0 || s >= kW) continue;
                  dx[static_cast<size_t>(((n * kC + c) * kH + r) * kW + s)] += g * Wt(o, c, u, v);
                  dw[static_cast<size_t>(((o * kC + c) * kK + u) * kK + v)] += g * X(n, c, r, s);
                }
          }
    want_grad = dx;
    want_grad.insert(want_grad.end(), dw.begin(), dw.end());
  }
  std::string check_y(const std::vector<double>& got) const { return wl::compare_values("conv", got, want_y, 1e-5); }
  std::string check_grad(const std::vector<double>& got) const {
    return wl::compare_values("grad", got, want_grad, 1e-4);
  }
};

void register_wconv() {
  auto data = wl::lazy<ConvData>();
  const std::string size = "/N=" + std::to_string(kN) + ",C=" + std::to_string(kC) + ",O=" + std::to_string(kO) +
                           ",H=" + std::to_string(kH) + ",W=" + std::to_string(kW) + ",K=" + std::to_string(kK);
  using Grads = std::tuple<fx::Tensor, fx::Tensor>;
  auto check_grad = [data](const Grads& g) { return data->get().check_grad(wl::flat_values(g)); };
  auto check_y = [data](const fx::Tensor& y) { return data->get().check_y(wl::flat_values(y)); };
  auto args = [](const ConvData& d) { return std::make_tuple(d.x, d.w); };
  wl::reg_jit_and_eager("Wconv", "", size, data, fx::grad(layer_loss, fx::argnums<0, 1>), args, check_grad);
  wl::reg_jit_and_eager("Wconv", "_fn", size, data, layer, args, check_y);
}

}  // namespace bench_conv

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_conv::register_wconv(); });
}
