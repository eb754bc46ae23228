/// The sort family's kernels in the CUDA kernel table (sort, argsort, top_k, cumulative ops, associative_scan).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_sort_kernels() {}

}  // namespace fluxion::cuda
