/// The linalg_spectral family's kernels in the CUDA kernel table (eigh, svd).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_linalg_spectral_kernels() {}

}  // namespace fluxion::cuda
