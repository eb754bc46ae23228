// The CUDA kernel table: the kernel bodies of backends/cuda/kernels/ launched on the GPU
// (CudaExec), filed under Backend::cuda for every primitive.
#include "backends/cuda/cuda_exec.cuh"
#include "backends/cuda/kernel_table.hpp"
#include "backends/cuda/kernels/install.hpp"

namespace fluxion::cuda {

void install_cuda_kernels() { install_kernel_table<CudaExec>(); }

}  // namespace fluxion::cuda
