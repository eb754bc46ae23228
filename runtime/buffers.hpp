/// Buffer liveness: intermediates share logical buffers when their lifetimes do not overlap.
#pragma once
#include "runtime/plan.hpp"

namespace fluxion::runtime {

/// Assigns logical buffers (Plan::buffer_of, buffer_bytes) to the intermediates of `plan`: a buffer
/// is free again after the last step reading any variable stored in it; an elementwise kernel may
/// write over an input that dies at its step (`uses.in_place`). With Switch::buffer_reuse off every
/// intermediate gets its own buffer.
void assign_buffers(const Jaxpr& j, Plan& plan, const StepUses& uses);

}  // namespace fluxion::runtime
