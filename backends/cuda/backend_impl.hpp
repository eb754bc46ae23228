/// The CUDA backend's implementations of the public fluxion::cuda API (context.cu, device.cu),
/// registered as the core's hooks by register_backend.cpp. The public functions (src/cuda_backend.cpp,
/// in the core library) forward here; code inside the backend may call either.
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/cuda.hpp"

namespace fluxion::cuda::backend_impl {

bool is_available();
int device_count();
std::string unavailable_reason();
void synchronize(int index);
int current_device();

namespace memory {
void* allocate(int index, int64_t nbytes);
void deallocate(int index, void* ptr) noexcept;
void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes);
int64_t release_cached();
cuda::memory::PoolStats stats(int index);
}  // namespace memory

}  // namespace fluxion::cuda::backend_impl
