/// The step loop both CUDA jit runners share (plan_runners.hpp): kernel steps through Step::fn,
/// dynamic views bound, fused steps handed to the runner's launch.
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cuda/jit/fused_kernel.hpp"
#include "transforms/half_kernels.hpp"

namespace fluxion::cuda::jit {

/// A kernel step's literal inputs on the plan's device (the CUDA runner's lowering of kernel steps
/// that read literals: a kernel on the GPU cannot read a CPU value), by input position.
struct PlacedLiterals : runtime::StepLowering {
  std::vector<Tensor> by_input;  // undefined where the input is a variable
};

/// Runs kernel step `step` through the state's reserved argument lists (empty on return).
inline void run_kernel_step(const runtime::Step& step, runtime::RunState& s) {
  const Equation& e = *step.eqn;
  const auto* placed = static_cast<const PlacedLiterals*>(step.lowering.get());  // kernel steps hold no other
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Atom& a = e.inputs[i];
    s.in.push_back(!a.is_literal() ? s.values[a.var] : placed ? placed->by_input[i] : a.literal);
  }
  for (int32_t v : e.outputs) s.out.push_back(s.values[v]);
  struct Clear {
    runtime::RunState& s;
    ~Clear() { s.in.clear(), s.out.clear(); }
  } clear{s};
  // Half-precision equations reach here only with the widen_half pass off: they compute in f32 one by one.
  half_kernels::run_kernel(*e.primitive, step.fn, Backend::cuda, s.in, *e.params, s.out);
}

/// The runners' workspace: one argument array, refilled by every fused step.
struct JitWorkspace : runtime::Workspace {
  FusedArgs args;
};

/// A workspace whose argument array holds the most parameters of `plan`'s fused kernels, so that
/// no call allocates.
inline std::unique_ptr<runtime::Workspace> make_jit_workspace(const runtime::Plan& plan) {
  auto w = std::make_unique<JitWorkspace>();
  size_t most = 0;
  for (const runtime::Step& step : plan.steps)
    if (step.type == runtime::Step::fused)
      most = std::max(most, static_cast<const FusedStepLowering&>(*step.lowering).kernel.params.size());
  w->args.pointers.reserve(most);
  w->args.values.reserve(most);
  w->args.args.reserve(most + 1);
  return w;
}

/// Runs every step of `plan` in order; `launch(lowered, args)` runs a fused step's kernel with its
/// kernelParams array.
template <class Launch> void run_steps(const runtime::Plan& plan, runtime::RunState& s, const Launch& launch) {
  FusedArgs& args = static_cast<JitWorkspace&>(*s.workspace).args;
  for (const runtime::Step& step : plan.steps) {
    switch (step.type) {
      case runtime::Step::kernel: run_kernel_step(step, s); break;
      case runtime::Step::side_by_side:  // not planned (the lowering runs nothing side by side)
        for (const runtime::Step& part : step.parts) run_kernel_step(part, s);
        break;
      case runtime::Step::fused: {
        const auto& lowered = static_cast<const FusedStepLowering&>(*step.lowering);
        args.prepare(lowered.kernel);
        args.bind(lowered.kernel, step, s);
        launch(lowered, args.args.data());
        break;
      }
      case runtime::Step::dynamic_view: runtime::bind_dynamic_view(plan, step, s); break;
      case runtime::Step::nothing: break;
    }
  }
}

}  // namespace fluxion::cuda::jit
