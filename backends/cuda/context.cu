// Device discovery, error checks and the per-device contexts (stream, memory pool, cuBLAS and
// cuSOLVER handles) of the CUDA backend; see context.cuh.
#include "backends/cuda/context.cuh"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/cuda/backend_impl.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"
#include "src/allocator.hpp"

namespace fluxion::cuda {

namespace context_detail {

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
      cudaGetLastError();  // clear the error so later calls are not blamed for it
    }
    return r;
  }();
  return p;
}

// Contexts by device index; a slot is written once, under `mutex`, and read without it.
constexpr int kMaxDevices = 64;
std::atomic<DeviceContext*> slots[kMaxDevices];
std::mutex& slots_mutex() {
  static std::mutex* m = new std::mutex();  // never destroyed, like the contexts
  return *m;
}

// The cache's default cap on the current device: a quarter of its memory
// (FLUXION_ALLOCATOR_CACHE_BYTES overrides it, as it does the CPU cache's).
int64_t default_release_threshold() {
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cuda", "cudaMemGetInfo");
  return static_cast<int64_t>(total_bytes / 4);
}

DeviceContext* make_context(int index) {
  DeviceScope scope(index);
  int pools = 0;
  check(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, index), "cuda", "cudaDeviceGetAttribute");
  if (!pools)
    fluxion::detail::fail<DeviceError>("cuda", "cuda:", index, " does not support stream-ordered memory pools, ",
                                       "which Fluxion's allocator needs. Update the driver (CUDA 11.2 or newer).");
  auto c = std::make_unique<DeviceContext>();  // released to the registry once complete
  c->device = index;
  check(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "cuda", "cudaStreamCreateWithFlags");
  cudaMemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = index;
  check(cudaMemPoolCreate(&c->pool, &props), "cuda", "cudaMemPoolCreate");
  c->release_threshold = device_memory::cache_limit(default_release_threshold());
  uint64_t threshold = static_cast<uint64_t>(c->release_threshold);
  check(cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cuda",
        "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
  return c.release();
}

}  // namespace context_detail

std::string error_text(cudaError_t e) {
  return fluxion::detail::cat(cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
}

void check(cudaError_t e, const char* where, const char* call) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next check
  fluxion::detail::fail<DeviceError>(where, call, " failed: ", error_text(e),
                                     ". A CUDA error after a kernel may come from that kernel; "
                                     "CUDA_LAUNCH_BLOCKING=1 reports it at its launch.");
}

void check_cublas(cublasStatus_t s, const char* where, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  fluxion::detail::fail<DeviceError>(where, call, " failed: ", cublasGetStatusName(s), " (", cublasGetStatusString(s),
                                     ").");
}

void check_cusolver(cusolverStatus_t s, const char* where, const char* call) {
  if (s == CUSOLVER_STATUS_SUCCESS) return;
  fluxion::detail::fail<DeviceError>(where, call, " failed with cusolverStatus_t ", static_cast<int>(s), ".");
}

// The public API's implementations (backend_impl.hpp): the core forwards fluxion::cuda::is_available()
// and the others here once register_backend.cpp has registered them.
namespace backend_impl {

bool is_available() { return context_detail::probe().error == cudaSuccess && context_detail::probe().count > 0; }
int device_count() { return is_available() ? context_detail::probe().count : 0; }

std::string unavailable_reason() {
  const context_detail::Probe& p = context_detail::probe();
  if (p.error != cudaSuccess) return "the CUDA runtime cannot reach a device: " + error_text(p.error);
  if (p.count == 0) return "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
  return "";
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cuda", "cudaGetDevice");
  return d;
}

void synchronize(int index) {
  DeviceContext& c = context(index);
  check(cudaStreamSynchronize(c.stream), "synchronize", "cudaStreamSynchronize");
}

}  // namespace backend_impl

void check_device(const char* where, int index) {
  if (!backend_impl::is_available())
    fluxion::detail::fail<DeviceError>(where, "cannot use cuda:", index, ": ", backend_impl::unavailable_reason(),
                                       ". Use fx::Device::cpu(), or run where a GPU and its "
                                       "driver are present.");
  if (index < 0 || index >= context_detail::probe().count)
    fluxion::detail::fail<DeviceError>(where, "there is no device cuda:", index, ": ", context_detail::probe().count,
                                       " CUDA device(s) are visible. Use an index "
                                       "below fx::cuda::device_count().");
  if (index >= context_detail::kMaxDevices)
    fluxion::detail::fail<DeviceError>(where, "cuda:", index, " is beyond the ", context_detail::kMaxDevices,
                                       " devices Fluxion supports. Restrict CUDA_VISIBLE_DEVICES.");
}

void make_current(int index) {
  if (backend_impl::current_device() != index) check(cudaSetDevice(index), "cuda", "cudaSetDevice");
}

DeviceScope::DeviceScope(int index) : previous_(backend_impl::current_device()) {
  if (previous_ != index) check(cudaSetDevice(index), "cuda", "cudaSetDevice");
}

DeviceScope::~DeviceScope() {
  int now = previous_;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

DeviceContext& context(int index) {
  using namespace context_detail;
  if (index >= 0 && index < kMaxDevices)
    if (DeviceContext* c = slots[index].load(std::memory_order_acquire)) return *c;
  check_device("cuda", index);
  std::lock_guard<std::mutex> lock(slots_mutex());
  DeviceContext* c = slots[index].load(std::memory_order_relaxed);
  if (!c) {
    c = make_context(index);
    slots[index].store(c, std::memory_order_release);
  }
  return *c;
}

DeviceContext* existing_context(int index) {
  if (index < 0 || index >= context_detail::kMaxDevices) return nullptr;
  return context_detail::slots[index].load(std::memory_order_acquire);
}

cudaStream_t stream(int device) { return context(device).stream; }

Libraries::Libraries(int device) : ctx_(context(device)), scope_(device), lock_(ctx_.library_mutex) {}

cublasHandle_t Libraries::cublas() {
  if (!ctx_.cublas) {
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cuda", "cublasCreate");
    cublasStatus_t s = cublasSetStream(h, ctx_.stream);
    // Default math: no TF32 unless a call asks for it (CudaExec::gemm, FLUXION_CUDA_TF32).
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) cublasDestroy(h);
    check_cublas(s, "cuda", "cublasSetStream");
    ctx_.cublas = h;
  }
  return ctx_.cublas;
}

cusolverDnHandle_t Libraries::cusolver() {
  if (!ctx_.cusolver) {
    cusolverDnHandle_t h = nullptr;
    check_cusolver(cusolverDnCreate(&h), "cuda", "cusolverDnCreate");
    cusolverStatus_t s = cusolverDnSetStream(h, ctx_.stream);
    if (s != CUSOLVER_STATUS_SUCCESS) cusolverDnDestroy(h);
    check_cusolver(s, "cuda", "cusolverDnSetStream");
    ctx_.cusolver = h;
  }
  return ctx_.cusolver;
}

bool tf32_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("FLUXION_CUDA_TF32");
    return env && std::strcmp(env, "1") == 0;
  }();
  return on;
}

}  // namespace fluxion::cuda
