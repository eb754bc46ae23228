/// jit: stage a function once per signature, optimize it, and run the cached plan.
#pragma once
#include <atomic>
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
/// jit'd function transform the sub-Jaxpr (derived Jaxprs and the compiled plan are cached here).
class JitCallParams final : public Params {
 public:
  JitCallParams(std::shared_ptr<const Jaxpr> jaxpr, std::string name);
  const Jaxpr& jaxpr() const { return *jaxpr_; }
  const std::shared_ptr<const Jaxpr>& jaxpr_ptr() const { return jaxpr_; }
  const std::string& name() const { return name_; }
  /// The executable plan for `device`, compiled on first use (thread-safe).
  std::shared_ptr<const Executable> executable(Device device) const;
  /// Per-transform caches of derived Jaxprs (jvp, batching, transpose, partial eval).
  struct Caches;
  Caches& caches() const { return *caches_; }

  void print(std::ostream& os) const override;
  bool equals(const Params& other) const override;
  size_t hash() const override;
  std::shared_ptr<const Params> clone() const override;

 private:
  std::shared_ptr<const Jaxpr> jaxpr_;
  std::string name_;
  std::shared_ptr<Caches> caches_;
};

/// The primitive that calls a jit-compiled sub-Jaxpr (what jit looks like to outer transforms).
const Primitive& jit_call_p();

namespace jit_detail {

/// One compiled signature of a jit'd function.
struct Entry {
  explicit Entry(std::type_index t) : type(t) {}
  std::type_index type;                          // the C++ argument types
  std::vector<AbstractValue> avals;              // of the dynamic leaves
  std::vector<Device> devices;
  std::shared_ptr<const void> statics;           // tuple of the static arguments
  std::shared_ptr<const void> out_structure;     // the output pytree (leaves are placeholders)
  std::shared_ptr<const JitCallParams> call;     // the optimized Jaxpr and its plan
  std::vector<Tensor> leading_args;              // closed-over tracers passed first (uncached)
  mutable std::atomic<const Executable*> cpu_plan{nullptr};  // call->executable(cpu), once known
};

/// The cache of one jit object: entries keyed on argument types, avals, devices and statics.
/// Entries stay in `entries` for the cache's lifetime; `last` (the latest call's entry) is
/// matched first without the mutex: locking it and copying the entry's shared_ptr were four
/// atomic read-modify-writes per call (a third of a tiny call once the process has threads).
struct Cache {
  std::mutex mutex;
  std::vector<std::shared_ptr<const Entry>> entries;
  std::atomic<const Entry*> last{nullptr};
};

/// True when `e` was traced for leaves with exactly these avals and devices.
bool leaves_match(const Entry& e, const std::vector<Tensor>& leaves);
/// Optimizes a freshly traced Jaxpr into an entry's call; tracer constants (values closed over
/// from an enclosing transform) become leading arguments, and then the entry is not cacheable.
void finish_entry(Entry& e, Jaxpr traced, const std::vector<Tensor>& leaves);
/// Runs the entry on `leaves`: the plan when everything is concrete, else binds jit_call so the
/// enclosing transform sees one primitive. Fills `outs`. The plan takes the leaves over (they are
/// left empty): no reference-count traffic per argument.
void run_entry(const Entry& e, std::vector<Tensor>& leaves, std::vector<Tensor>& outs);
/// Thread-local scratch vectors (arguments' leaves, results) reused across calls, so steady-state
/// calls allocate nothing. Nested calls take the next pair.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::vector<Tensor>& leaves() { return pair_->first; }
  std::vector<Tensor>& outs() { return pair_->second; }

 private:
  std::pair<std::vector<Tensor>, std::vector<Tensor>>* pair_;
  size_t* depth_;
};

/// Placeholder for a dynamic argument in the tuple of static arguments.
struct Dynamic {
  bool operator==(const Dynamic&) const { return true; }
};
template <class T> using StaticSlot = std::conditional_t<is_pytree_v<T>, Dynamic, T>;

template <class T, class = void> struct has_equal : std::false_type {};
template <class T>
struct has_equal<T, std::void_t<decltype(std::declval<const T&>() == std::declval<const T&>())>> : std::true_type {};

template <class... Args, size_t... I>
bool statics_equal(const void* stored, std::index_sequence<I...>, const Args&... args) {
  const auto& t = *static_cast<const std::tuple<StaticSlot<Args>...>*>(stored);
  auto one = [](const auto& s, const auto& a) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (is_pytree_v<A>) return true;
    else return static_cast<bool>(s == a);
  };
  return (one(std::get<I>(t), args) && ...);
}

template <class Arg>
void flatten_dynamic(const Arg& a, std::vector<Tensor>& leaves) {
  if constexpr (is_pytree_v<Arg>) PyTree<Arg>::flatten(a, leaves);
}

template <class Arg>
Arg traced_argument(StageInterpreter& st, const Arg& a) {
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
/// other arguments are static (part of the cache key, compared with ==).
template <class F>
class Jitted {
 public:
  explicit Jitted(F f) : f_(std::move(f)), cache_(std::make_shared<jit_detail::Cache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Out = std::decay_t<decltype(f_(args...))>;
    static_assert(is_pytree_v<Out>, "fx::jit: the function must return a Tensor or a pytree of Tensors");
    static_assert((jit_detail::has_equal<jit_detail::StaticSlot<Args>>::value && ...),
                  "fx::jit: static (non-Tensor) arguments must be comparable with ==");
    jit_detail::Scratch scratch;
    std::vector<Tensor>& leaves = scratch.leaves();
    (jit_detail::flatten_dynamic(args, leaves), ...);
    const std::type_index type(typeid(std::tuple<Args...>));
    auto matches = [&](const jit_detail::Entry& e) {
      return e.type == type && jit_detail::leaves_match(e, leaves) &&
             jit_detail::statics_equal<Args...>(e.statics.get(), std::index_sequence_for<Args...>{}, args...);
    };
    // Cached entries live as long as the cache (raw pointers to them stay valid); a fresh trace
    // is held here too, as one closing over an outer transform's values is not cached.
    std::shared_ptr<const jit_detail::Entry> traced;
    const jit_detail::Entry* entry = cache_->last.load(std::memory_order_acquire);
    if (!entry || !matches(*entry)) {
      entry = nullptr;
      {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        for (const auto& e : cache_->entries)
          if (matches(*e)) {
            entry = e.get();
            break;
          }
      }
      if (!entry) {
        traced = trace<Out>(type, leaves, args...);
        entry = traced.get();
      }
      if (entry->leading_args.empty()) cache_->last.store(entry, std::memory_order_release);
    }
    std::vector<Tensor>& outs = scratch.outs();
    jit_detail::run_entry(*entry, leaves, outs);
    auto it = std::make_move_iterator(outs.begin());  // the results move out (no count updates)
    return PyTree<Out>::rebuild(*static_cast<const Out*>(entry->out_structure.get()), it);
  }

  /// Number of compiled signatures (tests check caching with it).
  size_t cache_size() const {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    return cache_->entries.size();
  }

 private:
  // Traces f on abstract versions of the arguments; a throw leaves the cache untouched.
  template <class Out, class... Args>
  std::shared_ptr<const jit_detail::Entry> trace(std::type_index type, const std::vector<Tensor>& leaves,
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
    e->statics = std::make_shared<std::tuple<jit_detail::StaticSlot<Args>...>>(
        [](const auto& a) -> jit_detail::StaticSlot<std::decay_t<decltype(a)>> {
          if constexpr (is_pytree_v<std::decay_t<decltype(a)>>) return jit_detail::Dynamic{};
          else return a;
        }(args)...);
    jit_detail::finish_entry(*e, stage.finish(out_leaves), leaves);
    if (!e->leading_args.empty()) return e;  // closes over an outer transform's values: not reusable
    std::lock_guard<std::mutex> lock(cache_->mutex);
    cache_->entries.push_back(e);
    return e;
  }

  F f_;
  std::shared_ptr<jit_detail::Cache> cache_;
};

/// Compiles `f`: traced once per signature (argument types, shapes, dtypes, devices, static
/// values), optimized (inlining, simplification, CSE, DCE, fusion) and run as a cached plan.
/// Composes with every transform: grad(jit(f)), jit(grad(f)), vmap(jit(f)), jit(vmap(f)).
template <class F>
Jitted<F> jit(F f) {
  return Jitted<F>(std::move(f));
}

}  // namespace fluxion
