// Side-by-side workload W14 (issue 34): softmax cross-entropy over a large vocabulary.
//   logits = X W for X [batch, dim] and W [dim, vocab = 1000] (f32), integer labels (7 i + 3) mod vocab;
//   loss = mean_i (logsumexp(logits_i) - logits_i[label_i]), the output layer of a classifier or a
//   language model. Two sizes: batch=1024,dim=512 (the issue's) and batch=256,dim=128 (quick).
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        value_and_grad of the loss w.r.t. W
//   fluxion_jit_fn / fluxion_eager_fn  the loss
//   eigen / eigen_fn  by hand: one GEMM, a row softmax, (softmax - onehot) / batch, Xᵀ of it
// Reference: the hand-written code in double precision on the same f32-rounded values. The same
// workload in JAX and PyTorch: bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_xent
#include "workloads.hpp"

namespace bench_xent {

using wl::MatR;

constexpr int64_t kVocab = 1000;
// Inputs (bench/compare_common.py xent_data): X ~ N(0, 1) (seed 14101), W ~ N(0, 1/dim) (14102).
constexpr uint64_t kSeedX = 14101, kSeedW = 14102;

// ---------------------------------------------------------------- Fluxion

/// labels: i32 [batch, 1], the column of each row's class.
fx::Tensor xent_loss(const fx::Tensor& W, const fx::Tensor& X, const fx::Tensor& labels) {
  fx::Tensor logits = fx::matmul(X, W);
  fx::Tensor picked = fx::squeeze(fx::take_along_axis(logits, labels, -1), {1});
  return fx::mean(fx::logsumexp(logits, {-1}) - picked);
}

// ---------------------------------------------------------------- by hand

template <class T> struct XentByHand {
  MatR<T> P, dW;  // probabilities (then the logits' cotangent), the gradient
  T loss = 0;

  void run(const MatR<T>& X, const MatR<T>& W, const std::vector<int>& labels, bool with_grad) {
    const Eigen::Index B = X.rows();
    P.noalias() = X * W;
    T total = 0;
    for (Eigen::Index i = 0; i < B; ++i) {
      T m = P.row(i).maxCoeff();
      T label_logit = P(i, labels[size_t(i)]);
      P.row(i) = (P.row(i).array() - m).exp().matrix();
      T s = P.row(i).sum();
      total += m + std::log(s) - label_logit;
      if (with_grad) P.row(i) /= s;
    }
    loss = total / T(B);
    if (!with_grad) return;
    for (Eigen::Index i = 0; i < B; ++i) P(i, labels[size_t(i)]) -= T(1);
    P /= T(B);
    dW.noalias() = X.transpose() * P;
  }
};

// ---------------------------------------------------------------- data and checks

struct XentData {
  int64_t batch, dim;
  fx::Tensor X, W, labels;
  MatR<float> Xf, Wf;
  std::vector<int> label_values;
  double want_loss;
  std::vector<double> want_grad;

  XentData(int64_t batch_, int64_t dim_) : batch(batch_), dim(dim_) {
    std::vector<double> xv = wl::normal_values(batch * dim, kSeedX),
                        wv = wl::normal_values(dim * kVocab, kSeedW, 1.0 / std::sqrt(double(dim)));
    X = wl::make_tensor<float>(xv, {batch, dim});
    W = wl::make_tensor<float>(wv, {dim, kVocab});
    Xf = wl::make_matrix<float>(xv, batch, dim);
    Wf = wl::make_matrix<float>(wv, dim, kVocab);
    label_values = wl::mlp_labels(batch, kVocab);
    labels = fx::from_vector(std::vector<int32_t>(label_values.begin(), label_values.end()), fx::Shape{batch, 1});
    XentByHand<double> ref;
    ref.run(Xf.cast<double>(), Wf.cast<double>(), label_values, true);
    want_loss = ref.loss;
    wl::append_values(ref.dW, want_grad);
  }
  std::string check_loss(double got) const { return wl::compare_values("loss", {got}, {want_loss}, 1e-5); }
  std::string check_grad(const std::vector<double>& got) const {
    return wl::compare_values("grad", got, want_grad, 1e-4);
  }
};

void register_w14() {
  for (auto [batch, dim] : {std::pair<int64_t, int64_t>{256, 128}, {1024, 512}}) {
    auto data = wl::lazy<XentData>(batch, dim);
    const std::string size =
        "/batch=" + std::to_string(batch) + ",dim=" + std::to_string(dim) + ",vocab=" + std::to_string(kVocab);
    auto check_vg = [data](const std::pair<fx::Tensor, fx::Tensor>& vg) {
      std::string e = data->get().check_loss(vg.first.item<double>());
      return e.empty() ? data->get().check_grad(wl::flat_values(vg.second)) : e;
    };
    auto check_loss = [data](const fx::Tensor& l) { return data->get().check_loss(l.item<double>()); };
    auto args = [](const XentData& d) { return std::make_tuple(d.W, d.X, d.labels); };
    wl::reg_jit_and_eager("W14", "", size, data, fx::value_and_grad(xent_loss), args, check_vg);
    wl::reg_jit_and_eager("W14", "_fn", size, data, xent_loss, args, check_loss);
    for (bool with_grad : {true, false}) {
      wl::reg("W14/eigen" + std::string(with_grad ? "" : "_fn") + size, [=](benchmark::State& st) {
        const auto& d = data->get();
        XentByHand<float> e;
        wl::run_case(
            st,
            [&] {
              e.run(d.Xf, d.Wf, d.label_values, with_grad);
              return e.loss;
            },
            [&](float loss) {
              std::string err = d.check_loss(loss);
              if (!err.empty() || !with_grad) return err;
              std::vector<double> g;
              wl::append_values(e.dW, g);
              return d.check_grad(g);
            });
      });
    }
  }
}

}  // namespace bench_xent

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_xent::register_w14(); });
}
