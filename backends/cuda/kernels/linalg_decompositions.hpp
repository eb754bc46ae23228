/// The linalg_decompositions family's kernels in the CUDA kernel table (lu, qr, det, slogdet, matrix_power, expm).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_linalg_decompositions_kernels() {}

}  // namespace fluxion::cuda
