// jit's runtime: cache-entry matching, closing a traced entry, running it, per-thread scratch.
#include <algorithm>
#include <array>
#include <deque>
#include <new>

#include "fluxion/jit.hpp"
#include "runtime/executable.hpp"
#include "passes/passes.hpp"

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
  // The pipeline's one run for this signature: planning the call only inlines what remains.
  // The traced Jaxpr moves into the passes, which rewrite it in place: it is held once, not twice.
  const size_t traced_equations = traced.equations.size();
  try {
    e.call = std::make_shared<const JitCallParams>(std::make_shared<const Jaxpr>(passes::optimize(std::move(traced))),
                                                   "jit", /*optimized=*/true);
  } catch (const std::bad_alloc&) {
    detail::fail<OutOfMemoryError>("jit", "out of memory while optimizing a traced program of ", traced_equations,
                                   " equations. Free memory, or make the program smaller: fx::scan / ",
                                   "fx::fori_loop instead of an unrolled loop.");
  }
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

constexpr size_t kHazardSlots = 16;  // nesting depths with a hazard slot; deeper calls pin instead

/// Per-thread stack of vector pairs: nested jit calls each take the next one; capacity is kept.
/// `hazards[d]` names the entry the latest call at depth d ran (read by evicting threads).
struct ScratchStack {
  ScratchStack();
  ~ScratchStack();
  std::deque<std::pair<std::vector<Tensor>, std::vector<Tensor>>> pairs;
  size_t depth = 0;
  std::array<std::atomic<const Entry*>, kHazardSlots> hazards{};
};

/// Every thread's ScratchStack, for the hazard scan. Never destroyed (threads may outlive statics).
struct Registry {
  std::mutex mutex;
  std::vector<const ScratchStack*> stacks;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

/// This thread's stack: constant-initialised, so a call reads it without a TLS guard.
thread_local ScratchStack* tls_stack = nullptr;

ScratchStack::ScratchStack() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().stacks.push_back(this);
}
ScratchStack::~ScratchStack() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.stacks.erase(std::find(r.stacks.begin(), r.stacks.end(), this));
  tls_stack = nullptr;  // destroyed at its thread's exit, on that thread
}

[[gnu::noinline]] ScratchStack* new_scratch_stack() {
  // Never destroyed on the main thread, like the eval interpreter; freed when other threads exit.
  return tls_stack = detail::delete_at_thread_exit(new ScratchStack());
}
inline ScratchStack& scratch_stack() {
  ScratchStack* s = tls_stack;
  return s ? *s : *new_scratch_stack();
}

/// True when some thread's hazard slot names `e`.
bool in_use(const Entry* e, const std::vector<const Entry*>& named) {
  return std::find(named.begin(), named.end(), e) != named.end();
}

/// Drops `victims` (already out of `entries`, and `last` cleared if it named one) and the retired
/// entries no hazard slot names any more: those go to `garbage`, freed after the mutex is released;
/// the rest wait in `retired`. The caller holds the cache's mutex. `last` was changed with seq_cst
/// before this scan, so a call that read an entry from `last` published its slot before the scan
/// reads it (both sides are seq_cst), and a call that found it under the mutex did so before.
void retire(Cache& cache, std::vector<std::shared_ptr<const Entry>>& victims,
            std::vector<std::shared_ptr<const Entry>>& garbage) {
  std::vector<const Entry*> named;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const ScratchStack* s : r.stacks)
      for (const auto& h : s->hazards)
        if (const Entry* e = h.load(std::memory_order_seq_cst)) named.push_back(e);
  }
  victims.insert(victims.end(), std::make_move_iterator(cache.retired.begin()),
                 std::make_move_iterator(cache.retired.end()));
  cache.retired.clear();
  for (auto& e : victims) (in_use(e.get(), named) ? cache.retired : garbage).push_back(std::move(e));
  victims.clear();
}

/// Evicts least recently used entries (under the mutex) until at most `keep` remain.
void evict_to(Cache& cache, size_t keep, std::vector<std::shared_ptr<const Entry>>& garbage) {
  std::vector<std::shared_ptr<const Entry>> victims;
  while (cache.entries.size() > keep) {
    auto oldest = std::min_element(cache.entries.begin(), cache.entries.end(),
                                   [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    if (cache.last.load(std::memory_order_relaxed) == oldest->get())
      cache.last.store(nullptr, std::memory_order_seq_cst);
    victims.push_back(std::move(*oldest));
    cache.entries.erase(oldest);
  }
  if (!victims.empty() || !cache.retired.empty()) retire(cache, victims, garbage);
}

}  // namespace

Cache::Cache(size_t c) : capacity(c) {}

void check_capacity(size_t n) {
  if (n == 0)
    detail::fail<Error>("jit",
                        "cache size 0 would keep no compiled signature. Pass fx::cache_size(n) with n >= 1 "
                        "(clear_cache() empties the cache).");
}

const Entry* insert_entry(Cache& cache, Scratch& scratch, std::shared_ptr<const Entry>& held,
                          const std::function<bool(const Entry&)>& matches) {
  std::vector<std::shared_ptr<const Entry>> garbage;  // freed after the mutex is released
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto same = std::find_if(cache.entries.begin(), cache.entries.end(), [&](const auto& o) { return matches(*o); });
  if (same != cache.entries.end()) held = *same;  // traced by another thread meanwhile: keep one
  else cache.entries.push_back(held);
  held->last_use = ++cache.clock;
  cache.last.store(held.get(), std::memory_order_seq_cst);
  const Entry* pinned = scratch.pin(held, held);  // past the slots, `held` itself keeps it
  evict_to(cache, cache.capacity, garbage);
  return pinned;
}

void shrink(Cache& cache, size_t keep) {
  // This thread runs no call at its current depth or deeper: its slots there need name nothing,
  // so that what they named can be freed now.
  ScratchStack& s = scratch_stack();
  for (size_t d = s.depth; d < kHazardSlots; ++d) s.hazards[d].store(nullptr, std::memory_order_seq_cst);
  std::vector<std::shared_ptr<const Entry>> garbage;
  std::lock_guard<std::mutex> lock(cache.mutex);
  evict_to(cache, keep, garbage);
}

Scratch::Scratch() {
  ScratchStack& s = scratch_stack();
  if (s.depth == s.pairs.size()) s.pairs.emplace_back();
  hazard_ = s.depth < kHazardSlots ? &s.hazards[s.depth] : nullptr;
  pair_ = &s.pairs[s.depth++];
  depth_ = &s.depth;
}

Scratch::~Scratch() {
  pair_->first.clear();
  pair_->second.clear();
  --*depth_;
}

}  // namespace fluxion::jit_detail
