// The CUDA kernel table: the kernel bodies of backends/cuda/kernels/ launched on the GPU
// (CudaExec), filed under Backend::cuda for every primitive.
#include "backends/cuda/cuda_exec.cuh"
#include "backends/cuda/kernel_table.hpp"
#include "backends/cuda/kernels/install.hpp"
#include "fluxion/cuda.hpp"

namespace fluxion::cuda {

void check_launch(const char* op) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    detail::fail<DeviceError>(op, "kernel launch failed: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ").");
}

void CudaExec::to_host(void* dst, const void* src, int64_t bytes, Device src_device) {
  if (bytes > 0) memory::copy(dst, Device::cpu(), src, src_device, bytes);
}

void CudaExec::gemm(const GemmCall&, DType, const void*, const void*, void*) {
  detail::fail<NotImplementedError>("dot_general", "cuBLAS products are not wired yet.");
}

void install_cuda_kernels() { install_kernel_table<CudaExec>(); }

}  // namespace fluxion::cuda
