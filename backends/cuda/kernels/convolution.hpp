/// The convolution family's kernels in the CUDA kernel table (conv_general_dilated, conv, conv_transpose).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_convolution_kernels() {}

}  // namespace fluxion::cuda
