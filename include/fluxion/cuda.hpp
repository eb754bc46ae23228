/// CUDA devices: availability, device count, and moving tensors between devices (device_put).
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/device.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion {

namespace cuda {

/// True when this build has the CUDA backend (Fluxion configured with CUDA, fluxion::cuda linked).
bool compiled();
/// True when CUDA is compiled in and a driver and at least one device are present. Never throws.
bool is_available();
/// Number of visible CUDA devices; 0 when CUDA is unavailable. Never throws.
int device_count();
/// Why CUDA cannot be used ("not compiled with CUDA", the driver's error, "no device"), or ""
/// when it can. DeviceError messages quote it.
std::string unavailable_reason();

/// Raw device memory and copies, used by Buffer and device_put. They throw DeviceError (CUDA
/// unavailable, bad device index, a failing CUDA call) or OutOfMemoryError.
namespace memory {
/// `nbytes` of memory on device `index` (nullptr for 0 bytes, after checking the device).
void* allocate(int index, int64_t nbytes);
/// Frees memory from allocate(); never throws.
void deallocate(int index, void* ptr) noexcept;
/// Copies `nbytes` between any two devices, CPU included; synchronous.
void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes);
}  // namespace memory

}  // namespace cuda

/// `x` on `device`: the same tensor when it is already there (no copy), else a copy. Moving to a
/// CUDA device where CUDA is unavailable throws DeviceError saying why.
Tensor device_put(const Tensor& x, Device device);

}  // namespace fluxion
