/// jit: stage a function once per signature, optimize it, and run the cached plan.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "fluxion/jaxpr.hpp"
#include "fluxion/pytree.hpp"

namespace fluxion {

class Executable;

/// Params of the `jit_call` primitive: a closed sub-Jaxpr run as one operation. Transforms of a
/// jit'd function transform the sub-Jaxpr (derived Jaxprs and the compiled plans are cached here).
class JitCallParams final : public Params {
 public:
  /// `optimized`: passes::optimize already ran on `jaxpr` (fx::jit's signatures), so planning it
  /// only inlines the calls that remain; a derived (jvp, vmap, transpose...) Jaxpr is optimized
  /// when it is planned.
  JitCallParams(std::shared_ptr<const Jaxpr> jaxpr, std::string name, bool optimized = false);
  const Jaxpr& jaxpr() const { return *jaxpr_; }
  const std::shared_ptr<const Jaxpr>& jaxpr_ptr() const { return jaxpr_; }
  const std::string& name() const { return name_; }
  /// The executable plan for `device`, compiled on first use (thread-safe; runtime::PlanCache).
  std::shared_ptr<const Executable> executable(Device device) const;
  /// Per-transform caches of derived Jaxprs (jvp, batching, transpose, partial eval).
  struct Caches;
  Caches& caches() const { return *caches_; }

  void print(std::ostream& os) const override;
  bool equals(const Params& other) const override;
  size_t hash() const override;
  std::shared_ptr<const Params> clone() const override;
  void save(ParamsWriter& w) const override;  // src/export_params_special.cpp
  static std::shared_ptr<const Params> load(ParamsReader& r);

 private:
  std::shared_ptr<const Jaxpr> jaxpr_;
  std::string name_;
  std::shared_ptr<Caches> caches_;
};

/// The primitive that calls a jit-compiled sub-Jaxpr (what jit looks like to outer transforms).
const Primitive& jit_call_p();

/// jit's default bound on the compiled signatures kept per jit'd function (see fx::cache_size).
inline constexpr size_t default_jit_cache_size = 128;

/// jit's option: keep at most `n` compiled signatures (n >= 1), evicting the least recently used.
/// `fx::jit(f, fx::cache_size(8))`; the default is default_jit_cache_size.
struct CacheSize {
  size_t n = default_jit_cache_size;
};
inline CacheSize cache_size(size_t n) { return CacheSize{n}; }

namespace jit_detail {

/// One compiled signature of a jit'd function. Its key: the C++ argument types, `key_tree` (the
/// arguments' structure and static leaves), and the avals and devices of the tensor leaves.
struct Entry {
  explicit Entry(std::type_index t) : type(t) {}
  std::type_index type;              // the C++ argument types
  std::vector<AbstractValue> avals;  // of the dynamic leaves
  std::vector<Device> devices;
  std::shared_ptr<const void> key_tree;                      // std::tuple of the arguments, tensors left empty
  std::shared_ptr<const void> out_structure;                 // the output pytree (leaves are placeholders)
  std::shared_ptr<const JitCallParams> call;                 // the optimized Jaxpr and its plan
  std::vector<Tensor> leading_args;                          // closed-over tracers passed first (uncached)
  mutable std::atomic<const Executable*> cpu_plan{nullptr};  // call->executable(cpu), once known
  mutable uint64_t last_use = 0;                             // the cache's clock at its latest lookup (LRU)
};

/// The cache of one jit object (shared by its copies): at most `capacity` entries, the least
/// recently used evicted first. Everything but `last` is guarded by `mutex`. `last` (the latest
/// lookup's entry, always one of `entries` or null, written under the mutex) is matched first
/// without the mutex: locking it and copying the entry's shared_ptr were four atomic
/// read-modify-writes per call (a third of a tiny call once the process has threads). A call
/// reading `last` keeps its entry alive through its thread's hazard slot (see Scratch); eviction
/// moves an entry named by a slot to `retired` and frees it once no slot names it.
struct Cache {
  explicit Cache(size_t capacity);
  std::mutex mutex;
  std::vector<std::shared_ptr<const Entry>> entries;
  std::atomic<const Entry*> last{nullptr};
  size_t capacity;
  uint64_t clock = 0;
  std::vector<std::shared_ptr<const Entry>> retired;
};

/// Throws for a capacity of 0.
void check_capacity(size_t n);
/// True when `e` was traced for leaves with exactly these avals and devices.
bool leaves_match(const Entry& e, const std::vector<Tensor>& leaves);
/// Optimizes a freshly traced Jaxpr into an entry's call; tracer constants (values closed over
/// from an enclosing transform) become leading arguments, and then the entry is not cacheable.
void finish_entry(Entry& e, Jaxpr traced, const std::vector<Tensor>& leaves);
/// Runs the entry on `leaves`: the plan when everything is concrete, else binds jit_call so the
/// enclosing transform sees one primitive. Fills `outs`. The plan takes the leaves over (they are
/// left empty): no reference-count traffic per argument.
void run_entry(const Entry& e, std::vector<Tensor>& leaves, std::vector<Tensor>& outs);

/// Per-call scratch of the calling thread: the vectors of the arguments' leaves and the results,
/// reused across calls (steady-state calls allocate nothing; nested calls take the next pair),
/// and the hazard slot of this nesting depth, which names the entry the call runs so that no
/// eviction frees it meanwhile. The slot keeps naming it after the call: the next call of the
/// same entry then needs no store and no fence. Depths past the slots pin with a shared_ptr.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::vector<Tensor>& leaves() { return pair_->first; }
  std::vector<Tensor>& outs() { return pair_->second; }
  /// `cache.last`, protected by this call's hazard slot (null when there is none or no slot).
  const Entry* protect_last(const Cache& cache) {
    const Entry* e = cache.last.load(std::memory_order_seq_cst);
    if (!e || !hazard_) return nullptr;
    if (hazard_->load(std::memory_order_relaxed) != e) {
      // Publish, then check `last` still names it: an eviction after this sees the slot.
      hazard_->store(e, std::memory_order_seq_cst);
      if (cache.last.load(std::memory_order_seq_cst) != e) return nullptr;
    }
    return e;
  }
  /// Keeps `e` (found under the cache's mutex, which is held) alive for this call: in the hazard
  /// slot, or in `held` past the slots.
  const Entry* pin(const std::shared_ptr<const Entry>& e, std::shared_ptr<const Entry>& held) {
    if (hazard_) hazard_->store(e.get(), std::memory_order_seq_cst);
    else held = e;
    return e.get();
  }

 private:
  std::pair<std::vector<Tensor>, std::vector<Tensor>>* pair_;
  std::atomic<const Entry*>* hazard_;
  size_t* depth_;
};

/// The entry `matches` accepts, found under the mutex, pinned by `scratch` (or `held`) and made
/// the most recently used (and `last`); null when there is none.
template <class Match>
const Entry* find_entry(Cache& cache, Scratch& scratch, std::shared_ptr<const Entry>& held, const Match& matches) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  for (const auto& e : cache.entries)
    if (matches(*e)) {
      e->last_use = ++cache.clock;
      cache.last.store(e.get(), std::memory_order_seq_cst);
      return scratch.pin(e, held);
    }
  return nullptr;
}
/// Adds `held` (a fresh entry), or finds an equal one another thread added meanwhile, pins it,
/// makes it `last` and evicts the least recently used entries past the capacity.
const Entry* insert_entry(Cache& cache, Scratch& scratch, std::shared_ptr<const Entry>& held,
                          const std::function<bool(const Entry&)>& matches);
/// Evicts the least recently used entries until at most `capacity` remain (0 empties the cache).
void shrink(Cache& cache, size_t capacity);

template <class Arg> void flatten_dynamic(const Arg& a, std::vector<Tensor>& leaves) {
  if constexpr (is_pytree_v<Arg>) PyTree<Arg>::flatten(a, leaves);
}

/// An iterator of empty tensors: rebuilding a tree from it keeps only its structure and statics.
struct NoTensors {
  NoTensors operator++(int) { return *this; }
  Tensor operator*() const { return Tensor(); }
};
/// `a` with its tensors dropped: what an entry keeps of an argument for its key.
template <class Arg> Arg key_of(const Arg& a) {
  NoTensors none;
  return PyTree<Arg>::rebuild(a, none);
}

/// True when the arguments have the structure and static leaves of an entry's `key`.
template <class... Args, size_t... I>
bool same_key(const std::tuple<Args...>& key, std::index_sequence<I...>, const Args&... args) {
  return (PyTree<Args>::same_structure(std::get<I>(key), args) && ...);
}

template <class Arg> Arg traced_argument(StageInterpreter& st, const Arg& a) {
  if constexpr (is_pytree_v<Arg>) {
    std::vector<Tensor> leaves;
    PyTree<Arg>::flatten(a, leaves);
    for (Tensor& t : leaves) t = st.new_input(t.aval(), t.device());
    auto it = leaves.cbegin();
    return PyTree<Arg>::rebuild(a, it);
  } else {
    return a;
  }
}

}  // namespace jit_detail

/// A jit-compiled function: call it like the original. Tensor and pytree arguments are traced;
/// other arguments, and non-Tensor members of pytree arguments, are static. The cache key of a
/// call is the argument types, the pytree structure (container sizes, map keys), the static
/// values (compared with ==, floating-point ones by their bits) and the tensors' shapes, dtypes
/// and devices. At most cache_capacity() signatures are kept, the least recently used evicted.
template <class F> class Jitted {
 public:
  explicit Jitted(F f, CacheSize size = {}) : f_(std::move(f)) {
    jit_detail::check_capacity(size.n);
    cache_ = std::make_shared<jit_detail::Cache>(size.n);
  }

  template <class... Args> auto operator()(const Args&... args) const {
    using Out = std::decay_t<decltype(f_(args...))>;
    static_assert(is_pytree_v<Out>, "fx::jit: the function must return a Tensor or a pytree of Tensors");
    jit_detail::Scratch scratch;
    std::vector<Tensor>& leaves = scratch.leaves();
    (jit_detail::flatten_dynamic(args, leaves), ...);
    std::shared_ptr<const jit_detail::Entry> held;  // set only by the slow path
    const jit_detail::Entry* entry = scratch.protect_last(*cache_);
    if (!entry || !matches(*entry, leaves, args...)) entry = lookup<Out>(scratch, held, args...);
    std::vector<Tensor>& outs = scratch.outs();
    jit_detail::run_entry(*entry, leaves, outs);
    auto it = std::make_move_iterator(outs.begin());  // the results move out (no count updates)
    return PyTree<Out>::rebuild(*static_cast<const Out*>(entry->out_structure.get()), it);
  }

  /// The compiled signature of these arguments (traced and cached if new): its call (the optimized Jaxpr)
  /// and the output structure (tensors empty). fx::export_fn reads it. Throws when f closes over values of
  /// an enclosing transform (the Jaxpr would need them as extra inputs).
  template <class... Args> auto lower(const Args&... args) const {
    using Out = std::decay_t<decltype(f_(args...))>;
    static_assert(is_pytree_v<Out>, "fx::jit: the function must return a Tensor or a pytree of Tensors");
    jit_detail::Scratch scratch;
    (jit_detail::flatten_dynamic(args, scratch.leaves()), ...);
    std::shared_ptr<const jit_detail::Entry> held;
    const jit_detail::Entry* entry = lookup<Out>(scratch, held, args...);
    if (!entry->leading_args.empty())
      detail::fail<Error>("jit", "this function closes over ", entry->leading_args.size(),
                          " values of an enclosing transform. Lower it outside that transform.");
    return std::make_pair(entry->call, *static_cast<const Out*>(entry->out_structure.get()));
  }

  /// Number of compiled signatures held (tests check caching with it).
  size_t cache_size() const {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    return cache_->entries.size();
  }
  /// The most signatures kept (default_jit_cache_size unless fx::cache_size(n) said otherwise).
  size_t cache_capacity() const {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    return cache_->capacity;
  }
  /// Changes the bound (n >= 1), evicting the least recently used signatures past it.
  void set_cache_capacity(size_t n) const {
    jit_detail::check_capacity(n);
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      cache_->capacity = n;
    }
    jit_detail::shrink(*cache_, n);
  }
  /// Drops every compiled signature (calls running meanwhile finish with theirs); the next call
  /// of each signature traces again.
  void clear_cache() const { jit_detail::shrink(*cache_, 0); }

 private:
  // True when `e` was traced for these arguments: their types, structure and static leaves, and
  // their leaves' avals and devices.
  template <class... Args>
  static bool matches(const jit_detail::Entry& e, const std::vector<Tensor>& leaves, const Args&... args) {
    if (e.type != typeid(std::tuple<Args...>)) return false;
    const auto& key = *static_cast<const std::tuple<Args...>*>(e.key_tree.get());
    return jit_detail::same_key(key, std::index_sequence_for<Args...>{}, args...) &&
           jit_detail::leaves_match(e, leaves);
  }

  // The slow path (kept out of the call's code): the entry found under the mutex, or a fresh trace
  // (cached unless it closes over an outer transform's values); `held` keeps it alive if needed.
  template <class Out, class... Args>
  [[gnu::noinline]] const jit_detail::Entry* lookup(jit_detail::Scratch& scratch,
                                                    std::shared_ptr<const jit_detail::Entry>& held,
                                                    const Args&... args) const {
    const std::vector<Tensor>& leaves = scratch.leaves();
    auto match = [&](const jit_detail::Entry& e) { return matches(e, leaves, args...); };
    if (const jit_detail::Entry* found = jit_detail::find_entry(*cache_, scratch, held, match)) return found;
    held = trace<Out>(std::type_index(typeid(std::tuple<Args...>)), leaves, args...);
    if (!held->leading_args.empty()) return held.get();
    return jit_detail::insert_entry(*cache_, scratch, held, match);
  }

  // Traces f on abstract versions of the arguments; a throw leaves the cache untouched.
  template <class Out, class... Args> std::shared_ptr<const jit_detail::Entry> trace(std::type_index type,
                                                                                     const std::vector<Tensor>& leaves,
                                                                                     const Args&... args) const {
    auto e = std::make_shared<jit_detail::Entry>(type);
    StageInterpreter stage("jit");
    std::vector<Tensor> out_leaves;
    {
      InterpreterScope scope(stage);
      // Braced initialisation runs left to right, so input variables follow argument order.
      std::tuple<Args...> traced{jit_detail::traced_argument(stage, args)...};
      auto out = std::make_shared<Out>(std::apply(f_, traced));
      PyTree<Out>::flatten(*out, out_leaves);
      e->out_structure = std::move(out);
    }
    e->key_tree = std::make_shared<std::tuple<Args...>>(jit_detail::key_of(args)...);
    jit_detail::finish_entry(*e, stage.finish(out_leaves), leaves);
    return e;
  }

  F f_;
  std::shared_ptr<jit_detail::Cache> cache_;
};

/// Compiles `f`: traced once per signature (argument types, pytree structure, shapes, dtypes,
/// devices, static values), optimized (inlining, simplification, CSE, DCE, fusion) and run as a
/// cached plan. Composes with every transform: grad(jit(f)), jit(grad(f)), vmap(jit(f)),
/// jit(vmap(f)). `fx::jit(f, fx::cache_size(n))` keeps at most n signatures (default 128).
template <class F> Jitted<F> jit(F f, CacheSize size = {}) { return Jitted<F>(std::move(f), size); }

}  // namespace fluxion
