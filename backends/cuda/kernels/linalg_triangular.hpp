/// The linalg_triangular family's kernels in the CUDA kernel table (cholesky, triangular_solve, cho_solve).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_linalg_triangular_kernels() {}

}  // namespace fluxion::cuda
