// jit's runtime: cache-entry matching, closing a traced entry, running it, per-thread scratch.
#include <deque>

#include "fluxion/jit.hpp"
#include "transforms/executor.hpp"
#include "transforms/passes.hpp"

namespace fluxion::jit_detail {

bool leaves_match(const Entry& e, const std::vector<Tensor>& leaves) {
  if (e.avals.size() != leaves.size()) return false;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const TensorImpl* impl = leaves[i].impl().get();
    if (!impl) return false;
    if (impl->device() != e.devices[i] || !(impl->aval() == e.avals[i])) return false;
  }
  return true;
}

void finish_entry(Entry& e, Jaxpr traced, const std::vector<Tensor>& leaves) {
  for (const Tensor& t : leaves) {
    e.avals.push_back(t.aval());
    e.devices.push_back(t.device());
  }
  // Constants traced by an enclosing transform (values the function closes over) become leading
  // inputs: the Jaxpr stays closed over concrete values only.
  std::vector<int32_t> constvars, lifted_vars;
  std::vector<Tensor> consts;
  for (size_t i = 0; i < traced.constvars.size(); ++i) {
    if (traced.consts[i].is_tracer()) {
      lifted_vars.push_back(traced.constvars[i]);
      e.leading_args.push_back(traced.consts[i]);
    } else {
      constvars.push_back(traced.constvars[i]);
      consts.push_back(traced.consts[i]);
    }
  }
  if (!lifted_vars.empty()) {
    traced.constvars = std::move(constvars);
    traced.consts = std::move(consts);
    traced.invars.insert(traced.invars.begin(), lifted_vars.begin(), lifted_vars.end());
  }
  e.call = std::make_shared<const JitCallParams>(std::make_shared<const Jaxpr>(passes::optimize(traced)), "jit");
}

void run_entry(const Entry& e, std::vector<Tensor>& leaves, std::vector<Tensor>& outs) {
  bool concrete = &current_interpreter() == &eval_interpreter() && e.leading_args.empty();
  for (const Tensor& t : leaves) concrete = concrete && !t.is_tracer();
  if (!concrete) {
    if (e.leading_args.empty()) {
      outs = fluxion::bind(jit_call_p(), leaves, *e.call);
    } else {
      std::vector<Tensor> all = e.leading_args;
      all.insert(all.end(), leaves.begin(), leaves.end());
      outs = fluxion::bind(jit_call_p(), all, *e.call);
    }
    return;
  }
  Device device = leaves.empty() ? Device::cpu() : leaves[0].device();
  if (!device.is_cpu()) {
    e.call->executable(device)->run_unchecked(leaves, outs);
    return;
  }
  const Executable* plan = e.cpu_plan.load(std::memory_order_acquire);
  if (!plan) {
    plan = e.call->executable(device).get();  // owned by e.call's cache for e's lifetime
    e.cpu_plan.store(plan, std::memory_order_release);
  }
  plan->run_unchecked(std::move(leaves), outs);
}

namespace {
/// Per-thread stack of vector pairs: nested jit calls each take the next one; capacity is kept.
struct ScratchStack {
  std::deque<std::pair<std::vector<Tensor>, std::vector<Tensor>>> pairs;
  size_t depth = 0;
};
ScratchStack& scratch_stack() {
  // Never destroyed on the main thread, like the eval interpreter; freed when other threads exit.
  thread_local ScratchStack* stack = detail::delete_at_thread_exit(new ScratchStack());
  return *stack;
}
}  // namespace

Scratch::Scratch() {
  ScratchStack& s = scratch_stack();
  if (s.depth == s.pairs.size()) s.pairs.emplace_back();
  pair_ = &s.pairs[s.depth++];
  depth_ = &s.depth;
}

Scratch::~Scratch() {
  pair_->first.clear();
  pair_->second.clear();
  --*depth_;
}

}  // namespace fluxion::jit_detail
