// stream_handle: context.cuh's stream, for callers without the CUDA headers.
#include "backends/cuda/context.cuh"
#include "backends/cuda/stream_access.hpp"

namespace fluxion::cuda {

void* stream_handle(int device) { return static_cast<void*>(stream(device)); }

}  // namespace fluxion::cuda
