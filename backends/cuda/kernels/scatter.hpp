/// The scatter family's kernels in the CUDA kernel table (general gather/scatter, take/put_along_axis, segment_sum, einsum).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_scatter_kernels() {}

}  // namespace fluxion::cuda
