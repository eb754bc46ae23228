// Side-by-side workload W17 (issue 34): pairwise particle energy and its forces (f64).
//   Lennard-Jones energy of n = 512 or 1000 particles in 3-d (σ = ε = 1), over all ordered pairs:
//     d = x[:, None, :] - x[None, :, :];  r² = sum(d², -1) + I;  u = 1 / r²;  s = u u u
//     E = 2 sum(s² - s)          (= 4 Σ_{i<j} (r⁻¹² - r⁻⁶))
//   Adding I to r² makes each diagonal term 4 (1 - 1) = 0 with a zero derivative (d_ii = 0), so no
//   mask is needed. Forces are -∂E/∂x. Broadcasting to [n, n, 3], a reduction over the short last
//   axis and a chain of elementwise operations on n² pairs, with no matrix product; its gradient
//   sums the broadcast back over both particle axes (molecular dynamics, point-cloud losses,
//   kernel methods).
// Rows (names and checks: bench/workloads.hpp):
//   fluxion_jit / fluxion_eager        grad of E w.r.t. x (the negated forces) [n, 3]
//   fluxion_jit_fn / fluxion_eager_fn  E
//   eigen / eigen_fn  by hand: a loop over pairs i < j with the analytic pair force
// Reference: the hand-written code. The same workload in JAX and PyTorch: bench/compare_jax.py,
// bench/compare_torch.py (compare_common.lj_energy).
//   ./build-bench/bench/bench_workloads_nbody
#include "workloads.hpp"

namespace bench_nbody {

// Inputs (bench/compare_common.py nbody_data): particle p = (i, j, k) of a side^3 cubic lattice of
// spacing 1.2, row-major in (i, j, k), plus a jitter U(-0.1, 0.1) per coordinate (seed 17001).
constexpr double kSpacing = 1.2, kJitter = 0.1;
constexpr uint64_t kSeed = 17001;

// ---------------------------------------------------------------- Fluxion

fx::Tensor lj_energy(const fx::Tensor& x) {
  const int64_t n = x.shape()[0];
  fx::Tensor d = fx::expand_dims(x, 1) - fx::expand_dims(x, 0);
  fx::Tensor r2 = fx::sum(d * d, {-1}) + fx::eye(n, fx::f64);
  fx::Tensor inv = 1.0 / r2, s = inv * inv * inv;
  return 2.0 * fx::sum(s * s - s);
}

// ---------------------------------------------------------------- by hand

struct LjByHand {
  std::vector<double> grad;
  double energy = 0;

  void run(const std::vector<double>& x, bool with_grad) {
    const size_t n = x.size() / 3;
    if (with_grad) grad.assign(x.size(), 0.0);
    double e = 0;
    for (size_t i = 0; i < n; ++i) {
      const double* xi = &x[3 * i];
      for (size_t j = i + 1; j < n; ++j) {
        const double* xj = &x[3 * j];
        double d0 = xi[0] - xj[0], d1 = xi[1] - xj[1], d2 = xi[2] - xj[2];
        double inv2 = 1.0 / (d0 * d0 + d1 * d1 + d2 * d2), s = inv2 * inv2 * inv2;
        e += s * s - s;
        if (!with_grad) continue;
        // d/dr² of 4 (s² - s) with s = r⁻⁶: 4 (-6 s² + 3 s) / r²; d r² / d xi = 2 d.
        double c = 8.0 * (3.0 * s - 6.0 * s * s) * inv2;
        double* gi = &grad[3 * i];
        double* gj = &grad[3 * j];
        gi[0] += c * d0, gi[1] += c * d1, gi[2] += c * d2;
        gj[0] -= c * d0, gj[1] -= c * d1, gj[2] -= c * d2;
      }
    }
    energy = 4.0 * e;
  }
};

// ---------------------------------------------------------------- data and checks

struct NbodyData {
  int64_t n;
  fx::Tensor x;
  std::vector<double> xv, want_grad;
  double want_energy;

  explicit NbodyData(int64_t side) : n(side * side * side) {
    std::vector<double> jitter = wl::uniform_values(3 * n, kSeed, -kJitter, kJitter);
    xv.resize(size_t(3 * n));
    for (int64_t p = 0; p < n; ++p) {
      const int64_t cell[3] = {p / (side * side), (p / side) % side, p % side};
      for (int c = 0; c < 3; ++c) xv[size_t(3 * p + c)] = kSpacing * double(cell[c]) + jitter[size_t(3 * p + c)];
    }
    x = wl::make_tensor<double>(xv, {n, 3});
    LjByHand ref;
    ref.run(xv, true);
    want_energy = ref.energy;
    want_grad = ref.grad;
  }
  std::string check_energy(double got) const { return wl::compare_values("energy", {got}, {want_energy}, 1e-10); }
  std::string check_grad(const std::vector<double>& got) const {
    return wl::compare_values("grad", got, want_grad, 1e-10);
  }
};

void register_w17() {
  for (int64_t side : {8, 10}) {
    auto data = wl::lazy<NbodyData>(side);
    const std::string size = "/lj:n=" + std::to_string(side * side * side);
    auto check_grad = [data](const fx::Tensor& g) { return data->get().check_grad(wl::flat_values(g)); };
    auto check_energy = [data](const fx::Tensor& e) { return data->get().check_energy(e.item<double>()); };
    auto args = [](const NbodyData& d) { return std::make_tuple(d.x); };
    wl::reg_jit_and_eager("W17", "", size, data, fx::grad(lj_energy), args, check_grad);
    wl::reg_jit_and_eager("W17", "_fn", size, data, lj_energy, args, check_energy);
    for (bool with_grad : {true, false}) {
      wl::reg("W17/eigen" + std::string(with_grad ? "" : "_fn") + size, [=](benchmark::State& st) {
        const auto& d = data->get();
        LjByHand e;
        wl::run_case(
            st,
            [&] {
              e.run(d.xv, with_grad);
              return e.energy;
            },
            [&](double energy) {
              std::string err = d.check_energy(energy);
              return err.empty() && with_grad ? d.check_grad(e.grad) : err;
            });
      });
    }
  }
}

}  // namespace bench_nbody

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] { bench_nbody::register_w17(); });
}
