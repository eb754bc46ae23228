/// Side-by-side rounds: runs of independent kernel steps whose kernels run one per thread at once
/// instead of one after the other, each splitting itself over the threads.
#pragma once
#include "runtime/plan.hpp"

namespace fluxion::runtime {

/// Estimated cost of kernel equation `e`, in multiply-adds: a product's (its TilePlan's m n k),
/// else a fixed cost per element it reads and writes.
double kernel_work(const Jaxpr& j, const Equation& e);

/// The rounds of a run of independent kernels of costs `work` (sorted largest first) on `threads`
/// threads: each entry the number of consecutive kernels run side by side (1: alone, every thread).
std::vector<int32_t> side_rounds(const std::vector<double>& work, int threads);

/// Turns runs of consecutive independent kernel steps into side-by-side steps (Step::parts in
/// rounds) where some round runs several kernels at once; `uses` follows the merged steps.
/// Nothing with one thread or Switch::side_by_side off.
void plan_side_by_side(const Jaxpr& j, Plan& plan, StepUses& uses);

}  // namespace fluxion::runtime
