// The emulated runner (plan_runners.hpp): generated kernels compiled for the host and run over a
// small grid (a few blocks, so that threads stride as they do over a large array on a GPU).
#include <algorithm>
#include <atomic>
#include <sstream>

#include "backends/cuda/jit/host_compiler.hpp"
#include "backends/cuda/jit/plan_runners.hpp"
#include "backends/cuda/jit/run_steps.hpp"

namespace fluxion::cuda::jit {

namespace emulated_runner_detail {

// Blocks of an emulated launch: few, so that every test with more than 4 * 256 elements runs the
// grid-stride loop's later rounds.
constexpr int64_t kEmulatedMaxBlocks = 4;

std::atomic<int> fused_launches{0}, emulated_kernel_steps{0}, cpu_kernel_steps{0};

/// Points kernel step `step` at its cuda_emulated kernel, where the primitive has one.
void lower_kernel_step(runtime::Step& step) {
  if (Kernel k = step.eqn->primitive->kernel(Backend::cuda_emulated)) {
    step.fn = k;
    ++emulated_kernel_steps;
  } else {
    ++cpu_kernel_steps;  // step.fn stays the plan backend's (CPU) kernel
  }
}

class EmulatedRunner final : public runtime::PlanRunner {
 public:
  const char* name() const override { return "cuda_emulated (generated kernels on the host)"; }
  const runtime::Lowering& lowering() const override { return fused_lowering(); }

  void lower(runtime::Plan& plan) const override {
    runtime::ensure_kernel_table(Backend::cuda_emulated);
    for (runtime::Step& step : plan.steps) {
      if (step.type == runtime::Step::kernel) lower_kernel_step(step);
      for (runtime::Step& part : step.parts) lower_kernel_step(part);
      if (step.type != runtime::Step::fused) continue;
      auto lowered = std::make_shared<FusedStepLowering>();
      lowered->kernel = generate_fused_kernel(*plan.jaxpr, step);
      lowered->function = reinterpret_cast<const void*>(compile_for_host(lowered->kernel));
      lowered->grid = fused_grid(lowered->kernel.items, kEmulatedMaxBlocks);
      step.lowering = std::move(lowered);
    }
  }

  std::unique_ptr<runtime::Workspace> make_workspace(const runtime::Plan& plan) const override {
    return make_jit_workspace(plan);
  }

  void run(const runtime::Plan& plan, runtime::RunState& s) const override {
    run_steps(plan, s, [](const FusedStepLowering& lowered, void** args) {
      const auto entry = reinterpret_cast<EmulatedEntry>(const_cast<void*>(lowered.function));
      entry(lowered.grid, static_cast<unsigned>(kFusedBlockThreads), args);
      ++fused_launches;
    });
  }

  std::string describe(const runtime::Step& step) const override {
    const auto* lowered = dynamic_cast<const FusedStepLowering*>(step.lowering.get());
    return lowered ? ", kernel " + lowered->kernel.name : std::string();
  }
};

}  // namespace emulated_runner_detail

const runtime::PlanRunner& emulated_plan_runner() {
  static const emulated_runner_detail::EmulatedRunner runner;
  return runner;
}

EmulationCounts emulation_counts() {
  using namespace emulated_runner_detail;
  return {fused_launches.load(), emulated_kernel_steps.load(), cpu_kernel_steps.load()};
}

}  // namespace fluxion::cuda::jit
