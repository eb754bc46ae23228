/// The device stream of cuda:N for host C++ code that does not include the CUDA headers (NCCL's
/// transport in backends/distributed): the cudaStream_t of backends/cuda/context.cuh, as void*.
#pragma once

namespace fluxion::cuda {

/// The stream every kernel and copy on cuda:device is queued on (made with the device's context on
/// first use). Cast to cudaStream_t. DeviceError for a bad device or without a driver.
void* stream_handle(int device);

}  // namespace fluxion::cuda
