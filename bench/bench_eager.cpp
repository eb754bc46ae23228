// Eager-mode benchmarks: Fluxion next to the same computation written in plain Eigen.
//
//   overhead/<op>/<impl>          one op on a 1-element f32 tensor: the fixed cost of an eager op
//                                 (bind, shape rule, output allocation, kernel dispatch). The Eigen
//                                 rows allocate their 1-element result too (`ArrayXf y = x.sin()`).
//   elementwise/n=<N>/<op>/<impl> f32 throughput on N elements; Eigen fuses the chain
//                                 `x * y + sin(x)` into one loop, eager Fluxion runs three ops
//                                 (eigen_unfused writes the same three temporaries we do).
//   gemm/<dtype>/n=<N>/<impl>     N x N times N x N through dot_general (and fx::matmul) against
//                                 `C.noalias() = A * B` on row- and column-major Eigen matrices.
//
//   gemm/<dtype>/<M>x<K>x<N>/<impl> M x K times K x N (N = 1: matrix-vector) through dot_general.
//   elementwise/n=<N>/chain8/<impl> eight unfused elementwise ops, each allocating its result.
//   elementwise/n=<N>/exp_f64_underflow/<impl> f64 exp where most results underflow (subnormals).
//
// Elementwise and overhead cases are single-threaded, so their times, bytes/s use CPU time
// (Google Benchmark's default): on the shared 2-core development machine wall time mostly
// measures the other processes. GEMM may run on several threads (fluxion::num_threads(), Eigen
// with OpenMP, OpenBLAS), so the gemm cases use wall time (UseRealTime).
//
// Every case first checks that Fluxion's result equals Eigen's (SkipWithError otherwise), so the
// smoke test in CTest also catches a kernel that is fast because it is wrong.
// Results and the exact command line: bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fluxion/fluxion.hpp"

namespace fx = fluxion;

namespace {

using ArrayF = Eigen::ArrayXf;

std::vector<float> random_floats(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

template <class T> std::vector<T> random_values(int64_t n, unsigned seed) {
  std::vector<float> f = random_floats(n, seed);
  return std::vector<T>(f.begin(), f.end());
}

/// Largest |a - b| / (1 + |b|) over the elements; the tensor is read back as T.
template <class T, class Derived> double max_rel_diff(const fx::Tensor& a, const Eigen::DenseBase<Derived>& b) {
  std::vector<T> av = a.to_vector<T>();
  if (static_cast<int64_t>(av.size()) != b.size()) return INFINITY;
  double worst = 0;
  int64_t i = 0;
  // Row-major order on both sides: `b` is a 1-d array or a row-major matrix.
  for (int64_t r = 0; r < b.rows(); ++r)
    for (int64_t c = 0; c < b.cols(); ++c, ++i) {
      double ref = static_cast<double>(b.derived().coeff(r, c));
      worst = std::max(worst, std::abs(static_cast<double>(av[static_cast<size_t>(i)]) - ref) / (1 + std::abs(ref)));
    }
  return worst;
}

/// Skips the benchmark with a message when Fluxion and Eigen disagree; true when they agree.
template <class T, class Derived>
bool check_close(benchmark::State& state, const fx::Tensor& got, const Eigen::DenseBase<Derived>& want, double tol) {
  double d = max_rel_diff<T>(got, want);
  if (d <= tol) return true;
  state.SkipWithError(("Fluxion result differs from Eigen's (max rel diff " + std::to_string(d) + ")").c_str());
  return false;
}

// ---------------------------------------------------------------------------------------------
// (a) eager per-op overhead on a 1-element f32 tensor
// ---------------------------------------------------------------------------------------------

constexpr float kX = 0.5f, kY = 0.25f;

/// Times `op(x, y)` on 1-element fx tensors after checking it against `want`.
void fx_overhead(benchmark::State& state, const std::function<fx::Tensor(const fx::Tensor&, const fx::Tensor&)>& op,
                 float want) {
  fx::Tensor x = fx::full({1}, kX, fx::f32), y = fx::full({1}, kY, fx::f32);
  fx::Tensor r = op(x, y);
  if (r.size() != 1 || std::abs(r.item<float>() - want) > 1e-6f) {
    state.SkipWithError("Fluxion result differs from the scalar reference");
    return;
  }
  for (auto _ : state) {
    fx::Tensor out = op(x, y);
    benchmark::DoNotOptimize(out);
  }
}

// The lambdas are called through std::function (a few ns, the same for every fx row) so that
// every row runs the same harness; the `direct` rows below show that cost is negligible.
void register_overhead() {
  using T = const fx::Tensor&;
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(("overhead/" + name).c_str(), fn)->Unit(benchmark::kNanosecond);
  };
  reg("sin/fluxion_lax", [](benchmark::State& s) {
    fx_overhead(
        s, [](T x, T) { return fx::lax::sin(x); }, std::sin(kX));
  });
  reg("sin/fluxion_op", [](benchmark::State& s) {
    fx_overhead(
        s, [](T x, T) { return fx::sin(x); }, std::sin(kX));
  });
  reg("sin/fluxion_lax_direct", [](benchmark::State& state) {
    fx::Tensor x = fx::full({1}, kX, fx::f32);
    for (auto _ : state) {
      fx::Tensor out = fx::lax::sin(x);
      benchmark::DoNotOptimize(out);
    }
  });
  reg("sin/eigen", [](benchmark::State& state) {
    ArrayF x = ArrayF::Constant(1, kX);
    for (auto _ : state) {
      benchmark::DoNotOptimize(x.data());
      ArrayF y = x.sin();
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
  });

  reg("add/fluxion_lax", [](benchmark::State& s) {
    fx_overhead(
        s, [](T x, T y) { return fx::lax::add(x, y); }, kX + kY);
  });
  reg("add/fluxion_op", [](benchmark::State& s) {
    fx_overhead(
        s, [](T x, T y) { return x + y; }, kX + kY);
  });
  reg("add/eigen", [](benchmark::State& state) {
    ArrayF x = ArrayF::Constant(1, kX), y = ArrayF::Constant(1, kY);
    for (auto _ : state) {
      benchmark::DoNotOptimize(x.data());
      benchmark::DoNotOptimize(y.data());
      ArrayF z = x + y;
      benchmark::DoNotOptimize(z.data());
      benchmark::ClobberMemory();
    }
  });

  reg("sum/fluxion_lax", [](benchmark::State& s) {
    fx_overhead(
        s, [](T x, T) { return fx::lax::reduce_sum(x, {0}); }, kX);
  });
  reg("sum/fluxion_op", [](benchmark::State& s) {
    fx_overhead(
        s, [](T x, T) { return fx::sum(x); }, kX);
  });
  reg("sum/eigen", [](benchmark::State& state) {
    // The reduction itself allocates nothing in Eigen; the 1-element result array stands for the
    // rank-0 tensor every fx op returns.
    ArrayF x = ArrayF::Constant(1, kX);
    for (auto _ : state) {
      benchmark::DoNotOptimize(x.data());
      ArrayF s = ArrayF::Constant(1, x.sum());
      benchmark::DoNotOptimize(s.data());
      benchmark::ClobberMemory();
    }
  });

  // Breakdown aids: the bare allocation of a 1-element result on each side.
  reg("alloc/fluxion_empty", [](benchmark::State& state) {
    fx::AbstractValue aval{fx::Shape{1}, fx::f32};
    for (auto _ : state) {
      fx::Tensor t = fx::empty(aval);
      benchmark::DoNotOptimize(t);
    }
  });
  reg("alloc/eigen", [](benchmark::State& state) {
    for (auto _ : state) {
      ArrayF t(1);
      benchmark::DoNotOptimize(t.data());
      benchmark::ClobberMemory();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// (b) elementwise throughput, f32
// ---------------------------------------------------------------------------------------------

struct ElementwiseInputs {
  fx::Tensor x, y;
  ArrayF ex, ey;
  explicit ElementwiseInputs(int64_t n) {
    std::vector<float> xv = random_floats(n, 1), yv = random_floats(n, 2);
    x = fx::from_vector(xv, fx::Shape{n});
    y = fx::from_vector(yv, fx::Shape{n});
    ex = Eigen::Map<ArrayF>(xv.data(), n);
    ey = Eigen::Map<ArrayF>(yv.data(), n);
  }
};

/// Sets bytes (reads + writes of the arrays the expression names, not temporaries) and items.
void set_throughput(benchmark::State& state, int64_t n, int arrays_touched) {
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * arrays_touched * static_cast<int64_t>(sizeof(float)));
}

void register_elementwise(int64_t n) {
  const std::string prefix = "elementwise/n=" + std::to_string(n) + "/";
  auto reg = [&](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark((prefix + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };

  // x * y + sin(x): reads x, y, writes one result.
  reg("chain/fluxion_op", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    if (!check_close<float>(state, in.x * in.y + fx::sin(in.x), ArrayF(in.ex * in.ey + in.ex.sin()), 1e-5)) return;
    for (auto _ : state) {
      fx::Tensor r = in.x * in.y + fx::sin(in.x);
      benchmark::DoNotOptimize(r);
    }
    set_throughput(state, n, 3);
  });
  reg("chain/fluxion_lax", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    auto f = [&] { return fx::lax::add(fx::lax::mul(in.x, in.y), fx::lax::sin(in.x)); };
    if (!check_close<float>(state, f(), ArrayF(in.ex * in.ey + in.ex.sin()), 1e-5)) return;
    for (auto _ : state) {
      fx::Tensor r = f();
      benchmark::DoNotOptimize(r);
    }
    set_throughput(state, n, 3);
  });
  reg("chain/eigen", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    for (auto _ : state) {
      ArrayF r = in.ex * in.ey + in.ex.sin();
      benchmark::DoNotOptimize(r.data());
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 3);
  });
  reg("chain/eigen_unfused", [n](benchmark::State& state) {
    // What eager execution does: one pass and one fresh array per op.
    ElementwiseInputs in(n);
    for (auto _ : state) {
      ArrayF t1 = in.ex * in.ey;
      benchmark::DoNotOptimize(t1.data());
      ArrayF t2 = in.ex.sin();
      benchmark::DoNotOptimize(t2.data());
      ArrayF r = t1 + t2;
      benchmark::DoNotOptimize(r.data());
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 3);
  });

  reg("add/fluxion_lax", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    if (!check_close<float>(state, fx::lax::add(in.x, in.y), ArrayF(in.ex + in.ey), 0)) return;
    for (auto _ : state) {
      fx::Tensor r = fx::lax::add(in.x, in.y);
      benchmark::DoNotOptimize(r);
    }
    set_throughput(state, n, 3);
  });
  reg("add/eigen", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    for (auto _ : state) {
      ArrayF r = in.ex + in.ey;
      benchmark::DoNotOptimize(r.data());
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 3);
  });

  reg("exp/fluxion_lax", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    if (!check_close<float>(state, fx::lax::exp(in.x), ArrayF(in.ex.exp()), 1e-6)) return;
    for (auto _ : state) {
      fx::Tensor r = fx::lax::exp(in.x);
      benchmark::DoNotOptimize(r);
    }
    set_throughput(state, n, 2);
  });
  reg("exp/eigen", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    for (auto _ : state) {
      ArrayF r = in.ex.exp();
      benchmark::DoNotOptimize(r.data());
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 2);
  });
}

/// f64 exp of arguments in [lo, lo + width] (random_values gives [-1, 1]): `exp_f64_underflow`
/// takes [-760, -660], most below -708 where exp underflows to subnormals: Fluxion's exp returns 0
/// there (ExpFlushToZero, backends/cpu/special_functions.hpp); Eigen's pexp scales through
/// subnormal values, each a microcode assist (W8's logsumexp has such arguments). `exp_f64`
/// takes [-20, 20] at an n whose operands stay in L2: the polynomial's cost (exp_f64 against
/// Eigen's rational pexp with its division).
void register_exp_f64(int64_t n, const std::string& name, double lo, double width, double tol) {
  const std::string prefix = "elementwise/n=" + std::to_string(n) + "/" + name + "/";
  auto inputs = [n, lo, width] {
    std::vector<double> v = random_values<double>(n, 5);
    for (double& x : v) x = lo + width * (x + 1.0) / 2.0;
    return v;
  };
  auto reg = [&](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark((prefix + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  reg("fluxion_lax", [=](benchmark::State& state) {
    std::vector<double> v = inputs();
    fx::Tensor x = fx::from_vector(v, fx::Shape{n});
    const Eigen::ArrayXd want = Eigen::Map<const Eigen::ArrayXd>(v.data(), n).exp();
    if (!check_close<double>(state, fx::lax::exp(x), want, tol)) return;
    for (auto _ : state) {
      fx::Tensor r = fx::lax::exp(x);
      benchmark::DoNotOptimize(r);
    }
    set_throughput(state, n, 2);
  });
  reg("eigen", [=](benchmark::State& state) {
    std::vector<double> v = inputs();
    const Eigen::ArrayXd x = Eigen::Map<const Eigen::ArrayXd>(v.data(), n);
    for (auto _ : state) {
      Eigen::ArrayXd r = x.exp();
      benchmark::DoNotOptimize(r.data());
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 2);
  });
}

// ---------------------------------------------------------------------------------------------
// (b2) an unfused chain of 8 elementwise ops: every op allocates a fresh N-element result and
//      frees the previous one, so this measures the allocator as much as the kernels
// ---------------------------------------------------------------------------------------------

void register_chain8(int64_t n) {
  const std::string prefix = "elementwise/n=" + std::to_string(n) + "/chain8/";
  auto reg = [&](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark((prefix + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  // |-((x*y + x - y) * x) + y| - x, one op at a time.
  reg("fluxion_lax", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    namespace lax = fx::lax;
    auto f = [&] {
      fx::Tensor t = lax::mul(in.x, in.y);
      t = lax::add(t, in.x);
      t = lax::sub(t, in.y);
      t = lax::mul(t, in.x);
      t = lax::neg(t);
      t = lax::add(t, in.y);
      t = lax::abs(t);
      return lax::sub(t, in.x);
    };
    ArrayF want = ((-((in.ex * in.ey + in.ex - in.ey) * in.ex)) + in.ey).abs() - in.ex;
    if (!check_close<float>(state, f(), want, 1e-6)) return;
    for (auto _ : state) {
      fx::Tensor r = f();
      benchmark::DoNotOptimize(r);
    }
    set_throughput(state, n, 3);
  });
  reg("eigen", [n](benchmark::State& state) {
    ElementwiseInputs in(n);
    for (auto _ : state) {
      ArrayF r = ((-((in.ex * in.ey + in.ex - in.ey) * in.ex)) + in.ey).abs() - in.ex;
      benchmark::DoNotOptimize(r.data());
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 3);
  });
  reg("eigen_unfused", [n](benchmark::State& state) {
    // The same allocation pattern as eager Fluxion: a fresh array per op, the previous one freed.
    ElementwiseInputs in(n);
    const ArrayF &x = in.ex, &y = in.ey;
    auto step = [](ArrayF& t, ArrayF next) {
      benchmark::DoNotOptimize(next.data());
      t.swap(next);  // the previous array is freed when `next` goes out of scope
    };
    for (auto _ : state) {
      ArrayF t = x * y;
      benchmark::DoNotOptimize(t.data());
      step(t, t + x);
      step(t, t - y);
      step(t, t * x);
      step(t, -t);
      step(t, t + y);
      step(t, t.abs());
      step(t, t - x);
      benchmark::ClobberMemory();
    }
    set_throughput(state, n, 3);
  });
}

// ---------------------------------------------------------------------------------------------
// (c) GEMM: N x N @ N x N
// ---------------------------------------------------------------------------------------------

void set_gflops(benchmark::State& state, int64_t n) {
  // Value per iteration in GFLOP; kIsIterationInvariantRate multiplies by iterations and divides
  // by the elapsed time, giving GFLOP/s.
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(n) * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <class T> void register_gemm(int64_t n) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  const std::string prefix = std::string("gemm/") + (sizeof(T) == 4 ? "f32" : "f64") + "/n=" + std::to_string(n) + "/";
  auto reg = [&](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark((prefix + name).c_str(), fn)->Unit(benchmark::kMicrosecond)->UseRealTime();
  };
  // Tolerance: both sides sum n products of values in [-1, 1], possibly in different orders.
  const double tol = (sizeof(T) == 4 ? 1e-6 : 1e-14) * static_cast<double>(n);

  auto fx_case = [n, tol](bool use_matmul) {
    return [n, tol, use_matmul](benchmark::State& state) {
      std::vector<T> av = random_values<T>(n * n, 3), bv = random_values<T>(n * n, 4);
      fx::Tensor a = fx::from_vector(av, fx::Shape{n, n}), b = fx::from_vector(bv, fx::Shape{n, n});
      RowMajor ea = Eigen::Map<RowMajor>(av.data(), n, n), eb = Eigen::Map<RowMajor>(bv.data(), n, n);
      RowMajor want = ea * eb;
      auto f = [&] { return use_matmul ? fx::matmul(a, b) : fx::lax::dot_general(a, b, fx::AxisPair{{1}, {0}}, {}); };
      if (!check_close<T>(state, f(), want, tol)) return;
      for (auto _ : state) {
        fx::Tensor c = f();
        benchmark::DoNotOptimize(c);
      }
      set_gflops(state, n);
    };
  };
  reg("fluxion_dot_general", fx_case(false));
  reg("fluxion_matmul", fx_case(true));

  auto eigen_case = [n](auto layout_tag) {
    return [n](benchmark::State& state) {
      using M = typename decltype(layout_tag)::type;
      std::vector<T> av = random_values<T>(n * n, 3), bv = random_values<T>(n * n, 4);
      M a = Eigen::Map<RowMajor>(av.data(), n, n), b = Eigen::Map<RowMajor>(bv.data(), n, n);
      M c(n, n);
      for (auto _ : state) {
        c.noalias() = a * b;
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
      }
      set_gflops(state, n);
    };
  };
  reg("eigen_rowmajor", eigen_case(std::common_type<RowMajor>{}));
  reg("eigen_colmajor", eigen_case(std::common_type<ColMajor>{}));
}

/// M x K times K x N (N = 1: matrix-vector) through dot_general against Eigen's row-major product.
template <class T> void register_gemm_shape(int64_t m, int64_t k, int64_t n) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::string prefix = std::string("gemm/") + (sizeof(T) == 4 ? "f32" : "f64") + "/" + std::to_string(m) + "x" +
                             std::to_string(k) + "x" + std::to_string(n) + "/";
  auto reg = [&](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark((prefix + name).c_str(), fn)->Unit(benchmark::kMicrosecond)->UseRealTime();
  };
  auto flops = [m, k, n](benchmark::State& state) {
    state.counters["GFLOPS"] =
        benchmark::Counter(2.0 * static_cast<double>(m) * k * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  };
  const double tol = (sizeof(T) == 4 ? 1e-6 : 1e-14) * static_cast<double>(k);
  reg("fluxion_dot_general", [=](benchmark::State& state) {
    std::vector<T> av = random_values<T>(m * k, 3), bv = random_values<T>(k * n, 4);
    fx::Tensor a = fx::from_vector(av, fx::Shape{m, k});
    fx::Tensor b = n == 1 ? fx::from_vector(bv, fx::Shape{k}) : fx::from_vector(bv, fx::Shape{k, n});
    RowMajor want = Eigen::Map<RowMajor>(av.data(), m, k) * Eigen::Map<RowMajor>(bv.data(), k, n);
    auto f = [&] { return fx::lax::dot_general(a, b, fx::AxisPair{{1}, {0}}, {}); };
    if (!check_close<T>(state, f(), want, tol)) return;
    for (auto _ : state) {
      fx::Tensor c = f();
      benchmark::DoNotOptimize(c);
    }
    flops(state);
  });
  reg("eigen_rowmajor", [=](benchmark::State& state) {
    std::vector<T> av = random_values<T>(m * k, 3), bv = random_values<T>(k * n, 4);
    RowMajor a = Eigen::Map<RowMajor>(av.data(), m, k), b = Eigen::Map<RowMajor>(bv.data(), k, n), c(m, n);
    for (auto _ : state) {
      c.noalias() = a * b;
      benchmark::DoNotOptimize(c.data());
      benchmark::ClobberMemory();
    }
    flops(state);
  });
}

}  // namespace

int main(int argc, char** argv) {
  register_overhead();
  for (int64_t n : {int64_t(1000000), int64_t(10000000)}) register_elementwise(n);
  register_exp_f64(1000000, "exp_f64_underflow", -760.0, 100.0, 1e-300);
  register_exp_f64(65536, "exp_f64", -20.0, 40.0, 1e-15);
  for (int64_t n : {int64_t(1000000), int64_t(16000000)}) register_chain8(n);
  for (int64_t n : {int64_t(256), int64_t(1024)}) {
    register_gemm<float>(n);
    register_gemm<double>(n);
  }
  // The shapes of the GEMM comparison in bench/RESULTS.md (MLP layers, tall-skinny, GEMV).
  register_gemm_shape<float>(256, 784, 512);
  register_gemm_shape<float>(32, 784, 512);
  register_gemm_shape<float>(1024, 512, 512);
  register_gemm_shape<float>(2048, 32, 32);
  register_gemm_shape<float>(2048, 32, 1);
  register_gemm_shape<float>(1024, 1024, 1);
  register_gemm_shape<double>(1000, 1000, 1000);
  register_gemm_shape<double>(1000, 1000, 1);  // the GEMVs of W5's logreg hvp: split over the threads
  // Skinny and short f64 products (split_product on 2+ threads, panel_product per slice): W8's
  // per-component products at d=64 with K=50 and K=100 components.
  register_gemm_shape<double>(1000, 64, 3200);
  register_gemm_shape<double>(1000, 64, 6400);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
