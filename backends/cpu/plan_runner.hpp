/// The CPU plan runner: fused groups in blocks of runtime::kBlock (or register programs, or tiles
/// of a product), split over the OpenMP threads; kernel steps through the primitives' CPU kernels;
/// independent kernels side by side, one per thread.
#pragma once
#include "runtime/backend.hpp"

namespace fluxion::cpu {

/// The CPU runner, registered for Backend::cpu (runtime/backend.cpp).
const runtime::PlanRunner& plan_runner();

}  // namespace fluxion::cpu
