/// The seam between the core library and the compiled CUDA backend (fluxion::cuda): the core
/// defines the public fluxion::cuda API (fluxion/cuda.hpp) and forwards every call to the hooks
/// that the backend registers; with no backend registered, CUDA is reported as not compiled in.
/// So the core library never references the CUDA runtime: a CPU-only program links and runs
/// from an install built with CUDA, and linking fluxion::cuda turns the GPU on.
///
/// The backend registers from a static initializer in backends/cuda/register_backend.cpp. That
/// object would be dropped from the static library (nothing references it), so fluxion::cuda's
/// link interface forces it in with `-u fluxion_cuda_backend_anchor`.
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/cuda.hpp"

namespace fluxion::runtime {
class PlanRunner;
}  // namespace fluxion::runtime

namespace fluxion::cuda {

/// What the CUDA backend provides; every member is set (register_backend checks).
struct BackendHooks {
  bool (*is_available)() = nullptr;
  int (*device_count)() = nullptr;
  std::string (*unavailable_reason)() = nullptr;
  void (*synchronize)(int index) = nullptr;
  int (*current_device)() = nullptr;
  void* (*allocate)(int index, int64_t nbytes) = nullptr;
  void (*deallocate)(int index, void* ptr) noexcept = nullptr;
  void (*copy)(void* dst, Device dst_device, const void* src, Device src_device, int64_t nbytes) = nullptr;
  int64_t (*release_cached)() = nullptr;
  memory::PoolStats (*stats)(int index) = nullptr;
  void (*install_kernels)() = nullptr;                    // files the CUDA kernel of every primitive
  const runtime::PlanRunner& (*plan_runner)() = nullptr;  // jit's runner for Backend::cuda
};

/// Makes `hooks` (static storage) the CUDA backend of this process. Called once, before main.
void register_backend(const BackendHooks& hooks);
/// The registered backend, or nullptr when fluxion::cuda is not linked.
const BackendHooks* registered_backend();

}  // namespace fluxion::cuda
