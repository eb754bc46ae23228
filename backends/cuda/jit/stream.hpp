/// The stream the CUDA jit queues its work on, per device: the device context's one non-blocking
/// stream (backends/cuda/context.cuh), on which the CUDA kernel table's launches (CudaExec), cuBLAS,
/// copies and stream-ordered frees are queued too, so jit and eager work on a device stay ordered.
#pragma once
#include <cuda_runtime.h>

#include "backends/cuda/context.cuh"
#include "fluxion/device.hpp"

namespace fluxion::cuda::jit {

inline cudaStream_t jit_stream(Device device) { return cuda::stream(device.index); }

}  // namespace fluxion::cuda::jit
