// Registers the CUDA backend with the core library (backend_hooks.hpp) before main. Linked in by
// fluxion::cuda's `-u fluxion_cuda_backend_anchor` (this object is otherwise unreferenced and a
// static library's linker would drop it with its initializer).
#include "backends/cuda/backend_hooks.hpp"
#include "backends/cuda/backend_impl.hpp"
#include "backends/cuda/jit/plan_runners.hpp"
#include "backends/cuda/kernel_table.hpp"

namespace fluxion::cuda::register_detail {

BackendHooks make_hooks() {
  BackendHooks h;
  h.is_available = &backend_impl::is_available;
  h.device_count = &backend_impl::device_count;
  h.unavailable_reason = &backend_impl::unavailable_reason;
  h.synchronize = &backend_impl::synchronize;
  h.current_device = &backend_impl::current_device;
  h.allocate = &backend_impl::memory::allocate;
  h.deallocate = &backend_impl::memory::deallocate;
  h.copy = &backend_impl::memory::copy;
  h.release_cached = &backend_impl::memory::release_cached;
  h.stats = &backend_impl::memory::stats;
  h.install_kernels = &install_cuda_kernels;
  h.plan_runner = &jit::cuda_plan_runner;
  return h;
}

const BackendHooks hooks = make_hooks();

struct Registrar {
  Registrar() { register_backend(hooks); }
};
const Registrar registrar;

}  // namespace fluxion::cuda::register_detail

// The symbol fluxion::cuda's link interface names with -u (backends/cuda/CMakeLists.txt).
extern "C" const int fluxion_cuda_backend_anchor = 1;
