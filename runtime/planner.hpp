/// The planning pipeline: an optimized Jaxpr to a Plan, stage by stage (fusion, tiles, side by
/// side, buffers), then the backend's lowering. FLUXION_DUMP_PASSES=1 prints the plan after each.
#pragma once
#include <string>

#include "runtime/backend.hpp"

namespace fluxion::runtime {

/// Plans `j` (optimized, outliving the plan) for `device` and lowers it with `runner`.
Plan make_plan(const Jaxpr& j, Device device, const PlanRunner& runner);

/// Human-readable plan: steps, fused groups (with `runner`'s lowering) and buffer assignment.
std::string describe_plan(const Plan& plan, const PlanRunner& runner);

/// Bytes of the plan's intermediate buffers (after reuse by liveness).
int64_t intermediate_bytes(const Plan& plan);

}  // namespace fluxion::runtime
