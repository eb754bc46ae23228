// The plan-runner registry: one atomic slot per Backend. The built-in CPU runner is put in its slot
// when the registry is first used; the CUDA runner comes from the CUDA backend's hooks
// (backends/cuda/backend_hooks.hpp) when fluxion::cuda is linked, on the first jit on a GPU.
#include "runtime/backend.hpp"

#include <array>
#include <atomic>

#include "backends/cpu/plan_runner.hpp"
#include "backends/cuda/backend_hooks.hpp"
#include "backends/cuda/kernel_table.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::runtime {

namespace backend_detail {

struct Runners {
  std::array<std::atomic<const PlanRunner*>, kNumBackends> slot{};
  Runners() {
    for (auto& r : slot) r.store(nullptr);
    slot[static_cast<size_t>(Backend::cpu)].store(&cpu::plan_runner());
  }
};

std::array<std::atomic<const PlanRunner*>, kNumBackends>& runners() {
  static Runners table;
  return table.slot;
}

}  // namespace backend_detail

const Lowering& PlanRunner::lowering() const {
  static const Lowering nothing;
  return nothing;
}

void set_kernel(const Primitive& p, Backend backend, Kernel kernel) {
  // Primitives are built non-const on the heap (primitives/builder.cpp): the cast is well defined.
  const_cast<Primitive&>(p).kernels[static_cast<size_t>(backend)] = kernel;
}

void ensure_kernel_table(Backend backend) {
  // Function-local statics (thread-safe, once): std::call_once needs emulated TLS symbols that
  // clang-repl (notebooks) cannot resolve.
  if (backend == Backend::cuda_emulated) {
    static const bool emulated = (cuda::install_emulated_kernels(), true);
    (void)emulated;
  } else if (backend == Backend::cuda) {
    // Nothing to file without the CUDA backend: eager ops on cuda:N then fail at allocation.
    static const bool device = [] {
      if (const cuda::BackendHooks* hooks = cuda::registered_backend()) hooks->install_kernels();
      return true;
    }();
    (void)device;
  }
}

const PlanRunner& plan_runner(Backend backend) {
  ensure_kernel_table(backend);
  auto& slot = backend_detail::runners()[static_cast<size_t>(backend)];
  const PlanRunner* runner = slot.load(std::memory_order_acquire);
  if (!runner && backend == Backend::cuda) {
    // The CUDA backend's runner, unless set_plan_runner put another one in the slot first.
    if (const cuda::BackendHooks* hooks = cuda::registered_backend()) {
      const PlanRunner* expected = nullptr;
      slot.compare_exchange_strong(expected, &hooks->plan_runner(), std::memory_order_acq_rel);
      runner = slot.load(std::memory_order_acquire);
    }
  }
  if (!runner)
    detail::fail<NotImplementedError>("jit", "no plan runner for the ", backend_name(backend),
                                      " backend. Register one with runtime::set_plan_runner, or jit on the cpu.");
  return *runner;
}

const PlanRunner* set_plan_runner(Backend backend, const PlanRunner* runner) {
  return backend_detail::runners()[static_cast<size_t>(backend)].exchange(runner, std::memory_order_acq_rel);
}

void bind_dynamic_view(const Plan& plan, const Step& step, RunState& s) {
  const Equation& e = *step.eqn;
  const int32_t v = e.outputs[0];
  const std::shared_ptr<Buffer>& bytes = s.values[e.inputs[0].var].array("jit").buffer();
  // The last call's view is reused once no Tensor holds it (RecycledArray::take synchronizes with
  // the release of the last one); while the caller still holds it, this call's view is a new one.
  s.values[v] = s.recycled[v]->take(bytes);
  if (!s.values[v].defined()) s.values[v] = Tensor(std::make_shared<ArrayImpl>(plan.jaxpr->avals[v], bytes));
}

}  // namespace fluxion::runtime
