/// The convolution family's kernels in the CUDA kernel table (conv_general_dilated, which conv and
/// conv_transpose lower to).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"
#include "primitives/convolution.hpp"
#include "runtime/backend.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend. conv_general_dilated is host-staged for now: its CPU
/// kernel (im2col + GEMM) runs on host copies; a cuDNN or im2col + cuBLAS path is the planned device form.
template <class Exec> void install_convolution_kernels() {
  using primitives::convolution_detail::conv_general_dilated_p;
  runtime::set_kernel(conv_general_dilated_p(), Exec::backend, &host_staged_kernel<&conv_general_dilated_p>);
}

}  // namespace fluxion::cuda
