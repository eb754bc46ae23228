/// Side-by-side rounds: runs of independent kernel steps whose kernels run one per thread at once
/// instead of one after the other, each splitting itself over the threads.
#pragma once
#include "runtime/plan.hpp"

namespace fluxion::runtime {

/// Estimated cost of kernel equation `e`, in multiply-adds: a product's (its TileView's m n k),
/// else a fixed cost per element it reads and writes.
double kernel_work(const Jaxpr& j, const Equation& e, const Lowering& lowering);

/// The rounds of a run of independent kernels of costs `work` (sorted largest first) on `threads`
/// threads: each entry the number of consecutive kernels run side by side (1: alone, every thread).
std::vector<int32_t> side_rounds(const std::vector<double>& work, int threads, double threaded_work);

/// Turns runs of consecutive independent kernel steps into side-by-side steps (Step::parts in
/// rounds) where some round runs several kernels at once; `uses` follows the merged steps.
/// Nothing with one thread, Switch::side_by_side off, or a backend that does not run side by side.
void plan_side_by_side(const Jaxpr& j, Plan& plan, StepUses& uses, const Lowering& lowering);

}  // namespace fluxion::runtime
