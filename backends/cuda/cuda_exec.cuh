/// CudaExec: the launch policy of the CUDA kernel table (exec.hpp describes the contract). Bodies
/// run as grid-stride kernels on the stream of the calling thread's current device, which is the
/// device of the kernel's outputs: memory::allocate makes a buffer's device current, and outputs
/// are allocated right before their kernel runs. nvcc only.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/context.cuh"
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

  /// Enough blocks for one index per thread, up to 2^20 blocks (the grid-stride loop does the rest).
  template <class F> static void for_each(fx_index n, const F& body) {
    if (n <= 0) return;
    const fx_index blocks = std::min<fx_index>((n + kBlockThreads - 1) / kBlockThreads, fx_index(1) << 20);
    for_each_kernel<<<static_cast<unsigned>(blocks), static_cast<unsigned>(kBlockThreads), 0,
                      stream(current_device())>>>(n, body);
    check_launch("cuda kernel");
  }

  /// Copies on the stream of `src_device` and waits for it (the values are on the host on return).
  static void to_host(void* dst, const void* src, int64_t bytes, Device src_device);
  /// cublasGemmStridedBatchedEx on the current device's stream; f32 computes in f32 (TF32 only
  /// with FLUXION_CUDA_TF32=1), f64 in f64.
  static void gemm(const GemmCall& call, DType dtype, const void* a, const void* b, void* c);
};

}  // namespace fluxion::cuda
