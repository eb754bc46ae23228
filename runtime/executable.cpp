// The Executable: the plan made once at construction, per-call states pooled (one taken without
// a lock, the rest under a mutex), and each call handed to the plan runner through the seam.
#include "runtime/executable.hpp"

#include <algorithm>

#include "runtime/backend.hpp"
#include "runtime/planner.hpp"
#include "runtime/plan_cache.hpp"

namespace fluxion {

namespace runtime {

int max_threads() { return std::max(1, num_threads()); }

}  // namespace runtime

Executable::Executable(std::shared_ptr<const Jaxpr> jaxpr, Device device)
    : jaxpr_(std::move(jaxpr)), runner_(&runtime::plan_runner(device.is_cuda() ? Backend::cuda : Backend::cpu)) {
  plan_ = std::make_unique<runtime::Plan>(runtime::make_plan(*jaxpr_, device, *runner_));
}

Executable::~Executable() { delete fast_.load(); }

std::unique_ptr<runtime::RunState> Executable::acquire() const {
  if (runtime::RunState* fast = fast_.exchange(nullptr, std::memory_order_acquire))
    return std::unique_ptr<runtime::RunState>(fast);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<runtime::RunState> s = std::move(idle_.back());
      idle_.pop_back();
      return s;
    }
  }
  const Jaxpr& j = *jaxpr_;
  const runtime::Plan& plan = *plan_;
  auto s = std::make_unique<runtime::RunState>();
  s->values.resize(j.avals.size());
  s->recycled.resize(j.avals.size());
  for (int64_t bytes : plan.buffer_bytes) s->buffers.push_back(std::make_shared<Buffer>(plan.device, bytes));
  for (size_t v = 0; v < j.avals.size(); ++v) {
    switch (plan.kind[v]) {
      case runtime::Kind::constant: s->values[v] = plan.fixed[v]; break;
      case runtime::Kind::intermediate:
        if (plan.buffer_of[v] >= 0)
          s->values[v] = Tensor(std::make_shared<ArrayImpl>(j.avals[v], s->buffers[plan.buffer_of[v]]));
        break;
      case runtime::Kind::output: s->recycled[v] = runtime::RecycledArray::output(j.avals[v], plan.device); break;
      case runtime::Kind::dynamic_view: s->recycled[v] = runtime::RecycledArray::view(j.avals[v]); break;
      default: break;
    }
  }
  // Stable views in definition order (a view's source is defined before it).
  for (const runtime::Step& step : plan.steps) {
    if (!step.eqn || !step.eqn->primitive->traits.view) continue;
    int32_t out = step.eqn->outputs[0];
    if (plan.kind[out] != runtime::Kind::stable_view) continue;
    const Tensor& src = s->values[plan.view_source[out]];
    s->values[out] = make_view(src, j.avals[out]);
  }
  s->workspace = runner_->make_workspace(plan);
  s->in.reserve(static_cast<size_t>(plan.max_inputs));
  s->out.reserve(static_cast<size_t>(plan.max_outputs));
  return s;
}

void Executable::release(std::unique_ptr<runtime::RunState> s) const {
  runtime::RunState* expected = nullptr;
  if (fast_.compare_exchange_strong(expected, s.get(), std::memory_order_release)) {
    s.release();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(s));
}

void Executable::run(const std::vector<Tensor>& args, std::vector<Tensor>& outs) const {
  const Jaxpr& j = *jaxpr_;
  const runtime::Plan& plan = *plan_;
  if (args.size() != j.invars.size())
    detail::fail<Error>("jit", "the plan takes ", j.invars.size(), " inputs, got ", args.size(),
                        ". Call the jit'd function with the arguments it was traced with.");
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].aval() != j.avals[j.invars[i]])
      detail::fail<ShapeError>("jit", "input ", i, " is ", args[i].aval(), " but the plan was traced for ",
                               j.avals[j.invars[i]], ".");
  run_unchecked(args, outs);
}

void Executable::run_unchecked(const std::vector<Tensor>& args, std::vector<Tensor>& outs) const {
  const std::vector<int32_t>& invars = jaxpr_->invars;
  run_bound(
      [&](runtime::RunState& s) {
        for (size_t i = 0; i < args.size(); ++i) s.values[invars[i]] = args[i];
      },
      outs);
}

void Executable::run_unchecked(std::vector<Tensor>&& args, std::vector<Tensor>& outs) const {
  const std::vector<int32_t>& invars = jaxpr_->invars;
  run_bound(
      [&](runtime::RunState& s) {
        for (size_t i = 0; i < args.size(); ++i) s.values[invars[i]] = std::move(args[i]);
      },
      outs);
}

template <class BindArgs> void Executable::run_bound(const BindArgs& bind_args, std::vector<Tensor>& outs) const {
  const Jaxpr& j = *jaxpr_;
  const runtime::Plan& plan = *plan_;
  std::unique_ptr<runtime::RunState> state = acquire();
  runtime::RunState& s = *state;
  // Give the state back (and drop references to the caller's tensors) even when a kernel throws.
  struct Restore {
    const Executable* self;
    std::unique_ptr<runtime::RunState>& st;
    const Jaxpr& j;
    const runtime::Plan& plan;
    ~Restore() {
      // The state keeps no handle on the caller's tensors nor on what it handed out: a view or
      // output nobody holds goes back to its RecycledArray (and a view lets go of the caller's bytes).
      for (int32_t v : j.invars) st->values[v] = Tensor();
      for (int32_t v : plan.dynamic_views) st->values[v] = Tensor();
      for (int32_t v : plan.output_vars) st->values[v] = Tensor();
      st->in.clear();
      st->out.clear();
      self->release(std::move(st));
    }
  } restore{this, state, j, plan};
  bind_args(s);
  // Last call's output buffers are reused once the caller dropped them (take() acquires what the
  // release of their last handle published); outputs still held get fresh buffers.
  for (int32_t v : plan.output_vars) {
    s.values[v] = s.recycled[v]->take();
    if (!s.values[v].defined()) s.values[v] = empty(j.avals[v], plan.device);
  }
  runner_->run(plan, s);
  outs.clear();
  for (const Atom& a : j.outputs) outs.push_back(a.is_literal() ? a.literal : s.values[a.var]);
}

std::string Executable::describe() const { return runtime::describe_plan(*plan_, *runner_); }

int64_t Executable::intermediate_bytes() const { return runtime::intermediate_bytes(*plan_); }

std::shared_ptr<const Executable> compile_jaxpr(const Jaxpr& traced, Device device) {
  return runtime::compile(traced, runtime::JaxprStage::traced, device);
}

}  // namespace fluxion
