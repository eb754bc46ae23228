// The public fluxion::cuda API (fluxion/cuda.hpp), forwarded to the CUDA backend registered by
// fluxion::cuda (backends/cuda/backend_hooks.hpp). Without one, nothing is available and asking
// for a CUDA device throws DeviceError saying why. No CUDA symbol is referenced here.
#include <atomic>
#include <cstring>

#include "backends/cuda/backend_hooks.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::cuda {

namespace cuda_backend_detail {

// Constant-initialised, so registration from another object's static initializer is safe.
std::atomic<const BackendHooks*> registered{nullptr};

const BackendHooks* hooks() { return registered.load(std::memory_order_acquire); }

[[noreturn]] void fail_unavailable(const char* where, int index) {
  fluxion::detail::fail<DeviceError>(where, "cannot use cuda:", index, ": ", unavailable_reason(),
                                     ". Use fx::Device::cpu().");
}

}  // namespace cuda_backend_detail

void register_backend(const BackendHooks& h) {
  const bool complete = h.is_available && h.device_count && h.unavailable_reason && h.synchronize && h.current_device &&
                        h.allocate && h.deallocate && h.copy && h.release_cached && h.stats && h.install_kernels &&
                        h.plan_runner;
  if (!complete)
    fluxion::detail::fail<DeviceError>("cuda", "the CUDA backend registered an incomplete hook table",
                                       ". Rebuild fluxion::cuda from the same Fluxion version as the library.");
  cuda_backend_detail::registered.store(&h, std::memory_order_release);
}

const BackendHooks* registered_backend() { return cuda_backend_detail::hooks(); }

bool compiled() { return cuda_backend_detail::hooks() != nullptr; }

bool is_available() {
  const BackendHooks* h = cuda_backend_detail::hooks();
  return h && h->is_available();
}

int device_count() {
  const BackendHooks* h = cuda_backend_detail::hooks();
  return h ? h->device_count() : 0;
}

std::string unavailable_reason() {
  if (const BackendHooks* h = cuda_backend_detail::hooks()) return h->unavailable_reason();
  return "this program was not compiled with CUDA: Fluxion's CUDA backend (fluxion::cuda) is not linked in "
         "(build Fluxion with -DFLUXION_CUDA=ON where the CUDA toolkit is, and link fluxion::cuda: "
         "find_package(fluxion COMPONENTS cuda))";
}

void synchronize(int index) {
  const BackendHooks* h = cuda_backend_detail::hooks();
  if (!h) cuda_backend_detail::fail_unavailable("synchronize", index);
  h->synchronize(index);
}

int current_device() {
  const BackendHooks* h = cuda_backend_detail::hooks();
  if (!h) fluxion::detail::fail<DeviceError>("cuda", "there is no current CUDA device: ", unavailable_reason(), ".");
  return h->current_device();
}

namespace memory {

void* allocate(int index, int64_t nbytes) {
  const BackendHooks* h = cuda_backend_detail::hooks();
  if (!h) cuda_backend_detail::fail_unavailable("cuda", index);
  return h->allocate(index, nbytes);
}

void deallocate(int index, void* ptr) noexcept {
  if (const BackendHooks* h = cuda_backend_detail::hooks()) h->deallocate(index, ptr);
}

void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes) {
  if (const BackendHooks* h = cuda_backend_detail::hooks()) return h->copy(dst, dst_device, src, src_device, nbytes);
  if (dst_device.is_cuda() || src_device.is_cuda())
    cuda_backend_detail::fail_unavailable("device_put", dst_device.is_cuda() ? dst_device.index : src_device.index);
  if (nbytes > 0) std::memcpy(dst, src, static_cast<size_t>(nbytes));
}

int64_t release_cached() {
  const BackendHooks* h = cuda_backend_detail::hooks();
  return h ? h->release_cached() : 0;
}

PoolStats stats(int index) {
  const BackendHooks* h = cuda_backend_detail::hooks();
  if (!h) cuda_backend_detail::fail_unavailable("cuda", index);
  return h->stats(index);
}

}  // namespace memory

}  // namespace fluxion::cuda
