// The backend seam (runtime/backend.hpp): a toy plan runner that evaluates every step's equations
// one by one with the reference kernels, ignoring fusion, tiles and side-by-side rounds, runs the
// same plans as the CPU runner and gives the same results. Planning does not assume the CPU runner:
// it asks the runner's lowering slot what to fuse, and with the default (nothing) plans kernels only.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "fluxion/fluxion.hpp"
#include "samples.hpp"
#include "runtime/backend.hpp"
#include "runtime/executable.hpp"

namespace fx = fluxion;
using fluxion::testing::random_tensor;
namespace rt = fluxion::runtime;

namespace {

/// Runs a plan equation by equation: a fused step is its group, a side-by-side step its parts,
/// views and tiled products their equation. Reference kernels where the primitive has one, else
/// the CPU kernel (counted apart, so the test can say how much the reference table covered).
/// Planning asks `planning` (the CPU's lowering slot: the same fused groups as the CPU), or the
/// default slot, which lowers nothing.
class ToyRunner final : public rt::PlanRunner {
 public:
  mutable std::atomic<int> runs{0}, reference_equations{0}, cpu_equations{0}, fused_steps{0};
  explicit ToyRunner(const rt::Lowering* planning = nullptr) : planning_(planning) {}

  const char* name() const override { return "toy (reference kernels, no fusion)"; }
  const rt::Lowering& lowering() const override { return planning_ ? *planning_ : rt::PlanRunner::lowering(); }

  void run(const rt::Plan& plan, rt::RunState& s) const override {
    ++runs;
    std::vector<fx::Tensor> env = s.values;  // arguments and constants bound by the Executable
    for (const rt::Step& step : plan.steps) run_step(step, env);
    for (const fx::Atom& a : plan.jaxpr->outputs)
      if (!a.is_literal()) s.values[a.var] = env[a.var];
  }

 private:
  void run_step(const rt::Step& step, std::vector<fx::Tensor>& env) const {
    switch (step.type) {
      case rt::Step::side_by_side:
        for (const rt::Step& part : step.parts) run_step(part, env);
        return;
      case rt::Step::fused:
        ++fused_steps;
        for (const fx::Equation* e : step.group) eval(*e, env);
        return;
      default:
        if (step.eqn) eval(*step.eqn, env);  // kernels, views, and products a fused step tiles
    }
  }

  void eval(const fx::Equation& e, std::vector<fx::Tensor>& env) const {
    std::vector<fx::Tensor> in;
    for (const fx::Atom& a : e.inputs) in.push_back(a.is_literal() ? a.literal : env[a.var]);
    const bool reference = e.primitive->traits.view || e.primitive->kernel(fx::Backend::reference);
    ++(reference ? reference_equations : cpu_equations);
    const std::vector<fx::Tensor> out =
        fx::eval_primitive(*e.primitive, in, *e.params, reference ? fx::Backend::reference : fx::Backend::cpu);
    for (size_t i = 0; i < out.size(); ++i) env[e.outputs[i]] = out[i];
  }

  const rt::Lowering* planning_;
};

/// Makes `runner` the CPU backend's plan runner while alive, then puts the previous one back.
struct RunnerSwap {
  const rt::PlanRunner* before;
  explicit RunnerSwap(const rt::PlanRunner* runner) : before(rt::set_plan_runner(fx::Backend::cpu, runner)) {}
  ~RunnerSwap() { rt::set_plan_runner(fx::Backend::cpu, before); }
};

/// Compiles `j` with the runner registered now, runs it twice on `args`, returns the outputs.
std::vector<fx::Tensor> run_plan(const fx::Jaxpr& j, const std::vector<fx::Tensor>& args, std::string* plan) {
  auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
  if (plan) *plan = exe->describe();
  std::vector<fx::Tensor> outs;
  exe->run(args, outs);
  exe->run(args, outs);  // a reused state
  return outs;
}

void check_same(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    CAPTURE(k);
    REQUIRE(got[k].shape() == want[k].shape());
    const double scale = 1.0 + fx::max(fx::abs(want[k])).item<double>();
    CHECK(fx::max(fx::abs(got[k] - want[k])).item<double>() <= 1e-12 * scale);
  }
}

}  // namespace

TEST_CASE("backend seam: a toy runner of reference kernels runs CPU plans (MLP gradient, hessian)") {
  auto mlp = [](const fx::Tensor& w1, const fx::Tensor& b1, const fx::Tensor& w2, const fx::Tensor& x) {
    fx::Tensor h = fx::tanh(fx::matmul(x, w1) + b1);
    fx::Tensor y = fx::matmul(h, w2);
    return fx::sum(fx::exp(-fx::square(y))) + fx::sum(fx::square(fx::sum(h, {1}) - 0.5));
  };
  auto least_squares = [](const fx::Tensor& p) {
    fx::Tensor r = fx::sin(p * 3.0) - fx::cumsum(p, 0);
    return fx::sum(fx::square(r));
  };
  const fx::Tensor w1 = random_tensor({24, 40}, fx::f64, 1), b1 = random_tensor({40}, fx::f64, 2);
  const fx::Tensor w2 = random_tensor({40, 8}, fx::f64, 3);
  const fx::Tensor x = random_tensor({300, 24}, fx::f64, 4), p = random_tensor({30}, fx::f64, 5);
  const fx::Jaxpr grad_j = fx::make_jaxpr(fx::grad(mlp, fx::argnums<0, 1, 2>))(w1, b1, w2, x);
  const fx::Jaxpr hess_j = fx::make_jaxpr(fx::hessian(least_squares))(p);

  std::string cpu_plan, toy_plan;
  const std::vector<fx::Tensor> cpu_grad = run_plan(grad_j, {w1, b1, w2, x}, &cpu_plan);
  const std::vector<fx::Tensor> cpu_hess = run_plan(hess_j, {p}, nullptr);
  // The CPU plan has what the toy must see through: fused groups ending in row sums.
  CHECK_MESSAGE(cpu_plan.find("row sums") != std::string::npos, cpu_plan);

  ToyRunner toy(&rt::plan_runner(fx::Backend::cpu).lowering());
  std::vector<fx::Tensor> toy_grad, toy_hess;
  {
    RunnerSwap swap(&toy);
    CHECK(&rt::plan_runner(fx::Backend::cpu) == &toy);
    toy_grad = run_plan(grad_j, {w1, b1, w2, x}, &toy_plan);
    toy_hess = run_plan(hess_j, {p}, nullptr);
  }
  CHECK(std::string(rt::plan_runner(fx::Backend::cpu).name()) == "cpu");  // put back
  // Every call went through the toy: 2 plans x 2 calls, each fused step evaluated equation by
  // equation (the planner made the same fused groups for it, without the CPU lowering).
  CHECK(toy.runs == 4);
  CHECK(toy.fused_steps > 0);
  CHECK(toy.reference_equations > 0);
  MESSAGE("[seam] toy runner: " << toy.reference_equations.load() << " equations on reference kernels, "
                                << toy.cpu_equations.load() << " on CPU kernels (no reference kernel)");
  CHECK_MESSAGE(toy_plan.find("fused groups") != std::string::npos, toy_plan);
  CHECK(toy_plan.find("register program") == std::string::npos);  // the CPU lowering is not there
  check_same(toy_grad, cpu_grad);
  check_same(toy_hess, cpu_hess);
  // jit itself compiles through the same seam: plans made while the toy is registered run on it.
  {
    RunnerSwap swap(&toy);
    const int before = toy.runs;
    const fx::Tensor h = fx::jit(fx::hessian(least_squares))(p * 1.5);
    CHECK(toy.runs > before);
    check_same({h}, {fx::hessian(least_squares)(p * 1.5)});
  }
}

TEST_CASE("backend seam: a runner whose lowering slot fuses nothing gets plans of kernel steps only") {
  auto f = [](const fx::Tensor& w, const fx::Tensor& x) {
    return fx::sum(fx::tanh(fx::matmul(x, w) + 1.0) * fx::exp(-fx::square(x)));
  };
  const fx::Tensor w = random_tensor({16, 16}, fx::f64, 6), x = random_tensor({64, 16}, fx::f64, 7);
  const fx::Jaxpr j = fx::make_jaxpr(fx::grad(f, fx::argnums<0, 1>))(w, x);
  std::string cpu_plan, toy_plan;
  const std::vector<fx::Tensor> want = run_plan(j, {w, x}, &cpu_plan);
  CHECK_MESSAGE(cpu_plan.find(" 0 fused groups") == std::string::npos, cpu_plan);
  ToyRunner toy;  // the default lowering slot
  std::vector<fx::Tensor> got;
  {
    RunnerSwap swap(&toy);
    got = run_plan(j, {w, x}, &toy_plan);
  }
  CHECK_MESSAGE(toy_plan.find(" 0 fused groups") != std::string::npos, toy_plan);
  CHECK(toy.fused_steps == 0);
  check_same(got, want);
}

TEST_CASE("backend seam: a backend without a plan runner is a clear error") {
  try {
    rt::plan_runner(fx::Backend::reference);
    FAIL("a missing plan runner was not reported");
  } catch (const fx::NotImplementedError& e) {
    const std::string what = e.what();
    CHECK(what.find("no plan runner for the reference backend") != std::string::npos);
    CHECK(what.find("set_plan_runner") != std::string::npos);
  }
}
