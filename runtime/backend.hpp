/// The seam between the device-neutral plan and a device: what a backend provides to run a plan,
/// and the registry that picks a plan runner per Backend.
///
/// A backend fills three slots:
///  1. Kernel table: Primitive::kernels[backend], one Kernel per primitive (eager evaluation and
///     the plan's kernel steps call it; Step::fn is that entry for the plan's backend).
///  2. Lowering table: how the plan's fused and tiled steps become the backend's own kernels.
///     PlanRunner::lower runs once per plan, after planning, and may attach a StepLowering to a
///     step (CPU: register programs, backends/cpu/tile_program_compiler.hpp, and the per-member
///     block, row and tile kernels; CUDA: one generated kernel per fused step).
///  3. Plan runner: PlanRunner::run executes every step of a plan on a RunState, in order.
///     Kernel, fused, side-by-side, view and empty steps all reach it; a runner may ignore what
///     it does not exploit (a fused step is also its equations, Step::group, in program order).
///
/// Planning (runtime/) reads only the Jaxpr, the primitives' traits and the switches; it never
/// calls a kernel. The Executable (runtime/executable.hpp) plans, lowers through the runner of its
/// device's backend, and calls that runner's run for every call. The CPU runner is built in
/// (backends/cpu/plan_runner.hpp); set_plan_runner replaces or adds one (tests/test_backend_seam.cpp
/// runs plans through a toy runner of reference kernels).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/plan.hpp"

namespace fluxion::runtime {

/// A runner's working memory for one RunState (CPU: scratch blocks, row-sum accumulators, tile
/// buffers), made once per state and reused by every call that takes the state.
struct Workspace {
  virtual ~Workspace() = default;
};

/// The state of one call of an Executable: a set is taken per concurrent call and reused.
struct RunState {
  std::vector<Tensor> values;  // by variable: arguments bound, constants, pooled intermediates
  // By variable, for dynamic views: the ArrayImpl of the last call's view, reused (rebound to the
  // new bytes) when no Tensor holds it any more, so a view costs no allocation per call.
  std::vector<std::shared_ptr<ArrayImpl>> view_impls;
  std::vector<std::shared_ptr<Buffer>> buffers;  // Plan::buffer_bytes, allocated once
  std::vector<Tensor> in, out;                   // kernel argument lists, reserved: no allocation
  std::unique_ptr<Workspace> workspace;          // PlanRunner::make_workspace
};

/// Runs plans on one backend. Implementations are stateless (every call's memory is in RunState)
/// and thread-safe: concurrent calls run on different states.
class PlanRunner {
 public:
  virtual ~PlanRunner() = default;
  virtual const char* name() const = 0;
  /// The lowering slot: attaches the backend's form of fused and tiled steps (Step::lowering).
  /// Runs once per plan; reads switches here, never per call.
  virtual void lower(Plan& /*plan*/) const {}
  /// The runner's working memory for a state of `plan` (null: none).
  virtual std::unique_ptr<Workspace> make_workspace(const Plan& /*plan*/) const { return nullptr; }
  /// Runs every step of `plan` in order. On entry s.values holds the arguments, constants, pooled
  /// intermediates and fresh output buffers; on return it holds every Jaxpr output.
  virtual void run(const Plan& plan, RunState& s) const = 0;
  /// What describe() adds for step `step`'s lowering (one line, or empty).
  virtual std::string describe(const Step& /*step*/) const { return {}; }
};

/// The runner of `backend`. Throws NotImplementedError when none is registered.
const PlanRunner& plan_runner(Backend backend);
/// Makes `runner` (not owned, outliving its use; null: none) the runner of plans compiled for
/// `backend` from now on, and returns the previous one. Plans compiled before keep theirs.
const PlanRunner* set_plan_runner(Backend backend, const PlanRunner* runner);

/// Runs dynamic_view step `step`: its output views this call's bytes of its input, reusing the
/// last call's ArrayImpl when nothing holds it. Every runner runs these the same way.
void bind_dynamic_view(const Plan& plan, const Step& step, RunState& s);

}  // namespace fluxion::runtime
