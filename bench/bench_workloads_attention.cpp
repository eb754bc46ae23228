// Side-by-side workload W10 (issue 29 item 6): attention-style batched products with softmax.
//   out = softmax(q kᵀ / sqrt(d)) v for q, k, v [batch, heads, seq, d] = [8, 4, 128, 32] (f32):
//   two batched products around a row softmax, the core of a transformer layer.
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        grad of 0.5 sum(out²) w.r.t. (q, k, v)
//   fluxion_jit_fn / fluxion_eager_fn  the attention output
//   eigen / eigen_fn  by hand: per (batch, head) GEMMs, a row softmax and its backward
// References: the hand-written code in double precision on the same values. The same workload in
// JAX and PyTorch: bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_attention
#include "workloads.hpp"

namespace bench_attention {

using wl::MatR;

constexpr int64_t kBatch = 8, kHeads = 4, kSeq = 128, kDim = 32;
// Inputs (bench/compare_common.py attention_data): q, k, v ~ N(0, 1).
constexpr uint64_t kSeedQ = 10001, kSeedK = 10002, kSeedV = 10003;

// ---------------------------------------------------------------- Fluxion

fx::Tensor attention(const fx::Tensor& q, const fx::Tensor& k, const fx::Tensor& v) {
  fx::Tensor scores = fx::matmul(q, fx::transpose(k, {0, 1, 3, 2})) * (1.0 / std::sqrt(double(kDim)));
  return fx::matmul(fx::softmax(scores, -1), v);
}

fx::Tensor attention_loss(const fx::Tensor& q, const fx::Tensor& k, const fx::Tensor& v) {
  fx::Tensor out = attention(q, k, v);
  return 0.5 * fx::sum(out * out);
}

// ---------------------------------------------------------------- by hand

/// Attention over `blocks` independent (seq x dim) heads stored one after the other; with
/// `with_grad`, also the gradient of 0.5 |out|² (so d out = out), head by head: the softmax
/// probabilities of a head are used by its backward right away and never stored.
template <class T> struct AttentionByHand {
  int64_t blocks = kBatch * kHeads, seq = kSeq, dim = kDim;
  MatR<T> P, dP;  // one head's probabilities and their cotangent (seq x seq)
  std::vector<T> out, dq, dk, dv;

  void run(const T* q, const T* k, const T* v, bool with_grad) {
    using Map = Eigen::Map<MatR<T>>;
    using CMap = Eigen::Map<const MatR<T>>;
    const size_t n = static_cast<size_t>(blocks * seq * dim);
    const T scale = T(1) / std::sqrt(T(dim));
    out.resize(n);
    if (with_grad) {
      dq.resize(n);
      dk.resize(n);
      dv.resize(n);
    }
    for (int64_t h = 0; h < blocks; ++h) {
      const int64_t off = h * seq * dim;
      CMap Q(q + off, seq, dim), K(k + off, seq, dim), V(v + off, seq, dim);
      Map O(out.data() + off, seq, dim);
      P.noalias() = Q * K.transpose();
      P *= scale;
      for (int64_t i = 0; i < seq; ++i) {
        T m = P.row(i).maxCoeff();
        P.row(i) = (P.row(i).array() - m).exp().matrix();
        P.row(i) /= P.row(i).sum();
      }
      O.noalias() = P * V;
      if (!with_grad) continue;
      Map dQ(dq.data() + off, seq, dim), dK(dk.data() + off, seq, dim), dV(dv.data() + off, seq, dim);
      dV.noalias() = P.transpose() * O;
      dP.noalias() = O * V.transpose();
      // Softmax backward per row: dS = P ⊙ (dP - <dP, P>), then the 1/sqrt(d) scale.
      for (int64_t i = 0; i < seq; ++i) {
        T c = dP.row(i).dot(P.row(i));
        dP.row(i) = (P.row(i).array() * (dP.row(i).array() - c) * scale).matrix();
      }
      dQ.noalias() = dP * K;
      dK.noalias() = dP.transpose() * Q;
    }
  }

  std::vector<double> grad_values() const {
    std::vector<double> g;
    for (const auto* part : {&dq, &dk, &dv}) g.insert(g.end(), part->begin(), part->end());
    return g;
  }
};

// ---------------------------------------------------------------- data and checks

struct AttentionData {
  fx::Tensor q, k, v;
  std::vector<float> qf, kf, vf;
  std::vector<double> want_out, want_grad;

  AttentionData() {
    const int64_t n = kBatch * kHeads * kSeq * kDim;
    const std::vector<int64_t> shape{kBatch, kHeads, kSeq, kDim};
    std::vector<double> qv = wl::normal_values(n, kSeedQ), kv = wl::normal_values(n, kSeedK),
                        vv = wl::normal_values(n, kSeedV);
    q = wl::make_tensor<float>(qv, shape);
    k = wl::make_tensor<float>(kv, shape);
    v = wl::make_tensor<float>(vv, shape);
    qf.assign(qv.begin(), qv.end());
    kf.assign(kv.begin(), kv.end());
    vf.assign(vv.begin(), vv.end());
    // References in double from the f32-rounded inputs.
    std::vector<double> qd(qf.begin(), qf.end()), kd(kf.begin(), kf.end()), vd(vf.begin(), vf.end());
    AttentionByHand<double> ref;
    ref.run(qd.data(), kd.data(), vd.data(), true);
    want_out = ref.out;
    want_grad = ref.grad_values();
  }
  std::string check_out(const std::vector<double>& got) const {
    return wl::compare_values("attention", got, want_out, 1e-5);
  }
  std::string check_grad(const std::vector<double>& got) const {
    return wl::compare_values("grad", got, want_grad, 1e-4);
  }
};

void register_w10() {
  auto data = wl::lazy<AttentionData>();
  const std::string size = "/b=" + std::to_string(kBatch) + ",h=" + std::to_string(kHeads) +
                           ",s=" + std::to_string(kSeq) + ",d=" + std::to_string(kDim);
  using Grads = std::tuple<fx::Tensor, fx::Tensor, fx::Tensor>;
  auto check_grad = [data](const Grads& g) { return data->get().check_grad(wl::flat_values(g)); };
  auto check_out = [data](const fx::Tensor& o) { return data->get().check_out(wl::flat_values(o)); };
  auto args = [](const AttentionData& d) { return std::make_tuple(d.q, d.k, d.v); };
  wl::reg_jit_and_eager("W10", "", size, data, fx::grad(attention_loss, fx::argnums<0, 1, 2>), args, check_grad);
  wl::reg_jit_and_eager("W10", "_fn", size, data, attention, args, check_out);
  wl::reg("W10/eigen" + size, [=](benchmark::State& st) {
    const auto& d = data->get();
    AttentionByHand<float> e;
    wl::run_case(
        st,
        [&] {
          e.run(d.qf.data(), d.kf.data(), d.vf.data(), true);
          return e.dq.data();
        },
        [&](const float*) { return d.check_grad(e.grad_values()); });
  });
  wl::reg("W10/eigen_fn" + size, [=](benchmark::State& st) {
    const auto& d = data->get();
    AttentionByHand<float> e;
    wl::run_case(
        st,
        [&] {
          e.run(d.qf.data(), d.kf.data(), d.vf.data(), false);
          return e.out.data();
        },
        [&](const float*) { return d.check_out(std::vector<double>(e.out.begin(), e.out.end())); });
  });
}

}  // namespace bench_attention

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_attention::register_w10(); });
}
