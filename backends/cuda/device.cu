// CUDA device discovery, memory and copies (the CUDA runtime API behind fluxion::cuda).
#include <cuda_runtime.h>

#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::cuda {

namespace {

// The result of the first cudaGetDeviceCount: it initialises the runtime once and its error
// (no driver, driver too old, no device) is the reason reported for every later request.
struct Probe {
  int count = 0;
  cudaError_t error = cudaSuccess;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    r.error = cudaGetDeviceCount(&r.count);
    if (r.error != cudaSuccess) {
      r.count = 0;
      cudaGetLastError();  // clear the sticky error so later calls are not blamed for it
    }
    return r;
  }();
  return p;
}

std::string error_text(cudaError_t e) {
  return fluxion::detail::cat(cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
}

// Throws DeviceError naming `where` unless device `index` can be used.
void check_device(const char* where, int index) {
  if (!is_available())
    fluxion::detail::fail<DeviceError>(where, "cannot use cuda:", index, ": ", unavailable_reason(),
                                       ". Use fx::Device::cpu(), or run where a GPU and its "
                                       "driver are present.");
  if (index < 0 || index >= probe().count)
    fluxion::detail::fail<DeviceError>(where, "there is no device cuda:", index, ": ", probe().count,
                                       " CUDA device(s) are visible. Use an index "
                                       "below fx::cuda::device_count().");
}

void check(cudaError_t e, const char* where, const char* call) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  fluxion::detail::fail<DeviceError>(where, call, " failed: ", error_text(e), ".");
}

// Makes `index` the current device for the scope, restoring the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int index) {
    check(cudaGetDevice(&previous_), "cuda", "cudaGetDevice");
    if (previous_ != index) check(cudaSetDevice(index), "cuda", "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

bool compiled() { return true; }
bool is_available() { return probe().error == cudaSuccess && probe().count > 0; }
int device_count() { return is_available() ? probe().count : 0; }

std::string unavailable_reason() {
  const Probe& p = probe();
  if (p.error != cudaSuccess) return "the CUDA runtime cannot reach a device: " + error_text(p.error);
  if (p.count == 0) return "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
  return "";
}

namespace memory {

void* allocate(int index, int64_t nbytes) {
  check_device("cuda", index);
  if (nbytes == 0) return nullptr;
  DeviceScope scope(index);
  void* ptr = nullptr;
  cudaError_t e = cudaMalloc(&ptr, static_cast<size_t>(nbytes));
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    fluxion::detail::fail<OutOfMemoryError>("cuda", "could not allocate ", nbytes, " bytes on cuda:", index,
                                            ". Reduce the tensor sizes or free memory.");
  }
  check(e, "cuda", "cudaMalloc");
  return ptr;
}

void deallocate(int index, void* ptr) noexcept {
  if (!ptr) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(index);
  cudaFree(ptr);
  cudaSetDevice(previous);
}

void copy(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes) {
  if (nbytes == 0) return;
  size_t n = static_cast<size_t>(nbytes);
  if (dst_device.is_cuda()) check_device("device_put", dst_device.index);
  if (src_device.is_cuda()) check_device("device_put", src_device.index);
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    check(cudaMemcpy(dst, src, n, cudaMemcpyHostToHost), "device_put", "cudaMemcpy");
  } else if (src_device.is_cpu()) {
    DeviceScope scope(dst_device.index);
    check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "device_put", "cudaMemcpy");
  } else if (dst_device.is_cpu()) {
    DeviceScope scope(src_device.index);
    check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "device_put", "cudaMemcpy");
  } else {
    check(cudaMemcpyPeer(dst, dst_device.index, src, src_device.index, n), "device_put", "cudaMemcpyPeer");
  }
}

}  // namespace memory
}  // namespace fluxion::cuda
