// The interpreter stack and the eager interpreter: bind -> shape rule -> kernel, now.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "fluxion/cuda.hpp"
#include "fluxion/interpreter.hpp"
#include "fluxion/primitive.hpp"
#include "runtime/backend.hpp"
#include "transforms/half_kernels.hpp"

namespace fluxion {

namespace eval_detail {

/// The kernel table of eager ops on CPU tensors: cpu, or what $FLUXION_EAGER_BACKEND names
/// (reference or cuda_emulated: whole test suites run on another table, transforms included).
Backend host_backend() {
  static const Backend chosen = [] {
    const char* env = std::getenv("FLUXION_EAGER_BACKEND");
    std::string name = env ? env : "cpu";
    for (Backend b : {Backend::cpu, Backend::reference, Backend::cuda_emulated})
      if (name == backend_name(b)) return b;
    detail::fail<Error>("FLUXION_EAGER_BACKEND", "unknown backend '", name,
                        "'. Use cpu, reference or cuda_emulated (or unset it).");
  }();
  return chosen;
}

/// Evaluates primitives immediately with the kernels of the inputs' device.
class EvalInterpreter final : public Interpreter {
 public:
  EvalInterpreter() : Interpreter(Root{}) {}
  std::vector<Tensor> process(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) override {
    for (const Tensor& t : inputs) check_visible(t, p.name.c_str());
    const bool on_gpu = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.device().is_cuda(); });
    return eval_primitive(p, inputs, params, on_gpu ? Backend::cuda : host_backend());
  }
};

thread_local Interpreter* current = nullptr;

}  // namespace eval_detail

Interpreter::Interpreter(Root) : tag_(std::make_shared<InterpreterTag>()) {}

Interpreter::Interpreter(const char* transform)
    : parent_(&current_interpreter()), tag_(std::make_shared<InterpreterTag>()) {
  tag_->transform = transform;
  tag_->level = parent_->level() + 1;
}

FLUXION_REPL_INLINE Interpreter::~Interpreter() { tag_->active = false; }

bool Interpreter::owns(const Tensor& t) const {
  const TensorImpl* p = t.impl().get();
  return p && p->is_tracer() && static_cast<const TracerImpl*>(p)->owner() == tag_;
}

void Interpreter::check_visible(const Tensor& t, const char* op) const {
  const TensorImpl* p = t.impl().get();
  if (!p) detail::fail<Error>(op, "an input is an empty (default-constructed) Tensor. Assign it a value first.");
  if (!p->is_tracer()) return;
  const InterpreterTag& owner = *static_cast<const TracerImpl*>(p)->owner();
  if (owner.active && owner.level <= level()) return;
  detail::fail<LeakedTracerError>(
      op, "a value traced by ", owner.transform, " (", p->aval(), ") was used ",
      owner.active ? "inside an outer transform" : "after its transform returned",
      ". Return values from the transformed function instead of storing them in captured or "
      "global variables.");
}

namespace detail {
bool is_main_thread() {
#ifdef __linux__
  return ::getpid() == static_cast<pid_t>(::syscall(SYS_gettid));
#else
  return true;
#endif
}
}  // namespace detail

Interpreter& eval_interpreter() {
  // Never destroyed on the main thread: a thread_local with a destructor crashes clang-repl
  // (notebooks) at exit, and tracers may outlive the thread's other statics. Other threads free
  // it when they exit.
  thread_local eval_detail::EvalInterpreter* eval = detail::delete_at_thread_exit(new eval_detail::EvalInterpreter());
  return *eval;
}

Interpreter& current_interpreter() {
  if (!eval_detail::current) eval_detail::current = &eval_interpreter();
  return *eval_detail::current;
}

InterpreterScope::InterpreterScope(Interpreter& interp) : previous_(&current_interpreter()) {
  eval_detail::current = &interp;
}
InterpreterScope::~InterpreterScope() { eval_detail::current = previous_; }

std::vector<Tensor> bind(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) {
  return current_interpreter().process(p, inputs, params);
}

Tensor bind1(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) {
  std::vector<Tensor> out = current_interpreter().process(p, inputs, params);
  return std::move(out[0]);
}

namespace eval_detail {

// The device an op on `backend` runs on: the first GPU input's, or the thread's current GPU when
// none is (an iota inside a sub-Jaxpr run on the GPU); for the host backends, the first input's.
Device op_device(const std::vector<Tensor>& inputs, Backend backend) {
  if (backend != Backend::cuda) return inputs.empty() ? Device::cpu() : inputs[0].device();
  for (const Tensor& t : inputs)
    if (t.device().is_cuda()) return t.device();
  return Device::cuda(cuda::current_device());
}

}  // namespace eval_detail

std::vector<Tensor> eval_primitive(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params,
                                   Backend backend) {
  const Device device = eval_detail::op_device(inputs, backend);
  // Rank-0 CPU values (literals such as the 2 in x * 2, and the constants derivative rules make)
  // follow the op's device, like JAX's uncommitted scalars; a larger CPU tensor next to a device
  // tensor stays put and is reported below.
  std::vector<Tensor> placed;
  const std::vector<Tensor>* in = &inputs;
  if (device.is_cuda()) {
    placed = inputs;
    for (Tensor& t : placed)
      if (t.device().is_cpu() && t.ndim() == 0) t = device_put(t, device);
    in = &placed;
  }
  std::vector<AbstractValue> in_avals;
  in_avals.reserve(in->size());
  for (const Tensor& t : *in) {
    if (t.device() != device)
      detail::fail<DeviceError>(p.name.c_str(), "inputs live on different devices (", device, " and ", t.device(),
                                "): ", t.aval(), " is on ", t.device(),
                                ". Move them with fx::device_put first (only rank-0 values follow the other "
                                "inputs' device).");
    in_avals.push_back(t.aval());
  }
  std::vector<AbstractValue> out_avals = p.abstract_eval(in_avals, params);
  std::vector<Tensor> outputs;
  outputs.reserve(out_avals.size());
  if (p.traits.view) {
    outputs.push_back(make_view((*in)[0], out_avals[0]));
    return outputs;
  }
  runtime::ensure_kernel_table(backend);
  Kernel k = p.kernel(backend);
  if (!k)
    detail::fail<NotImplementedError>(p.name.c_str(), "no ", backend_name(backend), " kernel for primitive '", p.name,
                                      "'.");
  for (const AbstractValue& a : out_avals) outputs.push_back(empty(a, device));
  half_kernels::run_kernel(p, k, backend, *in, params, outputs);  // f16/bf16 equations compute in f32
  return outputs;
}

}  // namespace fluxion
