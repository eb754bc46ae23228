/// Fused-step construction: a group of fusible equations (runtime/fusion.hpp) as the members,
/// operands, scratch slots and accumulators that one pass over blocks runs.
#pragma once
#include "runtime/plan.hpp"

namespace fluxion::runtime {

/// Scratch slots one fused step may use when its values are smaller than a block: each slot costs
/// kBlock elements per thread in the runner's workspace, so a long group of small values (a
/// gradient keeps every forward value alive until its backward member) writes the values past this
/// many to external buffers, sized by the values themselves. Groups of block-sized values or larger
/// keep every value in scratch: written out whole, each would cost more than its slot.
inline constexpr int32_t kMaxScratchSlots = 256;

/// The fused step of equations `group` (all fusible, one output shape). `uses_outside[v]` is
/// nonzero when variable v is read outside the group (another step or a Jaxpr output): such values
/// are written to external buffers, the others live in scratch slots (past kMaxScratchSlots, small
/// values go to external buffers).
/// `vars` is the planner's GroupVars, assigned to `group` here.
Step make_fused_step(const Jaxpr& j, const std::vector<int32_t>& group, const std::vector<int32_t>& uses_outside,
                     const Lowering& lowering, GroupVars& vars);

/// True when equation `e`, alone in its fusion group, still runs as a fused step of one member: an
/// elementwise operation large enough (kParallelElements) to split over the threads, which its
/// kernel would not do.
bool parallel_single(const Jaxpr& j, const Equation& e, const Lowering& lowering);

}  // namespace fluxion::runtime
