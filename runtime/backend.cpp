// The plan-runner registry: one atomic slot per Backend. The built-in CPU runner (and, in a CUDA build,
// the CUDA runner of backends/cuda/jit/) is put in its slot
// when the registry is first used (a self-registering object file would be dropped from the static
// library by the linker when nothing else in it is referenced).
#include "runtime/backend.hpp"

#include <array>
#include <atomic>

#include "backends/cpu/plan_runner.hpp"
#include "backends/cuda/kernel_table.hpp"
#include "fluxion/errors.hpp"

#ifdef FLUXION_WITH_CUDA
namespace fluxion::cuda::jit {
// The CUDA runner (backends/cuda/jit/plan_runners.hpp, in the compiled fluxion_cuda library),
// declared here so that the installed implementation files need no header of that library.
const runtime::PlanRunner& cuda_plan_runner();
}  // namespace fluxion::cuda::jit
#endif

namespace fluxion::runtime {

namespace backend_detail {

struct Runners {
  std::array<std::atomic<const PlanRunner*>, kNumBackends> slot{};
  Runners() {
    for (auto& r : slot) r.store(nullptr);
    slot[static_cast<size_t>(Backend::cpu)].store(&cpu::plan_runner());
#ifdef FLUXION_WITH_CUDA
    slot[static_cast<size_t>(Backend::cuda)].store(&cuda::jit::cuda_plan_runner());  // backends/cuda/jit/
#endif
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
    static const bool device = (cuda::install_cuda_kernels(), true);
    (void)device;
  }
}

const PlanRunner& plan_runner(Backend backend) {
  ensure_kernel_table(backend);
  const PlanRunner* runner = backend_detail::runners()[static_cast<size_t>(backend)].load(std::memory_order_acquire);
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
