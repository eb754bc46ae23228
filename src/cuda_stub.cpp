// fluxion::cuda for builds without CUDA: nothing is available, and asking for a CUDA device throws
// DeviceError saying so. Compiled out when the real backend (backends/cuda, which defines
// FLUXION_WITH_CUDA for everything linking fluxion::cuda) is linked instead.
#ifndef FLUXION_WITH_CUDA
#include <cstring>

#include "backends/cuda/kernel_table.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::cuda {

bool compiled() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() {
  return "Fluxion was not compiled with CUDA (configure with -DFLUXION_CUDA=ON on a machine with "
         "the CUDA toolkit and link fluxion::fluxion or fluxion::cuda)";
}

void synchronize(int index) {
  fluxion::detail::fail<DeviceError>("synchronize", "cannot use cuda:", index, ": ", unavailable_reason(),
                                     ". Use fx::Device::cpu().");
}

int current_device() {
  fluxion::detail::fail<DeviceError>("cuda", "there is no current CUDA device: ", unavailable_reason(), ".");
}

namespace memory {

void* allocate(int index, int64_t) {
  fluxion::detail::fail<DeviceError>("cuda", "cannot use cuda:", index, ": ", unavailable_reason(),
                                     ". Use fx::Device::cpu().");
}

void deallocate(int, void*) noexcept {}

void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes) {
  if (dst_device.is_cuda() || src_device.is_cuda()) {
    int index = dst_device.is_cuda() ? dst_device.index : src_device.index;
    fluxion::detail::fail<DeviceError>("device_put", "cannot use cuda:", index, ": ", unavailable_reason(),
                                       ". Use fx::Device::cpu().");
  }
  if (nbytes > 0) std::memcpy(dst, src, static_cast<size_t>(nbytes));
}

int64_t release_cached() { return 0; }

PoolStats stats(int index) {
  fluxion::detail::fail<DeviceError>("cuda", "cannot use cuda:", index, ": ", unavailable_reason(),
                                     ". Use fx::Device::cpu().");
}

}  // namespace memory

void install_cuda_kernels() {}  // no CUDA kernels without CUDA: eager ops on cuda:N fail at allocation

}  // namespace fluxion::cuda
#endif  // FLUXION_WITH_CUDA
