/// The seam between the device-neutral plan and a device: what a backend provides to run a plan,
/// and the registry that picks a plan runner per Backend.
///
/// A backend fills three slots:
///  1. Kernel table: Primitive::kernels[backend], one Kernel per primitive (eager evaluation and
///     the plan's kernel steps call it; Step::fn is that entry for the plan's backend). Filled by
///     each primitive's builder (`.cpu(...)`, `.cuda(...)`: primitives/builder.hpp).
///  2. Lowering table: what a primitive can become inside the backend's fused and tiled steps.
///     Planning asks only through Lowering (below, PlanRunner::lowering): which equations may
///     join a fused step, which products may be computed tile by tile, whether independent kernels
///     may run side by side. The backend keeps its own per-primitive entries (CPU:
///     backends/cpu/lowering.hpp, filed by the builder's `.cpu_lowering(...)`), and
///     PlanRunner::lower attaches the backend's form to each step once per plan (CPU: per-member
///     block and row kernels, the tiled product's kernel, register programs; CUDA: one generated
///     kernel per fused step).
///  3. Plan runner: PlanRunner::run executes every step of a plan on a RunState, in order.
///     Kernel, fused, side-by-side, view and empty steps all reach it; a runner may ignore what
///     it does not exploit (a fused step is also its equations, Step::group, in program order).
///
/// Planning (runtime/) reads only the Jaxpr, the primitives' traits, the switches and the plan
/// backend's Lowering; it never calls a kernel. The Executable (runtime/executable.hpp) plans,
/// lowers through the runner of its device's backend, and calls that runner's run for every call.
/// The CPU runner is built in (backends/cpu/plan_runner.hpp); set_plan_runner replaces or adds one
/// (tests/test_backend_seam.cpp runs plans through a toy runner of reference kernels).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/plan.hpp"
#include "runtime/recycled_array.hpp"

namespace fluxion::runtime {

/// Slot 2 as planning sees it: what the backend can make of an equation beyond one kernel call.
/// Every answer defaults to "nothing", which plans each equation as its own kernel step.
class Lowering {
 public:
  virtual ~Lowering() = default;
  /// Equations of `p` (elementwise, one output, inputs of the output's shape or rank 0, one
  /// dtype) may be members of a fused step.
  virtual bool fuses(const Primitive& /*p*/) const { return false; }
  /// ...and may read an operand broadcast along trailing dims one value per run of elements
  /// (FusedOperand::rows) instead of the materialised broadcast.
  virtual bool fuses_rows(const Primitive& /*p*/) const { return false; }
  /// broadcast_in_dim equations may be fused (read by index mapping), and reduce_sum equations
  /// over contiguous axes may end a fused step (per-output sums of its blocks).
  virtual bool fuses_broadcasts_and_sums() const { return false; }
  /// convert_element_type to or from f16/bf16 may be a member (its block kernel converts halves); otherwise
  /// such conversions run as kernel steps between the fused f32 groups.
  virtual bool fuses_half_conversions() const { return false; }
  /// Independent kernel steps may run side by side, one per thread, in rounds.
  virtual bool runs_side_by_side() const { return false; }
  /// Multiply-adds from which a kernel spreads itself over the threads (side-by-side cost model).
  virtual double threaded_work() const { return 1e300; }
  /// The matrix view (m x n output, k reads per element) of an equation of `p` computed tile by
  /// tile inside the fused step reading it; m == 0 when it cannot be.
  virtual TileView tile_view(const Primitive& /*p*/, const std::vector<AbstractValue>& /*in*/,
                             const Params& /*params*/) const {
    return {};
  }
};

/// A runner's working memory for one RunState (CPU: scratch blocks, row-sum accumulators, tile
/// buffers), made once per state and reused by every call that takes the state.
struct Workspace {
  virtual ~Workspace() = default;
};

/// The state of one call of an Executable: a set is taken per concurrent call and reused.
struct RunState {
  std::vector<Tensor> values;  // by variable: arguments bound, constants, pooled intermediates
  // By variable, for outputs and dynamic views: the array handed out each call, taken back (with
  // acquire) once no Tensor holds the last call's, so outputs and views cost no allocation per call.
  std::vector<RecycledArray::Owner> recycled;
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
  /// The lowering slot as planning sees it (the default lowers nothing: kernel steps only).
  virtual const Lowering& lowering() const;
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

/// Slot 1 for a backend whose kernel table is filed after the primitives are built (CUDA and
/// cuda_emulated: backends/cuda/kernel_table.hpp): sets `p`'s kernel for `backend`.
void set_kernel(const Primitive& p, Backend backend, Kernel kernel);
/// Files `backend`'s kernel table on first use (once, thread-safe); reference and cpu are filed by
/// the builders. eval_primitive and plan_runner call it before reading Primitive::kernels.
void ensure_kernel_table(Backend backend);

/// Runs dynamic_view step `step`: its output views this call's bytes of its input, reusing the
/// last call's ArrayImpl when nothing holds it. Every runner runs these the same way.
void bind_dynamic_view(const Plan& plan, const Step& step, RunState& s);

}  // namespace fluxion::runtime
