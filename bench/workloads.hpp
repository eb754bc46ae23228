// Shared helpers of the side-by-side workload suites (bench/bench_workloads*.cpp, issue 4 item 6).
//
// Every suite registers cases named `W<k>/<impl>/<size>`:
//   fluxion_jit      fx::jit(transform(f)), the row compared with JAX and PyTorch
//   fluxion_eager    transform(f) without jit
//   fluxion_jit_fn   fx::jit(f): the function alone, for grad/function ratios (W1, W2, W8)
//   fluxion_eager_fn f alone, eagerly
//   eigen            the same derivative written by hand with Eigen (preallocated, noalias GEMMs)
//   eigen_fn         the function alone, by hand
// <size> never contains '/', so bench/compare can split the name.
//
// Each case computes its result once and checks it (against the hand-written Eigen result or
// finite differences) before timing; a wrong result calls state.SkipWithError and makes the
// executable exit with status 1 (so the CTest smoke test fails loudly). Times are wall-clock
// (UseRealTime) because the frameworks compared may run several threads. Each case also reports
// `first_call_s`: the time of the first call of a freshly built callable, which for fluxion_jit
// includes tracing and compiling.
#pragma once
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fluxion/fluxion.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <boost/hana/adapt_struct.hpp>

namespace fx = fluxion;

namespace wl {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T> using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T> using RowVec = Eigen::Matrix<T, 1, Eigen::Dynamic>;

// ---------------------------------------------------------------- deterministic inputs

// A counter-based generator that numpy reproduces exactly (bench/compare_common.py), so that
// Fluxion, JAX and PyTorch see the same inputs and their results can be cross-checked:
// u_j = (mix(seed * 2^32 + (j + 1) * golden) >> 11) * 2^-53 with mix the splitmix64 finaliser;
// normal value i = scale * sqrt(-2 log(1 - u_2i)) * cos(2 pi u_2i+1) (Box-Muller).
inline uint64_t splitmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline double uniform01(uint64_t seed, uint64_t j) {
  return static_cast<double>(splitmix((seed << 32) + (j + 1) * 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53;
}

inline std::vector<double> normal_values(int64_t n, uint64_t seed, double scale = 1.0) {
  std::vector<double> v(static_cast<size_t>(n));
  const double two_pi = 6.283185307179586;
  for (int64_t i = 0; i < n; ++i) {
    double u1 = uniform01(seed, 2 * static_cast<uint64_t>(i)), u2 = uniform01(seed, 2 * static_cast<uint64_t>(i) + 1);
    v[static_cast<size_t>(i)] = scale * std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(two_pi * u2);
  }
  return v;
}

inline std::vector<double> uniform_values(int64_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = lo + (hi - lo) * uniform01(seed, static_cast<uint64_t>(i));
  return v;
}

/// A tensor of element type T and `shape` holding `values` (converted).
template <class T> fx::Tensor make_tensor(const std::vector<double>& values, const std::vector<int64_t>& shape) {
  return fx::from_vector(std::vector<T>(values.begin(), values.end()), fx::Shape(shape));
}

/// A row-major Eigen matrix (rows x cols) of T holding `values`.
template <class T> MatR<T> make_matrix(const std::vector<double>& values, int64_t rows, int64_t cols) {
  MatR<T> m(rows, cols);
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = static_cast<T>(values[static_cast<size_t>(i)]);
  return m;
}

// ---------------------------------------------------------------- checks

/// Every value of a result, flattened in row-major / pytree-leaf order, as doubles.
inline void append_values(const fx::Tensor& t, std::vector<double>& out) {
  std::vector<double> v = t.to_vector<double>();
  out.insert(out.end(), v.begin(), v.end());
}
template <class Tree> std::vector<double> flat_values(const Tree& tree) {
  std::vector<double> out;
  for (const fx::Tensor& t : fx::tree_leaves(tree)) append_values(t, out);
  return out;
}
template <class Derived> void append_values(const Eigen::DenseBase<Derived>& m, std::vector<double>& out) {
  // Row-major order whatever the storage order, to match the tensors.
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    for (Eigen::Index c = 0; c < m.cols(); ++c) out.push_back(static_cast<double>(m.derived().coeff(r, c)));
}

/// "" when got and want agree: max |got - want| <= rtol * max(1e-30, max |want|) (a norm-wise
/// test, robust to f32 rounding in small components); otherwise a message naming `what`.
inline std::string compare_values(const std::string& what, const std::vector<double>& got,
                                  const std::vector<double>& want, double rtol) {
  if (got.size() != want.size()) {
    std::ostringstream os;
    os << what << ": got " << got.size() << " values, expected " << want.size();
    return os.str();
  }
  double scale = 1e-30, worst = 0;
  size_t worst_i = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::abs(got[i] - want[i]);
    if (!(d <= worst)) {  // also catches NaN
      worst = std::isnan(d) ? INFINITY : d;
      worst_i = i;
    }
  }
  if (worst <= rtol * scale) return "";
  std::ostringstream os;
  os.precision(10);
  os << what << ": wrong result, max |diff| " << worst << " at element " << worst_i << " (got " << got[worst_i]
     << ", expected " << want[worst_i] << "), tolerance " << rtol << " * " << scale;
  return os.str();
}

/// Number of failed checks and exceptions in this process; main() returns 1 when non-zero.
inline std::atomic<int>& failures() {
  static std::atomic<int> n{0};
  return n;
}

/// The case being run (set by reg(); benchmark 1.7's State does not know its name).
inline std::string& current_case() {
  static std::string name;
  return name;
}

inline void fail(benchmark::State& state, const std::string& msg) {
  ++failures();
  std::fprintf(stderr, "FAILED CHECK in %s: %s\n", current_case().c_str(), msg.c_str());
  state.SkipWithError(msg.c_str());
}

/// The body of every case: first call (timed, reported as first_call_s), check, timed loop.
/// `fn` computes the result; `check(result)` returns "" when it is right.
/// With `allocs` (a heap-allocation counter the suite maintains), also reports allocs_per_call
/// over the timed loop.
template <class Fn, class Check>
void run_case(benchmark::State& state, Fn&& fn, Check&& check, const std::atomic<uint64_t>* allocs = nullptr) {
  try {
    auto t0 = Clock::now();
    auto first = fn();
    double first_s = seconds_since(t0);
    std::string err = check(first);
    if (!err.empty()) {
      fail(state, err);
      return;
    }
    state.counters["first_call_s"] = first_s;
    // The sum of |values| of a Fluxion result: bench/compare checks it against JAX's and PyTorch's
    // on the same inputs.
    if constexpr (fx::is_pytree_v<std::decay_t<decltype(first)>>) {
      double l1 = 0;
      for (const fx::Tensor& t : fx::tree_leaves(first))
        for (double v : t.to_vector<double>()) l1 += std::abs(v);
      state.counters["l1"] = l1;
    }
    uint64_t allocs_before = allocs ? allocs->load(std::memory_order_relaxed) : 0;
    for (auto _ : state) {
      auto out = fn();
      benchmark::DoNotOptimize(out);
      benchmark::ClobberMemory();
    }
    if (allocs && state.iterations() > 0)
      state.counters["allocs_per_call"] = static_cast<double>(allocs->load(std::memory_order_relaxed) - allocs_before) /
                                          static_cast<double>(state.iterations());
  } catch (const std::exception& e) { fail(state, std::string("exception: ") + e.what()); }
}

/// Data built once per size on first use and shared by all cases of that size (building inputs
/// and reference results can take longer than the case itself).
template <class D> class Lazy {
 public:
  template <class... A> explicit Lazy(A... a) : make_([a...]() { return std::make_unique<D>(a...); }) {}
  const D& get() const {
    if (!data_) data_ = make_();
    return *data_;
  }

 private:
  std::function<std::unique_ptr<D>()> make_;
  mutable std::unique_ptr<D> data_;
};
template <class D, class... A> std::shared_ptr<Lazy<D>> lazy(A... a) { return std::make_shared<Lazy<D>>(a...); }

/// Registers `name` running `body(state)`; wall time, in `unit`.
template <class Body> void reg(const std::string& name, Body body, benchmark::TimeUnit unit = benchmark::kMillisecond) {
  benchmark::RegisterBenchmark(name.c_str(),
                               [name, body](benchmark::State& st) {
                                 current_case() = name;
                                 body(st);
                               })
      ->UseRealTime()
      ->Unit(unit);
}

/// Registers `w`/fluxion_jit`suffix``size` running fx::jit(f) and `w`/fluxion_eager`suffix``size`
/// running f, both on the tuple of arguments `args(data)` (taken once per case, before timing) and
/// checked by `check`; `suffix` is "" for the transformed function, "_fn" for the function alone.
template <class D, class F, class Args, class Check>
void reg_jit_and_eager(const std::string& w, const std::string& suffix, const std::string& size,
                       std::shared_ptr<Lazy<D>> data, F f, Args args, Check check,
                       benchmark::TimeUnit unit = benchmark::kMillisecond) {
  reg(
      w + "/fluxion_jit" + suffix + size,
      [=](benchmark::State& st) {
        auto a = args(data->get());
        auto j = fx::jit(f);
        run_case(
            st, [&] { return std::apply(j, a); }, check);
      },
      unit);
  reg(
      w + "/fluxion_eager" + suffix + size,
      [=](benchmark::State& st) {
        auto a = args(data->get());
        run_case(
            st, [&] { return std::apply(f, a); }, check);
      },
      unit);
}

/// Honour FLUXION_NUM_THREADS and record the setting in the JSON context. Fluxion builds Eigen with
/// EIGEN_DONT_PARALLELIZE (its threads are its own pool), so the hand-written Eigen baselines run
/// on one thread whatever the setting.
inline void setup_threads() {
  const char* env = std::getenv("FLUXION_NUM_THREADS");
  int n = env ? std::atoi(env) : 0;
  if (n > 0) fx::set_num_threads(n);  // Fluxion's pool; the Eigen baselines run on one thread
  benchmark::AddCustomContext("fluxion_num_threads", env ? env : "unset");
  benchmark::AddCustomContext("eigen_threads", std::to_string(Eigen::nbThreads()));
#ifdef _OPENMP
  benchmark::AddCustomContext("openmp", "yes");
#else
  benchmark::AddCustomContext("openmp", "no");
#endif
}

/// main() of every suite: registration, run, exit status 1 if any check failed.
template <class Register> int run_main(int argc, char** argv, Register register_cases) {
  setup_threads();
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (failures() > 0) {
    std::fprintf(stderr, "%d check(s) failed: some result is wrong (see FAILED CHECK above)\n", failures().load());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------- MLP (W2, W3, W5)

/// Labels of a batch: (7 i + 3) mod classes.
inline std::vector<int> mlp_labels(int64_t batch, int64_t classes) {
  std::vector<int> y(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) y[static_cast<size_t>(i)] = static_cast<int>((7 * i + 3) % classes);
  return y;
}
inline fx::Tensor onehot_tensor(const std::vector<int>& labels, int64_t classes) {
  std::vector<float> v(labels.size() * static_cast<size_t>(classes), 0.0f);
  for (size_t i = 0; i < labels.size(); ++i)
    v[i * static_cast<size_t>(classes) + static_cast<size_t>(labels[i])] = 1.0f;
  return fx::from_vector(v, fx::Shape{static_cast<int64_t>(labels.size()), classes});
}

/// Initial weights of layer l (sizes[l] x sizes[l+1]) and bias, deterministic (He-like scale).
inline std::vector<double> mlp_weight_values(const std::vector<int64_t>& sizes, size_t l, uint64_t seed) {
  return normal_values(sizes[l] * sizes[l + 1], seed + 17 * l, std::sqrt(2.0 / static_cast<double>(sizes[l])));
}
inline std::vector<double> mlp_bias_values(const std::vector<int64_t>& sizes, size_t l, uint64_t seed) {
  return normal_values(sizes[l + 1], seed + 17 * l + 5, 0.1);
}

/// A hand-written MLP with relu hidden layers and softmax cross-entropy (mean over the batch):
/// weights W[l] (in x out, row-major), biases b[l]. Workspaces are kept between calls.
template <class T> struct EigenMlp {
  std::vector<MatR<T>> W;
  std::vector<RowVec<T>> b;

  EigenMlp() = default;
  EigenMlp(const std::vector<int64_t>& sizes, uint64_t seed) {
    for (size_t l = 0; l + 1 < sizes.size(); ++l) {
      W.push_back(make_matrix<T>(mlp_weight_values(sizes, l, seed), sizes[l], sizes[l + 1]));
      b.push_back(make_matrix<T>(mlp_bias_values(sizes, l, seed), 1, sizes[l + 1]));
    }
  }
  size_t layers() const { return W.size(); }
  /// Same shapes, zero.
  EigenMlp zeros_like() const {
    EigenMlp z = *this;
    for (auto& w : z.W) w.setZero();
    for (auto& v : z.b) v.setZero();
    return z;
  }
  /// Leaves in the order of the fx structs: w1, b1, w2, b2, ...
  std::vector<double> values() const {
    std::vector<double> out;
    for (size_t l = 0; l < layers(); ++l) {
      append_values(W[l], out);
      append_values(b[l], out);
    }
    return out;
  }
  void axpy(T alpha, const EigenMlp& d) {
    for (size_t l = 0; l < layers(); ++l) {
      W[l] += alpha * d.W[l];
      b[l] += alpha * d.b[l];
    }
  }
};

template <class T> struct MlpWork {
  std::vector<MatR<T>> act;  // act[0] = X (not stored), act[l] = relu output of layer l-1
  MatR<T> logits, delta, back;
  Vec<T> lse;
  // With `freeze`, the relu pattern is taken from `mask` (recorded by an earlier pass with
  // `record`) instead of the sign of the pre-activations: the loss is then smooth in the
  // parameters, so central differences of the gradient give the exact Hessian-vector product
  // (relu'' = 0) instead of jumping wherever a unit changes sign.
  bool record = false, freeze = false;
  std::vector<MatR<T>> mask;
};

/// Forward pass; returns the mean cross-entropy. act/logits/lse are left in `w` for backward.
template <class T>
T mlp_forward(const EigenMlp<T>& p, const MatR<T>& X, const std::vector<int>& labels, MlpWork<T>& w) {
  const size_t L = p.layers();
  const Eigen::Index B = X.rows();
  w.act.resize(L);
  const MatR<T>* in = &X;
  for (size_t l = 0; l + 1 < L; ++l) {
    MatR<T>& a = w.act[l + 1];
    a.resize(B, p.W[l].cols());
    a.noalias() = (*in) * p.W[l];
    a.rowwise() += p.b[l];
    if (w.freeze) {
      a = a.cwiseProduct(w.mask[l + 1]);
    } else {
      if (w.record) {
        w.mask.resize(L);
        w.mask[l + 1] = (a.array() > T(0)).template cast<T>().matrix();
      }
      a = a.cwiseMax(T(0));
    }
    in = &a;
  }
  w.logits.resize(B, p.W[L - 1].cols());
  w.logits.noalias() = (*in) * p.W[L - 1];
  w.logits.rowwise() += p.b[L - 1];
  w.lse.resize(B);
  T total = 0;
  for (Eigen::Index i = 0; i < B; ++i) {
    T m = w.logits.row(i).maxCoeff();
    w.lse[i] = m + std::log((w.logits.row(i).array() - m).exp().sum());
    total += w.lse[i] - w.logits(i, labels[static_cast<size_t>(i)]);
  }
  return total / static_cast<T>(B);
}

/// Forward and backward; writes the gradient into g (shapes of p) and returns the loss.
template <class T> T mlp_value_and_grad(const EigenMlp<T>& p, const MatR<T>& X, const std::vector<int>& labels,
                                        EigenMlp<T>& g, MlpWork<T>& w) {
  T loss = mlp_forward(p, X, labels, w);
  const size_t L = p.layers();
  const Eigen::Index B = X.rows();
  // d loss / d logits = (softmax - onehot) / B
  w.delta.resize(B, w.logits.cols());
  w.delta = (w.logits.colwise() - w.lse).array().exp();
  for (Eigen::Index i = 0; i < B; ++i) w.delta(i, labels[static_cast<size_t>(i)]) -= T(1);
  w.delta /= static_cast<T>(B);
  for (size_t l = L; l-- > 0;) {
    const MatR<T>& in = l == 0 ? X : w.act[l];
    g.W[l].noalias() = in.transpose() * w.delta;
    g.b[l] = w.delta.colwise().sum();
    if (l > 0) {
      w.back.resize(B, p.W[l].rows());
      w.back.noalias() = w.delta * p.W[l].transpose();
      if (w.freeze) w.delta = w.back.cwiseProduct(w.mask[l]);
      else w.delta = w.back.cwiseProduct((w.act[l].array() > T(0)).template cast<T>().matrix());
    }
  }
  return loss;
}

}  // namespace wl

// ---------------------------------------------------------------- the MLPs as Fluxion pytrees

namespace wl {
struct Mlp3 {
  fx::Tensor w1, b1, w2, b2, w3, b3;
};
struct Mlp2 {
  fx::Tensor w1, b1, w2, b2;
};
}  // namespace wl

BOOST_HANA_ADAPT_STRUCT(wl::Mlp3, w1, b1, w2, b2, w3, b3);
BOOST_HANA_ADAPT_STRUCT(wl::Mlp2, w1, b1, w2, b2);

namespace wl {

/// maximum(z, 0), the form bench/RESULTS.md's measurements used (fx::relu is a select); called
/// qualified, as argument-dependent lookup also finds fx::relu.
inline fx::Tensor relu(const fx::Tensor& z) { return fx::maximum(z, 0.0); }

/// Mean softmax cross-entropy of logits [B, C] against one-hot labels [B, C].
inline fx::Tensor xent(const fx::Tensor& logits, const fx::Tensor& onehot) {
  return -fx::mean(fx::sum(fx::log_softmax(logits, -1) * onehot, {-1}));
}

inline fx::Tensor mlp3_loss(const Mlp3& p, const fx::Tensor& x, const fx::Tensor& onehot) {
  fx::Tensor h1 = wl::relu(fx::matmul(x, p.w1) + p.b1);
  fx::Tensor h2 = wl::relu(fx::matmul(h1, p.w2) + p.b2);
  return xent(fx::matmul(h2, p.w3) + p.b3, onehot);
}

inline fx::Tensor mlp2_loss(const Mlp2& p, const fx::Tensor& x, const fx::Tensor& onehot) {
  fx::Tensor h1 = wl::relu(fx::matmul(x, p.w1) + p.b1);
  return xent(fx::matmul(h1, p.w2) + p.b2, onehot);
}

/// One example (x: [in], onehot: [classes]) through mlp2_loss.
inline fx::Tensor mlp2_example_loss(const Mlp2& p, const fx::Tensor& x, const fx::Tensor& onehot) {
  return mlp2_loss(p, fx::expand_dims(x, 0), fx::expand_dims(onehot, 0));
}

inline Mlp3 to_mlp3(const EigenMlp<float>& e) {
  return Mlp3{fx::from_eigen(e.W[0]), fx::from_eigen(e.b[0]), fx::from_eigen(e.W[1]),
              fx::from_eigen(e.b[1]), fx::from_eigen(e.W[2]), fx::from_eigen(e.b[2])};
}
inline Mlp2 to_mlp2(const EigenMlp<float>& e) {
  return Mlp2{fx::from_eigen(e.W[0]), fx::from_eigen(e.b[0]), fx::from_eigen(e.W[1]), fx::from_eigen(e.b[1])};
}
template <class T, class U> EigenMlp<T> cast_mlp(const EigenMlp<U>& e) {
  EigenMlp<T> r;
  for (size_t l = 0; l < e.layers(); ++l) {
    r.W.push_back(e.W[l].template cast<T>());
    r.b.push_back(e.b[l].template cast<T>());
  }
  return r;
}

/// Inputs of an MLP batch, both as tensors and as Eigen matrices (same f32 values).
struct MlpBatch {
  std::vector<int64_t> sizes;
  int64_t batch;
  EigenMlp<float> pe;
  MatR<float> xe;
  std::vector<int> labels;
  fx::Tensor x, onehot;
  MlpBatch(std::vector<int64_t> sizes_, int64_t batch_) : sizes(std::move(sizes_)), batch(batch_), pe(sizes, 2002) {
    std::vector<double> xv = normal_values(batch * sizes[0], 3003, 1.0);
    xe = make_matrix<float>(xv, batch, sizes[0]);
    x = make_tensor<float>(xv, {batch, sizes[0]});
    labels = mlp_labels(batch, sizes.back());
    onehot = onehot_tensor(labels, sizes.back());
  }
};

}  // namespace wl
