/// The random family's kernels in the CUDA kernel table (threefry2x32 keys and distributions (fx::random::)).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_random_kernels() {}

}  // namespace fluxion::cuda
