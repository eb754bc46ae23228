// Side-by-side workload W16 (issue 34): a long chain of small operations (per-operation overhead).
//   25 blocks of 8 operations on a vector x of n = 64 or 256 floats (f32), block k:
//     y = tanh((1 + 0.01 k) x + 0.02 k);  z = y - mean(y);  x = z + 0.1 sin(z)
//   then loss = sum(x²): 200 elementwise operations and small reductions, each far too small to
//   hide a framework's dispatch, allocation or launch cost (a time stepper, an unrolled solver, a
//   scalar-heavy model written op by op).
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        grad of the loss w.r.t. x
//   fluxion_jit_fn / fluxion_eager_fn  the loss
//   eigen / eigen_fn  by hand: the blocks as Eigen array expressions, the backward pass from stored
//                     block outputs
// Reference: the hand-written code in double precision on the same f32-rounded input. The same
// workload in JAX and PyTorch: bench/compare_jax.py, bench/compare_torch.py (compare_common.op_chain).
//   ./build-bench/bench/bench_workloads_op_chain
#include "workloads.hpp"

namespace bench_op_chain {

constexpr int kBlocks = 25;
// Input (bench/compare_common.py op_chain_data): x ~ N(0, 1) (seed 16001).
constexpr uint64_t kSeed = 16001;

double block_scale(int k) { return 1.0 + 0.01 * k; }
double block_shift(int k) { return 0.02 * k; }

// ---------------------------------------------------------------- Fluxion

fx::Tensor op_chain_loss(const fx::Tensor& x0) {
  fx::Tensor x = x0;
  for (int k = 0; k < kBlocks; ++k) {
    fx::Tensor y = fx::tanh(x * block_scale(k) + block_shift(k));
    fx::Tensor z = y - fx::mean(y);
    x = z + 0.1 * fx::sin(z);
  }
  return fx::sum(x * x);
}

// ---------------------------------------------------------------- by hand

template <class T> struct OpChainByHand {
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  std::vector<Arr> y, z;  // each block's tanh output and centred value
  Arr x, g;
  T loss = 0;

  void run(const Arr& x0, bool with_grad) {
    y.resize(kBlocks);
    z.resize(kBlocks);
    x = x0;
    for (int k = 0; k < kBlocks; ++k) {
      y[size_t(k)] = (x * T(block_scale(k)) + T(block_shift(k))).tanh();
      z[size_t(k)] = y[size_t(k)] - y[size_t(k)].mean();
      x = z[size_t(k)] + T(0.1) * z[size_t(k)].sin();
    }
    loss = x.square().sum();
    if (!with_grad) return;
    g = T(2) * x;
    for (int k = kBlocks - 1; k >= 0; --k) {
      g *= T(1) + T(0.1) * z[size_t(k)].cos();  // through x = z + 0.1 sin z
      g -= g.mean();                            // through z = y - mean(y)
      g *= (T(1) - y[size_t(k)].square()) * T(block_scale(k));
    }
  }
};

// ---------------------------------------------------------------- data and checks

struct OpChainData {
  int64_t n;
  fx::Tensor x;
  Eigen::ArrayXf xf;
  double want_loss;
  std::vector<double> want_grad;

  explicit OpChainData(int64_t n_) : n(n_) {
    std::vector<double> xv = wl::normal_values(n, kSeed);
    x = wl::make_tensor<float>(xv, {n});
    xf = Eigen::Map<const Eigen::ArrayXd>(xv.data(), n).cast<float>();
    OpChainByHand<double> ref;
    ref.run(xf.cast<double>(), true);
    want_loss = ref.loss;
    want_grad.assign(ref.g.data(), ref.g.data() + n);
  }
  std::string check_loss(double got) const { return wl::compare_values("loss", {got}, {want_loss}, 1e-5); }
  std::string check_grad(const std::vector<double>& got) const {
    return wl::compare_values("grad", got, want_grad, 1e-4);
  }
};

void register_w16() {
  for (int64_t n : {64, 256}) {
    auto data = wl::lazy<OpChainData>(n);
    const std::string size = "/ops=" + std::to_string(8 * kBlocks) + ",n=" + std::to_string(n);
    auto check_grad = [data](const fx::Tensor& g) { return data->get().check_grad(wl::flat_values(g)); };
    auto check_loss = [data](const fx::Tensor& l) { return data->get().check_loss(l.item<double>()); };
    auto args = [](const OpChainData& d) { return std::make_tuple(d.x); };
    wl::reg_jit_and_eager("W16", "", size, data, fx::grad(op_chain_loss), args, check_grad, benchmark::kMicrosecond);
    wl::reg_jit_and_eager("W16", "_fn", size, data, op_chain_loss, args, check_loss, benchmark::kMicrosecond);
    for (bool with_grad : {true, false}) {
      wl::reg(
          "W16/eigen" + std::string(with_grad ? "" : "_fn") + size,
          [=](benchmark::State& st) {
            const auto& d = data->get();
            OpChainByHand<float> e;
            wl::run_case(
                st,
                [&] {
                  e.run(d.xf, with_grad);
                  return e.loss;
                },
                [&](float loss) {
                  std::string err = d.check_loss(loss);
                  if (!err.empty() || !with_grad) return err;
                  return d.check_grad(std::vector<double>(e.g.data(), e.g.data() + e.g.size()));
                });
          },
          benchmark::kMicrosecond);
    }
  }
}

}  // namespace bench_op_chain

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_op_chain::register_w16(); });
}
