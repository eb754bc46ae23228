// Side-by-side workload W11 (issue 29 item 6): a recurrent scan.
//   A GRU cell (batch 16, input 32, hidden 64, f64) over 100 steps of an input sequence via
//   fx::scan; loss = sum(h_T²); value and gradient w.r.t. the nine GRU parameters:
//     z = σ(x Wz + h Uz + bz),  r = σ(x Wr + h Ur + br),  n = tanh(x Wn + r ⊙ (h Un) + bn),
//     h' = (1 - z) ⊙ n + z ⊙ h.
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        value_and_grad of the loss w.r.t. the parameters
//   fluxion_jit_fn / fluxion_eager_fn  the loss
//   eigen_fn  the loss by hand (Eigen GEMMs, one loop); no hand-written gradient row
// Checks: every loss against the hand-written loss; every gradient against central differences
// of the hand-written loss along a few fixed random directions (directional derivatives, f64).
// The same workload in JAX (lax.scan under jax.jit) and PyTorch (a Python loop):
// bench/compare_jax.py, bench/compare_torch.py.
//   ./build-bench/bench/bench_workloads_recurrent
#include "workloads.hpp"

namespace bench_recurrent {
struct Gru {
  fx::Tensor wz, wr, wn, uz, ur, un, bz, br, bn;
};
}  // namespace bench_recurrent

BOOST_HANA_ADAPT_STRUCT(bench_recurrent::Gru, wz, wr, wn, uz, ur, un, bz, br, bn);

namespace bench_recurrent {

using wl::MatR;
using wl::RowVec;

constexpr int64_t kBatch = 16, kIn = 32, kHidden = 64, kSteps = 100;
// Inputs (bench/compare_common.py gru_data): W* ~ N(0, 1/in) (seeds 11001-11003), U* ~ N(0, 1/hidden)
// (11004-11006), b* ~ N(0, 0.01) (11007-11009), h0 ~ N(0, 0.25) (11010), xs ~ N(0, 1) (11011).
constexpr uint64_t kSeed = 11001;

// ---------------------------------------------------------------- Fluxion

fx::Tensor gru_cell(const Gru& p, const fx::Tensor& h, const fx::Tensor& x) {
  fx::Tensor z = fx::sigmoid(fx::matmul(x, p.wz) + fx::matmul(h, p.uz) + p.bz);
  fx::Tensor r = fx::sigmoid(fx::matmul(x, p.wr) + fx::matmul(h, p.ur) + p.br);
  fx::Tensor n = fx::tanh(fx::matmul(x, p.wn) + r * fx::matmul(h, p.un) + p.bn);
  return (1.0 - z) * n + z * h;
}

/// sum(h_T²) after one GRU step per slice of xs [steps, batch, in], as one fx::scan.
fx::Tensor gru_loss(const Gru& p, const fx::Tensor& h0, const fx::Tensor& xs) {
  auto step = [p](const fx::Tensor& h, const fx::Tensor& x) {
    return std::make_pair(gru_cell(p, h, x), std::tuple<>{});
  };
  fx::Tensor hT = fx::scan(step, h0, xs).first;
  return fx::sum(hT * hT);
}

// ---------------------------------------------------------------- by hand

/// The parameters' values leaf by leaf (the order of Gru), and their shapes.
using Leaves = std::vector<std::vector<double>>;
inline std::vector<std::vector<int64_t>> leaf_shapes() {
  std::vector<std::vector<int64_t>> s;
  for (int i = 0; i < 3; ++i) s.push_back({kIn, kHidden});
  for (int i = 0; i < 3; ++i) s.push_back({kHidden, kHidden});
  for (int i = 0; i < 3; ++i) s.push_back({kHidden});
  return s;
}

/// The GRU loop with Eigen GEMMs on preallocated workspaces.
struct GruByHand {
  MatR<double> W[3], U[3];  // z, r, n
  RowVec<double> b[3];
  MatR<double> h, z, r, n, hu;

  explicit GruByHand(const Leaves& v) {
    for (int g = 0; g < 3; ++g) {
      W[g] = wl::make_matrix<double>(v[static_cast<size_t>(g)], kIn, kHidden);
      U[g] = wl::make_matrix<double>(v[static_cast<size_t>(3 + g)], kHidden, kHidden);
      b[g] = wl::make_matrix<double>(v[static_cast<size_t>(6 + g)], 1, kHidden);
    }
  }
  double loss(const MatR<double>& h0, const std::vector<MatR<double>>& xs) {
    h = h0;
    for (const MatR<double>& x : xs) {
      z.noalias() = x * W[0];
      z.noalias() += h * U[0];
      z = (1 + (-(z.rowwise() + b[0]).array()).exp()).inverse().matrix();
      r.noalias() = x * W[1];
      r.noalias() += h * U[1];
      r = (1 + (-(r.rowwise() + b[1]).array()).exp()).inverse().matrix();
      hu.noalias() = h * U[2];
      n.noalias() = x * W[2];
      n = ((n + r.cwiseProduct(hu)).rowwise() + b[2]).array().tanh().matrix();
      h = ((1 - z.array()) * n.array() + z.array() * h.array()).matrix();
    }
    return h.squaredNorm();
  }
};

// ---------------------------------------------------------------- data and checks

struct GruData {
  Leaves values;
  Gru p;
  fx::Tensor h0, xs;
  MatR<double> h0e;
  std::vector<MatR<double>> xse;
  double want_value;
  // Directional derivatives of the loss along fixed directions, by central differences.
  std::vector<Leaves> directions;
  std::vector<double> want_slopes;

  GruData() {
    const auto shapes = leaf_shapes();
    const double scale[3] = {1.0 / std::sqrt(double(kIn)), 1.0 / std::sqrt(double(kHidden)), 0.1};
    std::vector<fx::Tensor> leaves;
    for (size_t i = 0; i < shapes.size(); ++i) {
      int64_t n = 1;
      for (int64_t d : shapes[i]) n *= d;
      values.push_back(wl::normal_values(n, kSeed + i, scale[i / 3]));
      leaves.push_back(wl::make_tensor<double>(values.back(), shapes[i]));
    }
    p = Gru{leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], leaves[6], leaves[7], leaves[8]};
    std::vector<double> hv = wl::normal_values(kBatch * kHidden, kSeed + 9, 0.5);
    std::vector<double> xv = wl::normal_values(kSteps * kBatch * kIn, kSeed + 10, 1.0);
    h0 = wl::make_tensor<double>(hv, {kBatch, kHidden});
    xs = wl::make_tensor<double>(xv, {kSteps, kBatch, kIn});
    h0e = wl::make_matrix<double>(hv, kBatch, kHidden);
    for (int64_t t = 0; t < kSteps; ++t)
      xse.push_back(wl::make_matrix<double>(
          std::vector<double>(xv.begin() + t * kBatch * kIn, xv.begin() + (t + 1) * kBatch * kIn), kBatch, kIn));
    want_value = GruByHand(values).loss(h0e, xse);
    const double eps = 1e-5;  // central differences in f64: error ~1e-10 relative
    for (uint64_t k = 0; k < 3; ++k) {
      Leaves dir, plus = values, minus = values;
      for (size_t i = 0; i < values.size(); ++i) {
        dir.push_back(wl::normal_values(static_cast<int64_t>(values[i].size()), 11100 + 16 * k + i, 1.0));
        for (size_t j = 0; j < values[i].size(); ++j) {
          plus[i][j] += eps * dir[i][j];
          minus[i][j] -= eps * dir[i][j];
        }
      }
      want_slopes.push_back((GruByHand(plus).loss(h0e, xse) - GruByHand(minus).loss(h0e, xse)) / (2 * eps));
      directions.push_back(std::move(dir));
    }
  }

  std::string check_value(double got) const { return wl::compare_values("loss", {got}, {want_value}, 1e-10); }
  std::string check_grad(const std::vector<double>& g) const {
    std::vector<double> slopes;
    for (const Leaves& dir : directions) {
      double s = 0;
      size_t at = 0;
      for (const auto& leaf : dir)
        for (double d : leaf) s += g.at(at++) * d;
      if (at != g.size()) return "grad: got " + std::to_string(g.size()) + " values, expected " + std::to_string(at);
      slopes.push_back(s);
    }
    return wl::compare_values("grad (directional derivatives)", slopes, want_slopes, 1e-6);
  }
};

void register_w11() {
  auto data = wl::lazy<GruData>();
  const std::string size = "/gru:batch=" + std::to_string(kBatch) + ",in=" + std::to_string(kIn) +
                           ",hidden=" + std::to_string(kHidden) + ",steps=" + std::to_string(kSteps);
  auto check_vg = [data](const std::pair<fx::Tensor, Gru>& vg) {
    std::string e = data->get().check_value(vg.first.item<double>());
    return e.empty() ? data->get().check_grad(wl::flat_values(vg.second)) : e;
  };
  auto check_value = [data](const fx::Tensor& v) { return data->get().check_value(v.item<double>()); };
  auto args = [](const GruData& d) { return std::make_tuple(d.p, d.h0, d.xs); };
  wl::reg_jit_and_eager("W11", "", size, data, fx::value_and_grad(gru_loss), args, check_vg);
  wl::reg_jit_and_eager("W11", "_fn", size, data, gru_loss, args, check_value);
  wl::reg("W11/eigen_fn" + size, [=](benchmark::State& st) {
    const auto& d = data->get();
    GruByHand e(d.values);
    wl::run_case(
        st, [&] { return e.loss(d.h0e, d.xse); }, [&](double v) { return d.check_value(v); });
  });
}

}  // namespace bench_recurrent

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_recurrent::register_w11(); });
}
