/// The stream the CUDA jit queues its work on, per device: declared once here so that the runner
/// follows the device context when it provides one.
#pragma once
#include <cuda_runtime.h>

#include "fluxion/device.hpp"

namespace fluxion::cuda::jit {

/// The stream of `device` that jit launches use: the default stream, on which the CUDA kernel
/// table's launches (CudaExec) and the memory copies are ordered too.
inline cudaStream_t jit_stream(Device /*device*/) { return nullptr; }

}  // namespace fluxion::cuda::jit
