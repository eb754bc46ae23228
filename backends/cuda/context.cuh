/// The per-device state of the CUDA backend (internal, CUDA headers): one non-blocking stream that
/// orders every kernel, copy, GEMM and free on the device; the memory pool of tensor buffers; the
/// cuBLAS and cuSOLVER handles bound to that stream. Made lazily on first use of a device and never
/// destroyed (buffers may be freed by static destructors at exit). Plus the error checks every CUDA
/// call of the backend goes through: a failing call is a DeviceError naming the call.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace fluxion::cuda {

/// "out of memory (cudaErrorMemoryAllocation)".
std::string error_text(cudaError_t e);
/// Throws DeviceError "[where] call failed: <error>." unless `e` is cudaSuccess.
void check(cudaError_t e, const char* where, const char* call);
/// The same for cuBLAS and cuSOLVER status codes.
void check_cublas(cublasStatus_t s, const char* where, const char* call);
void check_cusolver(cusolverStatus_t s, const char* where, const char* call);
/// Throws DeviceError naming `where` unless cuda:index can be used (CUDA available, index valid).
void check_device(const char* where, int index);

/// The calling thread's current CUDA device: the device kernels launch on (CudaExec).
int current_device();
/// Makes cuda:index the calling thread's current device (no call when it already is).
void make_current(int index);

/// Makes `index` the current device for the scope, restoring the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int index);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

/// One device's stream, pool and library handles.
struct DeviceContext {
  int device = 0;
  /// Non-blocking: never waits for work on the legacy default stream of other libraries.
  cudaStream_t stream = nullptr;
  /// Tensor buffers (memory::allocate): its release threshold is the cache limit, so freed blocks
  /// up to that many bytes stay reserved for reuse across synchronisations.
  cudaMemPool_t pool = nullptr;
  int64_t release_threshold = 0;

  // The handles serve one host thread at a time: Libraries holds this lock while they are used.
  std::mutex library_mutex;
  cublasHandle_t cublas = nullptr;        // made on first use, bound to `stream`
  cusolverDnHandle_t cusolver = nullptr;  // made on first use, bound to `stream`
};

/// The context of cuda:index, made on first use (thread-safe). DeviceError for a bad index.
DeviceContext& context(int index);
/// The context of cuda:index when it was made already, else null (never makes one).
DeviceContext* existing_context(int index);
/// The stream every kernel, copy, GEMM and stream-ordered free on cuda:device is queued on.
cudaStream_t stream(int device);

/// The cuBLAS and cuSOLVER handles of a device for the scope of this object, made on first use and
/// bound to the device's stream, with the device current and the handles' lock held.
class Libraries {
 public:
  explicit Libraries(int device);
  cublasHandle_t cublas();
  cusolverDnHandle_t cusolver();
  cudaStream_t stream() const { return ctx_.stream; }

 private:
  DeviceContext& ctx_;
  DeviceScope scope_;
  std::lock_guard<std::mutex> lock_;
};

/// Whether f32 GEMMs may round their inputs to TF32 (FLUXION_CUDA_TF32=1; off by default: f32
/// products then match the CPU's to f32 rounding). Read once.
bool tf32_enabled();

}  // namespace fluxion::cuda
