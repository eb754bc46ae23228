// The CUDA jit without a GPU: the emulated runner (backends/cuda/jit/plan_runners.hpp) runs jit'd
// functions with every fused group as its generated CUDA kernel, compiled by the host compiler and
// run over a grid on the CPU, and must give the CPU jit's values. The generator's kernels are named
// by their source: literals are parameters (one kernel for any constant), dtypes are not.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "fluxion/fluxion.hpp"
#include "sample_eval.hpp"
#include "samples.hpp"

#ifdef FLUXION_WITH_CUDA
#include "backends/cuda/jit/fused_kernel.hpp"
#include "backends/cuda/jit/host_compiler.hpp"
#include "backends/cuda/jit/plan_runners.hpp"
#include "runtime/backend.hpp"
#include "runtime/executable.hpp"
#include "runtime/planner.hpp"
#include "runtime/switches.hpp"

namespace fx = fluxion;
namespace rt = fluxion::runtime;
namespace jit = fluxion::cuda::jit;
using fluxion::testing::random_tensor;

namespace {

/// Makes the emulated runner the CPU backend's plan runner while alive.
struct EmulatedSwap {
  const rt::PlanRunner* before;
  EmulatedSwap() : before(rt::set_plan_runner(fx::Backend::cpu, &jit::emulated_plan_runner())) {}
  ~EmulatedSwap() { rt::set_plan_runner(fx::Backend::cpu, before); }
};

/// Values equal within `tol` relative to the largest magnitude (the generated kernels call the C
/// library's functions, the CPU's kernels Eigen's: a few ulps apart).
void check_close(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    CAPTURE(k);
    REQUIRE(got[k].aval() == want[k].aval());
    const fx::Tensor g = fx::astype(got[k], fx::f64), w = fx::astype(want[k], fx::f64);
    const double scale = 1.0 + fx::max(fx::abs(w)).item<double>();
    CHECK(fx::max(fx::abs(g - w)).item<double>() <= tol * scale);
  }
}

/// The plan of `f` on `args` as the emulated runner lowers it, and its outputs against the CPU
/// jit's. Returns the plan's description. `fused`: the plan must launch a generated kernel.
template <class F> std::string check_against_cpu(const F& f, const std::vector<fx::Tensor>& args, bool fused = true) {
  const fx::Jaxpr j = fx::make_jaxpr(f)(args);
  std::vector<fx::Tensor> want, got;
  fx::compile_jaxpr(j, fx::Device::cpu())->run(args, want);
  const int launches = jit::emulation_counts().fused_launches;
  std::string plan;
  {
    EmulatedSwap swap;
    auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
    plan = exe->describe();
    exe->run(args, got);
    exe->run(args, got);  // a reused state
  }
  if (fused) {
    CHECK_MESSAGE(plan.find("kernel fx_fused_") != std::string::npos, plan);
    CHECK(jit::emulation_counts().fused_launches > launches);
  }
  bool f32 = false;
  for (const fx::Tensor& a : args) f32 = f32 || a.dtype() == fx::f32;
  check_close(got, want, f32 ? 2e-5 : 1e-12);  // values computed in f32 somewhere: f32's tolerance
  return plan;
}

}  // namespace

TEST_CASE("cuda jit (emulated): elementwise chains in f32 and f64 give the CPU jit's values") {
  auto chain = [](const std::vector<fx::Tensor>& a) {
    const fx::Tensor& x = a[0];
    const fx::Tensor& y = a[1];
    fx::Tensor t = fx::sin(x) * y + fx::exp(-x * x) / (1.0 + y * y);
    t = fx::tanh(t) - fx::maximum(x, y) * 0.25 + fx::sqrt(fx::abs(y) + 1.0);
    return std::vector<fx::Tensor>{t, fx::log1p(fx::abs(t)) * x};
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    // 3000 elements: the emulated grid of 4 blocks of 256 strides three times.
    const std::string plan = check_against_cpu(chain, {random_tensor({30, 100}, d, 1), random_tensor({30, 100}, d, 2)});
    CHECK_MESSAGE(plan.find("1 fused groups") != std::string::npos, plan);
  }
}

TEST_CASE("cuda jit (emulated): rank-0 operands, literals, conversions and integers") {
  // A rank-0 argument broadcast over the group, literals, and a one-element group (n = 1).
  auto scaled = [](const std::vector<fx::Tensor>& a) {
    return std::vector<fx::Tensor>{fx::cos(a[0] * a[1] + 2.0) * a[1] - 0.5};
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    check_against_cpu(scaled, {random_tensor({777}, d, 3), random_tensor({}, d, 4)});
    check_against_cpu(scaled, {random_tensor({1}, d, 5), random_tensor({}, d, 6)});
  }
  // f32 -> f64 inside a group, and comparisons to bool outputs.
  auto mixed = [](const std::vector<fx::Tensor>& a) {
    const fx::Tensor wide = fx::astype(fx::exp(a[0]) * 3.0f, fx::f64);
    return std::vector<fx::Tensor>{wide * wide + 1.0, fx::sin(a[0]) > fx::cos(a[0])};
  };
  check_against_cpu(mixed, {random_tensor({2, 600}, fx::f32, 7)});
  // Integers wrap in the shared functors as in the CPU's kernels.
  auto ints = [](const std::vector<fx::Tensor>& a) { return std::vector<fx::Tensor>{(a[0] * 7 + a[1]) * a[1] - 3}; };
  const fx::Tensor i = fx::astype(random_tensor({1500}, fx::f64, 8, -1e9, 1e9), fx::i32);
  const fx::Tensor k = fx::astype(random_tensor({1500}, fx::f64, 9, -1e9, 1e9), fx::i32);
  check_against_cpu(ints, {i, k});
}

TEST_CASE("cuda jit (emulated): a long chain is one kernel") {
  auto longer = [](const std::vector<fx::Tensor>& a) {
    fx::Tensor t = a[0];
    for (int k = 0; k < 40; ++k) t = (k % 3 == 0 ? fx::sin(t) : k % 3 == 1 ? t * 1.01 + a[1] : fx::tanh(t - a[1]));
    return std::vector<fx::Tensor>{t};
  };
  const std::string plan =
      check_against_cpu(longer, {random_tensor({4096}, fx::f64, 10), random_tensor({4096}, fx::f64, 11)});
  CHECK_MESSAGE(plan.find("0 kernels, 1 fused groups") != std::string::npos, plan);
}

TEST_CASE("cuda jit (emulated): value_and_grad of a small MLP, through jit itself") {
  auto loss = [](const fx::Tensor& w1, const fx::Tensor& b1, const fx::Tensor& w2, const fx::Tensor& x) {
    fx::Tensor h = fx::tanh(fx::matmul(x, w1) + b1);
    fx::Tensor y = fx::matmul(h, w2);
    return fx::sum(fx::exp(-fx::square(y))) + fx::sum(fx::square(h - 0.5));
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    const fx::Tensor w1 = random_tensor({16, 32}, d, 12), b1 = random_tensor({32}, d, 13);
    const fx::Tensor w2 = random_tensor({32, 4}, d, 14), x = random_tensor({64, 16}, d, 15);
    auto vg = fx::value_and_grad(loss, fx::argnums<0, 1, 2>);
    const auto want = fx::jit(vg)(w1, b1, w2, x);
    const jit::EmulationCounts before = jit::emulation_counts();
    EmulatedSwap swap;
    const auto got = fx::jit(vg)(w1, b1, w2, x);  // a new jit: planned with the emulated runner
    const jit::EmulationCounts after = jit::emulation_counts();
    CHECK(after.fused_launches > before.fused_launches);
    MESSAGE("[cuda jit] MLP kernel steps: "
            << after.emulated_kernel_steps - before.emulated_kernel_steps << " on cuda_emulated kernels, "
            << after.cpu_kernel_steps - before.cpu_kernel_steps << " on CPU kernels (no cuda_emulated kernel yet)");
    const double tol = d == fx::f32 ? 2e-5 : 1e-12;
    check_close({got.first}, {want.first}, tol);
    check_close({std::get<0>(got.second), std::get<1>(got.second), std::get<2>(got.second)},
                {std::get<0>(want.second), std::get<1>(want.second), std::get<2>(want.second)}, tol);
  }
}

TEST_CASE("cuda jit: kernels are named by their source; literals are parameters") {
  // Plans with the jit's lowering slot only (no compile), to look at the generated kernels.
  struct PlanOnly final : rt::PlanRunner {
    const char* name() const override { return "plan only"; }
    const rt::Lowering& lowering() const override { return jit::fused_lowering(); }
    void run(const rt::Plan&, rt::RunState&) const override {}
  } planner;
  auto kernel_of = [&](double c, fx::DType d) {
    const fx::Tensor x = random_tensor({64}, d, 16);
    const fx::Jaxpr j = fx::make_jaxpr([c](const fx::Tensor& t) { return fx::exp(t * c) + t; })(x);
    const rt::Plan plan = rt::make_plan(j, fx::Device::cpu(), planner);
    for (const rt::Step& step : plan.steps)
      if (step.type == rt::Step::fused) return jit::generate_fused_kernel(j, step);
    FAIL("no fused step");
    return jit::FusedKernel{};
  };
  const jit::FusedKernel a = kernel_of(2.0, fx::f32), b = kernel_of(-3.5, fx::f32), c = kernel_of(2.0, fx::f64);
  CHECK(a.name == b.name);  // one kernel for any constant
  CHECK(a.source == b.source);
  CHECK(a.name != c.name);
  CHECK(a.name.rfind("fx_fused_", 0) == 0);
  CHECK(a.source.find("extern \"C\" __global__ void " + a.name + "(") != std::string::npos);
  CHECK(a.source.find("fluxion::scalar_functions::Exp::apply(") != std::string::npos);  // the shared functors' text
  // Parameters: x read, the literal by value, the output written.
  int literals = 0, written = 0;
  for (const jit::FusedKernelParam& p : a.params) {
    literals += p.kind == jit::FusedKernelParam::literal;
    written += p.written;
  }
  CHECK(literals == 1);
  CHECK(written == 1);
  CHECK(jit::fused_grid(1, 4) == 1);
  CHECK(jit::fused_grid(257, 4) == 2);
  CHECK(jit::fused_grid(1 << 20, 4) == 4);
}

/// "" when `got` and `want` hold the same values bit for bit as far as a value can tell (NaN equals
/// NaN, zeros' signs compared), else the first difference.
std::string exact_difference(const fx::Tensor& got, const fx::Tensor& want) {
  if (!(got.aval() == want.aval())) return "avals differ";
  if (!fx::is_floating(want.dtype())) {
    const std::vector<int64_t> g = got.to_vector<int64_t>(), w = want.to_vector<int64_t>();
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] != w[i])
        return "element " + std::to_string(i) + ": " + std::to_string(g[i]) + " vs " + std::to_string(w[i]);
    return "";
  }
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const bool same =
        (std::isnan(g[i]) && std::isnan(w[i])) || (g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]));
    if (!same) return "element " + std::to_string(i) + ": " + std::to_string(g[i]) + " vs " + std::to_string(w[i]);
  }
  return "";
}

TEST_CASE("cuda jit (emulated): every elementwise sample, inside a generated kernel, gives its eager kernel's bits") {
  // Each sample of an elementwise primitive with a functor, followed by an exact identity that
  // fuses with it (neg twice; logical_not twice on bool), planned without the optimizing passes
  // (which would drop the identity), so the primitive is a member of a generated kernel. The eager
  // cuda_emulated kernel applies the same functor: the values must agree bit for bit.
  fx::runtime::ensure_kernel_table(fx::Backend::cuda_emulated);
  int fused = 0, primitives = 0;
  for (const fx::Primitive* p : fx::all_primitives()) {
    if (!jit::fused_lowering().fuses(*p)) continue;
    auto it = fluxion::testing::sample_registry().find(p->name);
    if (it == fluxion::testing::sample_registry().end()) continue;
    ++primitives;
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const fluxion::testing::Sample& sample : it->second.make(dt)) {
        CAPTURE(p->name);
        CAPTURE(sample.label);
        const fx::Jaxpr one = fluxion::testing::stage_sample(sample);
        REQUIRE(one.equations.size() == 1);
        const std::vector<fx::Tensor> in = fluxion::testing::equation_inputs(one, sample);
        const fx::Tensor want = fx::eval_primitive(*p, in, *one.equations[0].params, fx::Backend::cuda_emulated)[0];
        auto identity = [](const fx::Tensor& y) {
          return y.dtype() == fx::boolean ? fx::lax::logical_not(fx::lax::logical_not(y))
                                          : fx::lax::neg(fx::lax::neg(y));
        };
        auto jaxpr = std::make_shared<fx::Jaxpr>(fx::make_jaxpr([&](const std::vector<fx::Tensor>& args) {
          return std::vector<fx::Tensor>{identity(sample.fn(args)[0])};
        })(sample.inputs));
        std::vector<fx::Tensor> got;
        std::string plan;
        {
          EmulatedSwap swap;
          fx::Executable exe(jaxpr, fx::Device::cpu());
          plan = exe.describe();
          exe.run(sample.inputs, got);
        }
        fused += plan.find("fused[3 ops") != std::string::npos;
        CHECK_MESSAGE(exact_difference(got[0], want).empty(), exact_difference(got[0], want) << "\n" << plan);
      }
    }
  }
  MESSAGE("[cuda jit] " << jit::host_compile_count() << " host compiles so far; " << fused << " samples of "
                        << primitives
                        << " elementwise primitives ran inside generated kernels (the others are empty or mix dtypes)");
  CHECK(fused > 100);
}

TEST_CASE("cuda jit: the CUDA runner is Backend::cuda's, planning with the jit's lowering slot") {
  const rt::PlanRunner& runner = rt::plan_runner(fx::Backend::cuda);
  CHECK(&runner == &jit::cuda_plan_runner());
  CHECK(&runner.lowering() == &jit::fused_lowering());
  CHECK(jit::fused_lowering().fuses(
      *fx::make_jaxpr([](const fx::Tensor& x) { return fx::sin(x); })(fx::zeros({2})).equations[0].primitive));
}

TEST_CASE("cuda jit (emulated): concurrent calls of one plan each use their own state") {
  // The full sum is a block sum: the emulation's launches of its kernel take turns (static
  // __shared__ arrays), each with its own arguments.
  auto f = [](const std::vector<fx::Tensor>& a) {
    const fx::Tensor y = fx::exp(a[0] * 0.5) - a[0];
    return std::vector<fx::Tensor>{y, fx::sum(y)};
  };
  const fx::Tensor x = random_tensor({5000}, fx::f64, 17);
  const fx::Jaxpr j = fx::make_jaxpr(f)(std::vector<fx::Tensor>{x});
  std::vector<fx::Tensor> want;
  fx::compile_jaxpr(j, fx::Device::cpu())->run({x}, want);
  EmulatedSwap swap;
  auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
  std::vector<std::vector<fx::Tensor>> got(4);
  std::vector<std::thread> threads;
  for (auto& out : got)
    threads.emplace_back([&] {
      for (int k = 0; k < 5; ++k) exe->run({x}, out);
    });
  for (std::thread& t : threads) t.join();
  for (const auto& out : got) check_close(out, want, 1e-12);
}

namespace {

/// Plans with a lowering slot only (no lowering, no run): to count steps and look at kernels.
struct PlanOnly final : rt::PlanRunner {
  const rt::Lowering& slot;
  explicit PlanOnly(const rt::Lowering& l) : slot(l) {}
  const char* name() const override { return "plan only"; }
  const rt::Lowering& lowering() const override { return slot; }
  void run(const rt::Plan&, rt::RunState&) const override {}
};

/// The jit's lowering slot as it was before broadcasts and sums fused: elementwise members only.
struct ElementwiseOnly final : rt::Lowering {
  bool fuses(const fx::Primitive& p) const override { return jit::fused_lowering().fuses(p); }
};

/// Kernel and fused steps of `plan` (what launches work on a device).
int launching_steps(const rt::Plan& plan) {
  int count = 0;
  for (const rt::Step& step : plan.steps)
    count += step.type == rt::Step::kernel || step.type == rt::Step::fused ? 1 : 0;
  for (const rt::Step& step : plan.steps) count += static_cast<int>(step.parts.size());
  return count;
}

/// check_against_cpu, and the steps of the emulated runner's plan against those of the same
/// optimized Jaxpr planned with elementwise fusion only: {now, before}.
template <class F> std::pair<int, int> check_fewer_steps(const F& f, const std::vector<fx::Tensor>& args) {
  check_against_cpu(f, args);
  const fx::Jaxpr j = fx::make_jaxpr(f)(args);
  EmulatedSwap swap;
  auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
  const ElementwiseOnly elementwise;
  const rt::Plan before = rt::make_plan(*exe->plan().jaxpr, fx::Device::cpu(), PlanOnly(elementwise));
  const int now = launching_steps(exe->plan()), was = launching_steps(before);
  CHECK_MESSAGE(now < was, exe->describe());
  return {now, was};
}

}  // namespace

TEST_CASE("cuda jit (emulated): bias adds, row and column broadcasts fuse into the generated kernel") {
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    // A bias along the last dim (row vector), a scale along the first (column vector), a rank-3
    // broadcast along the middle dim: each one kernel, no broadcast step.
    auto bias = [](const std::vector<fx::Tensor>& a) {
      const fx::Tensor col = fx::expand_dims(a[2], 1);
      return std::vector<fx::Tensor>{fx::tanh(a[0] + a[1]) * col - a[1]};
    };
    const auto [now, was] = check_fewer_steps(
        bias, {random_tensor({70, 48}, d, 21), random_tensor({48}, d, 22), random_tensor({70}, d, 23)});
    CHECK(now == 1);
    auto middle = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::exp(a[0] * fx::expand_dims(a[1], {0, 2}))};
    };
    check_fewer_steps(middle, {random_tensor({3, 50, 9}, d, 24), random_tensor({50}, d, 25)});
    // Size-1 dims: broadcasts along them only, and a one-element group.
    auto ones = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sin(a[0] + a[1]) * fx::broadcast_to(a[2], {5, 1, 7})};
    };
    check_against_cpu(ones,
                      {random_tensor({5, 1, 7}, d, 26), random_tensor({1, 7}, d, 27), random_tensor({5, 1, 1}, d, 28)});
    check_against_cpu(ones,
                      {random_tensor({5, 1, 7}, d, 29), random_tensor({7}, d, 30), random_tensor({1, 1, 1}, d, 31)});
  }
}

TEST_CASE("cuda jit (emulated): sums end generated kernels (a thread per output), in f32 and f64") {
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    // A full sum (one output over 5000 elements), a sum over the last dim (rows), over the first
    // (columns: outputs 1 apart), over the middle dims of a rank-4 value.
    auto squares = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::square(a[0] - 0.5))};
    };
    CHECK(check_fewer_steps(squares, {random_tensor({50, 100}, d, 32)}).first == 1);
    auto rows = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::exp(a[0]) * a[0], {1})};
    };
    check_fewer_steps(rows, {random_tensor({1300, 7}, d, 33)});
    auto columns = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::abs(a[0]) + a[1], {0})};
    };
    check_fewer_steps(columns, {random_tensor({9, 1100}, d, 34), random_tensor({1100}, d, 35)});
    auto middle = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::cos(a[0]), {1, 2})};
    };
    check_fewer_steps(middle, {random_tensor({3, 4, 5, 6}, d, 36)});
    // Sums of one value over different axes (two loops in one kernel), the summed value also read
    // outside (stored once), and a mean subtracted afterwards (a rank-0 operand of the next group).
    auto several = [](const std::vector<fx::Tensor>& a) {
      const fx::Tensor y = fx::sin(a[0]) * a[0];
      const fx::Tensor total = fx::sum(y), by_row = fx::sum(y, {1}), by_column = fx::sum(y, {0});
      return std::vector<fx::Tensor>{total, by_row, by_column, y - total / 600.0};
    };
    check_fewer_steps(several, {random_tensor({20, 30}, d, 37)});
    // Long runs into few outputs: a block per output (shared-memory sums), blocks striding over
    // 10 outputs; runs 6 apart; two sums of one layout in one block loop.
    auto long_rows = [](const std::vector<fx::Tensor>& a) {
      const fx::Tensor y = fx::tanh(a[0] + a[1]);
      return std::vector<fx::Tensor>{fx::sum(y, {1}), fx::sum(y * y, {1}), y};
    };
    check_fewer_steps(long_rows, {random_tensor({10, 700}, d, 47), random_tensor({700}, d, 48)});
    auto long_columns = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::exp(a[0]), {0})};
    };
    check_fewer_steps(long_columns, {random_tensor({600, 6}, d, 49)});
    // Size-1 and empty dims: sums over them (or over dims apart) stay kernels; the values agree.
    auto small = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::exp(a[0]), {1}), fx::sum(a[0] * 2.0, {0, 2})};
    };
    check_against_cpu(small, {random_tensor({6, 1, 40}, d, 38)}, false);
    auto empty = [](const std::vector<fx::Tensor>& a) {
      return std::vector<fx::Tensor>{fx::sum(fx::exp(a[0] + a[1]), {0}), fx::sum(a[0] * a[0], {1})};
    };
    const std::vector<fx::Tensor> args{random_tensor({0, 5}, d, 39), random_tensor({5}, d, 40)};
    const fx::Jaxpr j = fx::make_jaxpr(empty)(args);
    std::vector<fx::Tensor> want, got;
    fx::compile_jaxpr(j, fx::Device::cpu())->run(args, want);
    {
      EmulatedSwap swap;
      fx::compile_jaxpr(j, fx::Device::cpu())->run(args, got);
    }
    REQUIRE(got.size() == 2);
    CHECK(exact_difference(got[0], want[0]).empty());  // +0 sums of nothing
    CHECK(exact_difference(got[1], want[1]).empty());  // f[0]
  }
}

namespace {

/// The program of broadcasts and sums both tests below run: thread-per-output row and column sums,
/// block-per-output full and long-row sums, a bias and a column scale read by index map, softmax.
std::vector<fx::Tensor> broadcasts_and_sums(const fx::Tensor& x, const fx::Tensor& b, const fx::Tensor& c) {
  const fx::Tensor h = fx::tanh(x + b) * fx::expand_dims(c, 1);
  const fx::Tensor e = fx::exp(x - fx::max(x, {1}, true));
  return {h,
          fx::sum(h, {1}),
          fx::sum(h * h, {0}),
          fx::sum(fx::square(h - 0.5)),
          e / fx::sum(e, {1}, true),
          fx::sum(fx::exp(fx::transpose(x)), {1})};
}

}  // namespace

TEST_CASE("cuda jit (emulated): the GPU test's program of broadcasts and sums, smaller") {
  auto f = [](const std::vector<fx::Tensor>& a) { return broadcasts_and_sums(a[0], a[1], a[2]); };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    check_fewer_steps(f, {random_tensor({520, 30}, d, 53), random_tensor({30}, d, 54), random_tensor({520}, d, 55)});
  }
}

TEST_CASE("cuda jit (emulated): softmax fuses its broadcasts and its sum; max stays a kernel") {
  auto softmax = [](const std::vector<fx::Tensor>& a) {
    const fx::Tensor e = fx::exp(a[0] - fx::max(a[0], {1}, true));
    return std::vector<fx::Tensor>{e / fx::sum(e, {1}, true)};
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    const auto [now, was] = check_fewer_steps(softmax, {random_tensor({300, 17}, d, 41)});
    CHECK(now == 3);  // max, exp and its sums, the division by the broadcast sums
  }
}

TEST_CASE("cuda jit (emulated): value_and_grad of an MLP fuses bias adds and gradient sums") {
  auto loss = [](const fx::Tensor& w1, const fx::Tensor& b1, const fx::Tensor& w2, const fx::Tensor& x) {
    fx::Tensor h = fx::tanh(fx::matmul(x, w1) + b1);
    return fx::sum(fx::exp(-fx::square(fx::matmul(h, w2)))) + fx::sum(fx::square(h - 0.5));
  };
  auto vg = [&](const std::vector<fx::Tensor>& a) {
    const auto [value, grads] = fx::value_and_grad(loss, fx::argnums<0, 1, 2>)(a[0], a[1], a[2], a[3]);
    return std::vector<fx::Tensor>{value, std::get<0>(grads), std::get<1>(grads), std::get<2>(grads)};
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    const auto [now, was] = check_fewer_steps(vg, {random_tensor({16, 32}, d, 12), random_tensor({32}, d, 13),
                                                   random_tensor({32, 4}, d, 14), random_tensor({64, 16}, d, 15)});
    MESSAGE("[cuda jit] MLP value_and_grad (" << d << "): " << now << " steps, " << was
                                              << " with elementwise fusion only");
  }
}

TEST_CASE("cuda jit (emulated): the fusion switch still turns every fused kernel off") {
  auto f = [](const std::vector<fx::Tensor>& a) {
    return std::vector<fx::Tensor>{fx::sum(fx::tanh(a[0] + a[1]), {1}), fx::exp(a[0] * a[1])};
  };
  const std::vector<fx::Tensor> args{random_tensor({40, 30}, fx::f64, 42), random_tensor({30}, fx::f64, 43)};
  const fx::Jaxpr j = fx::make_jaxpr(f)(args);
  std::vector<fx::Tensor> want, got;
  fx::compile_jaxpr(j, fx::Device::cpu())->run(args, want);
  rt::set_disabled("fusion");
  std::string plan;
  try {
    EmulatedSwap swap;
    auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
    plan = exe->describe();
    exe->run(args, got);
  } catch (...) {
    rt::set_disabled("");
    throw;
  }
  rt::set_disabled("");
  CHECK_MESSAGE(plan.find(" 0 fused groups") != std::string::npos, plan);
  check_close(got, want, 1e-12);
}

TEST_CASE("cuda jit: a kernel with broadcasts and sums reads operands by index map and loops per output") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& b) { return fx::sum(fx::exp(x + b), {1}); };
  const fx::Jaxpr j = fx::make_jaxpr(f)(random_tensor({300, 20}, fx::f32, 44), random_tensor({20}, fx::f32, 45));
  const rt::Plan plan = rt::make_plan(j, fx::Device::cpu(), PlanOnly(jit::fused_lowering()));
  int fused = 0;
  for (const rt::Step& step : plan.steps) {
    if (step.type != rt::Step::fused) continue;
    ++fused;
    const jit::FusedKernel k = jit::generate_fused_kernel(j, step);
    CAPTURE(k.source);
    CHECK(k.n == 6000);
    CHECK(k.items == 300);  // a thread per output (runs of 20)
    CHECK(!k.block_sums);
    CHECK(k.source.find("// broadcast_in_dim") != std::string::npos);
    CHECK(k.source.find("// reduce_sum") != std::string::npos);
    CHECK(k.source.find("[i % 20LL]") != std::string::npos);  // the bias: element i's last coordinate
  }
  CHECK(fused == 1);
  CHECK(launching_steps(plan) == 1);
  // Sums of one value over different axes: one loop per layout, the value stored in the first.
  auto g = [](const fx::Tensor& x) {
    const fx::Tensor y = fx::sin(x) * x;
    return std::vector<fx::Tensor>{fx::sum(y), fx::sum(y, {1}), fx::sum(y, {0}), fx::sum(y, {0}) * 1.0, y};
  };
  const fx::Jaxpr jg = fx::make_jaxpr(g)(random_tensor({20, 30}, fx::f64, 46));
  const rt::Plan pg = rt::make_plan(jg, fx::Device::cpu(), PlanOnly(jit::fused_lowering()));
  for (const rt::Step& step : pg.steps) {
    if (step.type != rt::Step::fused || step.members.size() < 3) continue;
    const jit::FusedKernel k = jit::generate_fused_kernel(jg, step);
    CAPTURE(k.source);
    size_t loops = 0, stores = 0;
    for (size_t at = k.source.find("// Sums of runs"); at != std::string::npos;
         at = k.source.find("// Sums of runs", at + 1))
      ++loops;
    for (const jit::FusedKernelParam& p : k.params) stores += p.written;
    CHECK(loops == 3);                          // all elements, rows of 30, columns of 20
    CHECK(k.items == jit::kFusedBlockThreads);  // the full sum of 600: one block (the others: 30 threads)
    CHECK(k.block_sums);
    CHECK(k.source.find("a block per output") != std::string::npos);
    CHECK(k.source.find("__syncthreads();") != std::string::npos);
    CHECK(stores >= 4);
    CHECK(k.source.find("[i] = ") == k.source.rfind("[i] = "));  // y stored by one loop only
    ++fused;
  }
  CHECK(fused == 2);
}

TEST_CASE("cuda jit on a GPU: fused chains on cuda:0 give the CPU jit's values") {
  if (!fx::cuda::is_available()) {
    MESSAGE("skipped: " << fx::cuda::unavailable_reason());
    return;
  }
  auto f = [](const fx::Tensor& x, const fx::Tensor& y, const fx::Tensor& s) {
    fx::Tensor t = fx::sin(x) * y + fx::exp(-x * x) / (1.0 + y * s);
    return fx::tanh(t) - fx::maximum(x, y) * 0.25;
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    const fx::Tensor x = random_tensor({1000, 300}, d, 18), y = random_tensor({1000, 300}, d, 19);
    const fx::Tensor s = random_tensor({}, d, 20);
    const fx::Tensor want = fx::jit(f)(x, y, s);
    const fx::Device gpu = fx::Device::cuda(0);
    auto on_gpu = fx::jit(f);
    fx::Tensor got;
    for (int k = 0; k < 3; ++k) got = on_gpu(fx::device_put(x, gpu), fx::device_put(y, gpu), fx::device_put(s, gpu));
    CHECK(got.device() == gpu);
    check_close({fx::device_put(got, fx::Device::cpu())}, {want}, d == fx::f32 ? 2e-5 : 1e-12);
  }
}

TEST_CASE("cuda jit on a GPU: broadcasts and sums inside generated kernels give the CPU jit's values") {
  if (!fx::cuda::is_available()) {
    MESSAGE("skipped: " << fx::cuda::unavailable_reason());
    return;
  }
  auto f = [](const fx::Tensor& x, const fx::Tensor& b, const fx::Tensor& c) { return broadcasts_and_sums(x, b, c); };
  for (fx::DType d : {fx::f32, fx::f64}) {
    CAPTURE(d);
    const fx::Tensor x = random_tensor({1000, 300}, d, 50), b = random_tensor({300}, d, 51);
    const fx::Tensor c = random_tensor({1000}, d, 52);
    const std::vector<fx::Tensor> want = fx::jit(f)(x, b, c);
    const fx::Device gpu = fx::Device::cuda(0);
    auto on_gpu = fx::jit(f);
    std::vector<fx::Tensor> got;
    for (int k = 0; k < 3; ++k) got = on_gpu(fx::device_put(x, gpu), fx::device_put(b, gpu), fx::device_put(c, gpu));
    REQUIRE(got.size() == want.size());
    for (fx::Tensor& t : got) {
      CHECK(t.device() == gpu);
      t = fx::device_put(t, fx::Device::cpu());
    }
    check_close(got, want, d == fx::f32 ? 2e-5 : 1e-12);
  }
}

#else

TEST_CASE("cuda jit: skipped") { MESSAGE("skipped: this build has no CUDA backend (FLUXION_CUDA=OFF or no nvcc)"); }

#endif
