/// CUDA devices: availability, device count, and moving tensors between devices (device_put).
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "fluxion/device.hpp"
#include "fluxion/pytree.hpp"
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
/// Waits until every operation queued on cuda:index (kernels, copies, frees) has finished; a
/// failure of one of them is thrown here as DeviceError. Eager ops on device tensors are
/// asynchronous: time them with a synchronize, or read a value (item, to_vector) which waits.
void synchronize(int index = 0);
/// The calling thread's current CUDA device: where an op with no device inputs (iota inside a
/// sub-Jaxpr run on the GPU) puts its outputs. Throws DeviceError when CUDA is unavailable.
int current_device();

/// Raw device memory and copies, used by Buffer and device_put. They throw DeviceError (CUDA
/// unavailable, bad device index, a failing CUDA call) or OutOfMemoryError.
///
/// Device memory comes from a stream-ordered pool per device (cudaMallocFromPoolAsync). Freed
/// blocks are kept for reuse up to a cap, FLUXION_ALLOCATOR_CACHE_BYTES (the CPU cache's setting)
/// or a quarter of the device's memory when unset; fx::release_cached_memory() gives them back.
/// When the device is out of memory the cache is released and the allocation tried once more,
/// then OutOfMemoryError says how many bytes were asked for and how many Fluxion holds.
namespace memory {
/// `nbytes` of memory on device `index` (nullptr for 0 bytes, after checking the device). Makes
/// cuda:index the calling thread's current device: the kernel that fills a buffer is launched
/// right after its allocation, on the current device's stream.
void* allocate(int index, int64_t nbytes);
/// Frees memory from allocate(), ordered after the work queued on the device's stream: never
/// waits, never throws.
void deallocate(int index, void* ptr) noexcept;
/// Copies `nbytes` between any two devices, CPU included. A copy to or from the CPU has finished
/// on return; a copy between device buffers is queued on the destination's stream, after the work
/// that produces the source.
void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes);
/// Gives the cached (freed, unused) device memory of every device in use back to the driver,
/// after waiting for pending work; returns the bytes released. 0 without CUDA.
int64_t release_cached();

struct PoolStats {
  int64_t held_bytes = 0;         // reserved from the device: live buffers plus the cache
  int64_t live_bytes = 0;         // in buffers not yet freed (or whose free is still queued)
  int64_t release_threshold = 0;  // the cache's cap
};
/// The pool of cuda:index (DeviceError when it cannot be used).
PoolStats stats(int index);
}  // namespace memory

}  // namespace cuda

/// `x` on `device`: the same tensor when it is already there (no copy), else a copy. Moving to a
/// CUDA device where CUDA is unavailable throws DeviceError saying why.
Tensor device_put(const Tensor& x, Device device);

/// Every tensor of the pytree `tree` (tuples, vectors, maps, structs: pytree.hpp) on `device`;
/// static members are copied as they are.
template <class T, std::enable_if_t<is_pytree_v<T> && !std::is_same_v<std::decay_t<T>, Tensor>, int> = 0>
T device_put(const T& tree, Device device) {
  return tree_map([device](const Tensor& x) { return device_put(x, device); }, tree);
}

}  // namespace fluxion
