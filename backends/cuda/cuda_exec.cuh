/// CudaExec: the launch policy of the CUDA kernel table (exec.hpp describes the contract). Bodies
/// run as grid-stride kernels; nvcc only.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/exec.hpp"

namespace fluxion::cuda {

template <class F> __global__ void for_each_kernel(fx_index n, F body) {
  const fx_index stride = static_cast<fx_index>(gridDim.x) * blockDim.x;
  for (fx_index i = static_cast<fx_index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) body(i);
}

/// Throws DeviceError naming `op` when the last launch failed.
void check_launch(const char* op);

struct CudaExec {
  static constexpr Backend backend = Backend::cuda;

  template <class F> static void for_each(fx_index n, const F& body) {
    if (n <= 0) return;
    const fx_index blocks = std::min<fx_index>((n + kBlockThreads - 1) / kBlockThreads, fx_index(1) << 20);
    for_each_kernel<<<static_cast<unsigned>(blocks), static_cast<unsigned>(kBlockThreads)>>>(n, body);
    check_launch("cuda kernel");
  }

  static void to_host(void* dst, const void* src, int64_t bytes, Device src_device);
  static void gemm(const GemmCall& call, DType dtype, const void* a, const void* b, void* c);
};

}  // namespace fluxion::cuda
