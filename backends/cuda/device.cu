// Device memory and copies of the CUDA backend: a stream-ordered pool per device (context.cuh)
// with the out-of-memory policy of src/allocator.hpp, and copies ordered on the devices' streams.
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "backends/cuda/context.cuh"
#include "backends/cuda/backend_impl.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"
#include "src/allocator.hpp"

namespace fluxion::cuda {

namespace device_detail {

int64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attr, const char* name) {
  uint64_t v = 0;
  check(cudaMemPoolGetAttribute(pool, attr, &v), "cuda", name);
  return static_cast<int64_t>(v);
}

device_memory::Held held(const DeviceContext& c) {
  return {pool_attribute(c.pool, cudaMemPoolAttrReservedMemCurrent, "cudaMemPoolGetAttribute(ReservedMemCurrent)"),
          pool_attribute(c.pool, cudaMemPoolAttrUsedMemCurrent, "cudaMemPoolGetAttribute(UsedMemCurrent)")};
}

// Gives the pool's unused memory back to the device once the frees queued on the stream are done.
int64_t trim(DeviceContext& c) {
  DeviceScope scope(c.device);
  check(cudaStreamSynchronize(c.stream), "cuda", "cudaStreamSynchronize");
  const int64_t before = held(c).held;
  check(cudaMemPoolTrimTo(c.pool, 0), "cuda", "cudaMemPoolTrimTo");
  return before - held(c).held;
}

// Lets device `to` read and write the pool of device `from` (once per pair), so that copies
// between their buffers run peer to peer. False when the devices cannot reach each other.
bool peer_access(int from, int to) {
  static std::mutex mutex;
  static std::vector<std::vector<signed char>> known;  // -1 unknown, 0 no, 1 yes
  std::lock_guard<std::mutex> lock(mutex);
  const size_t n = static_cast<size_t>(device_count());
  if (known.size() != n) known.assign(n, std::vector<signed char>(n, -1));
  signed char& k = known[static_cast<size_t>(from)][static_cast<size_t>(to)];
  if (k < 0) {
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, to, from), "device_put", "cudaDeviceCanAccessPeer");
    if (can) {
      cudaMemAccessDesc desc{};
      desc.location.type = cudaMemLocationTypeDevice;
      desc.location.id = to;
      desc.flags = cudaMemAccessFlagsProtReadWrite;
      check(cudaMemPoolSetAccess(context(from).pool, &desc, 1), "device_put", "cudaMemPoolSetAccess");
    }
    k = can ? 1 : 0;
  }
  return k == 1;
}

// Makes `waiter` wait for the work queued so far on the stream of device `producer` (no host
// wait). The event belongs to the producer's device; a stream of any device may wait for it.
void stream_wait(cudaStream_t waiter, const DeviceContext& producer) {
  DeviceScope scope(producer.device);
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "device_put", "cudaEventCreateWithFlags");
  cudaError_t e = cudaEventRecord(event, producer.stream);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(waiter, event, 0);
  cudaEventDestroy(event);  // released once the recorded work completes
  check(e, "device_put", "cudaEventRecord/cudaStreamWaitEvent");
}

// A copy between buffers of two different devices: peer to peer on the destination's stream,
// after the source's producers, with the source's stream waiting for the copy (the source may
// be freed next, and frees are ordered on its own stream); through the host when the devices
// cannot reach each other.
void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t n) {
  DeviceContext& s = context(src_index);
  DeviceContext& d = context(dst_index);
  if (peer_access(src_index, dst_index) && peer_access(dst_index, src_index)) {
    DeviceScope scope(dst_index);
    stream_wait(d.stream, s);
    check(cudaMemcpyPeerAsync(dst, dst_index, src, src_index, n, d.stream), "device_put", "cudaMemcpyPeerAsync");
    stream_wait(s.stream, d);
    return;
  }
  std::vector<unsigned char> staging(n);
  memory::copy(staging.data(), Device::cpu(), src, Device::cuda(src_index), static_cast<int64_t>(n));
  memory::copy(dst, Device::cuda(dst_index), staging.data(), Device::cpu(), static_cast<int64_t>(n));
}

}  // namespace device_detail

// The public memory API's implementations (backend_impl.hpp), reached through the core's hooks.
namespace backend_impl::memory {

void* allocate(int index, int64_t nbytes) {
  DeviceContext& c = context(index);  // checks the device
  make_current(index);
  if (nbytes == 0) return nullptr;
  void* ptr = nullptr;
  device_memory::allocate_or_throw(
      Device::cuda(index), nbytes,
      [&] {
        cudaError_t e = cudaMallocFromPoolAsync(&ptr, static_cast<size_t>(nbytes), c.pool, c.stream);
        if (e == cudaErrorMemoryAllocation) {
          cudaGetLastError();
          return device_memory::Attempt::out_of_memory;
        }
        check(e, "cuda", "cudaMallocFromPoolAsync");
        return device_memory::Attempt::ok;
      },
      [&] { device_detail::trim(c); }, [&] { return device_detail::held(c); });
  return ptr;
}

void deallocate(int index, void* ptr) noexcept {
  if (!ptr) return;
  DeviceContext* c = existing_context(index);
  if (!c) return;
  // Stream-ordered: the block returns to the pool once the work queued before it is done. Issued
  // with its device current (a tensor may be dropped on any thread). A failure (the runtime torn
  // down at exit) leaves the block to the driver.
  int previous = index;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = index;
  if (previous != index) cudaSetDevice(index);
  if (cudaFreeAsync(ptr, c->stream) != cudaSuccess) cudaGetLastError();
  if (previous != index) cudaSetDevice(previous);
}

void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes) {
  if (nbytes == 0) return;
  const size_t n = static_cast<size_t>(nbytes);
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, n);
  } else if (src_device.is_cpu() || dst_device.is_cpu()) {
    // Host copies wait for the stream: the host bytes are complete (or free to reuse) on return.
    const int index = src_device.is_cpu() ? dst_device.index : src_device.index;
    DeviceContext& c = context(index);
    DeviceScope scope(index);
    check(cudaMemcpyAsync(dst, src, n, src_device.is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, c.stream),
          "device_put", "cudaMemcpyAsync");
    check(cudaStreamSynchronize(c.stream), "device_put", "cudaStreamSynchronize");
  } else if (src_device.index == dst_device.index) {
    DeviceContext& c = context(src_device.index);
    DeviceScope scope(src_device.index);
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, c.stream), "device_put", "cudaMemcpyAsync");
  } else {
    device_detail::copy_between_devices(dst, dst_device.index, src, src_device.index, n);
  }
}

int64_t release_cached() {
  int64_t released = 0;
  for (int i = 0; i < backend_impl::device_count(); ++i)
    if (DeviceContext* c = existing_context(i)) released += device_detail::trim(*c);
  return released;
}

cuda::memory::PoolStats stats(int index) {
  const DeviceContext& c = context(index);
  const device_memory::Held h = device_detail::held(c);
  return {h.held, h.live, c.release_threshold};
}

}  // namespace backend_impl::memory
}  // namespace fluxion::cuda
