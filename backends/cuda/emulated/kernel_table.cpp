// The cuda_emulated kernel table: the CUDA kernel bodies compiled by the host compiler and run over
// their grid on the CPU (backends/cuda/exec.hpp, EmulatedExec). Part of every build, CUDA or not.
#include "backends/cuda/kernel_table.hpp"

#include "backends/cuda/kernels/install.hpp"

namespace fluxion::cuda {

void install_emulated_kernels() { install_kernel_table<EmulatedExec>(); }

}  // namespace fluxion::cuda
