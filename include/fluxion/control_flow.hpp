/// Differentiable control flow: cond, switch_, while_loop, fori_loop and scan, staged as primitives
/// holding sub-Jaxprs (`cond`, `while`, `scan`) so they work under grad, jvp, vmap and jit, nested.
///
/// Costs worth knowing:
/// - cond/switch_ under vmap with a batched predicate runs every branch on every lane and picks
///   each lane's result with `select`: the cost is the sum of the branches, not the one taken.
/// - while_loop under vmap with a batched predicate runs until the last lane is done; finished
///   lanes are frozen with `select` (the body still runs for them).
/// - Reverse mode through while_loop needs fx::max_steps(n): the loop becomes a scan of n steps
///   that keep the old carry (select) once the predicate fails; it stores residuals of all n steps
///   (memory O(n), time O(n) even if the loop stops early), and the body runs on finished steps.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/jaxpr.hpp"
#include "fluxion/ops.hpp"
#include "fluxion/pytree.hpp"

namespace fluxion {

class Executable;
namespace runtime {
class PlanCache;
}

/// while_loop option: at most `n` iterations; enables reverse mode (lowered to a bounded scan).
struct MaxSteps {
  int64_t n = -1;
};
/// Bounds a while_loop at n iterations, which makes it reverse-differentiable.
inline MaxSteps max_steps(int64_t n) { return MaxSteps{n}; }
/// scan option: iterate from the last slice of xs to the first (ys keep the order of xs).
struct Reverse {};
inline constexpr Reverse reverse{};

/// The primitives: `cond` (index: i32[] or bool[], operands), `while` (cond consts, body consts, carry), `scan`
/// (consts, carry, xs).
const Primitive& cond_p();
const Primitive& while_p();
const Primitive& scan_p();

namespace control_flow_detail {

using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// A sub-Jaxpr of a control-flow primitive (closed over concrete constants only) and its compiled
/// plans (a runtime::PlanCache), shared by every copy of the params.
class SubJaxpr {
 public:
  explicit SubJaxpr(Jaxpr j);
  const Jaxpr& jaxpr() const { return *jaxpr_; }
  const void* id() const { return jaxpr_.get(); }
  /// Runs the compiled plan on concrete args (compiled once per device).
  std::vector<Tensor> run(const std::vector<Tensor>& args) const;
  /// The compiled plan for `device` (compiled on first use, then shared by every copy of the
  /// params): loops take it once and run it per iteration without the lookup.
  std::shared_ptr<const Executable> executable(Device device) const;
  /// Runs equation by equation with the reference kernels.
  std::vector<Tensor> run_reference(const std::vector<Tensor>& args) const;
  void print(std::ostream& os, const char* name) const;

 private:
  std::shared_ptr<const Jaxpr> jaxpr_;
  std::shared_ptr<const runtime::PlanCache> plans_;
};

/// A traced user function: its Jaxpr takes (captured..., inputs...) where `captured` are the
/// tracers of enclosing transforms the function closed over (passed to the primitive as inputs).
struct Closed {
  Jaxpr jaxpr;
  std::vector<Tensor> captured;
};
/// Traces `fn` on fresh inputs of `avals`; a throw leaves no interpreter state behind.
Closed trace_closed(const FlatFn& fn, const std::vector<AbstractValue>& avals, Device device);
/// Gives every Jaxpr the same leading inputs: the union of their captured tracers.
std::vector<Tensor> unify_captured(std::vector<Closed>& fns);
/// Stages `fn` on fresh inputs of `avals` (rules use it to build derived sub-Jaxprs).
Jaxpr trace_jaxpr(const std::vector<AbstractValue>& avals, Device device, const FlatFn& fn);

/// `j` differentiated: inputs (primals..., tangents where nonzero[i]); outputs (primals...,
/// tangents where out_nonzero[k]), with zeros for instantiate[k] tangents that are symbolic zeros.
struct JvpJaxpr {
  Jaxpr jaxpr;
  std::vector<bool> out_nonzero;
};
JvpJaxpr jvp_jaxpr(const Jaxpr& j, const std::vector<bool>& nonzero, const std::vector<bool>& instantiate);
/// Replays `j` under a fresh jvp interpreter named `name` on (primals[i], tangents[i]) pairs
/// (an undefined tangent is a symbolic zero). Returns the output primals and tangents (undefined
/// where symbolically zero).
std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp_eval_jaxpr(const Jaxpr& j, const std::vector<Tensor>& primals,
                                                                   const std::vector<Tensor>& tangents,
                                                                   const char* name);
/// `j` batched: inputs of `avals` batched at dims[i] (or kNotMapped); batched outputs (and those
/// with force[k]) at axis 0, marked in `out_batched`.
struct BatchJaxpr {
  Jaxpr jaxpr;
  std::vector<bool> out_batched;
};
BatchJaxpr batch_jaxpr(const Jaxpr& j, const std::vector<AbstractValue>& avals, const std::vector<int64_t>& dims,
                       int64_t size, const std::vector<bool>& force);
/// `j` transposed in its `linear` inputs: inputs (known inputs..., output cotangents where
/// ct_defined[k]); outputs the cotangents of the linear inputs (zeros where none reach them).
Jaxpr transpose_sub_jaxpr(const Jaxpr& j, const std::vector<bool>& linear, const std::vector<bool>& ct_defined,
                          Device device);
/// `j` with its inputs reordered: input i of the result is input perm[i] of `j`.
Jaxpr permute_inputs(const Jaxpr& j, const std::vector<size_t>& perm);
/// Copies concrete `from` into the kernel's preallocated `to`.
void copy_outputs(const char* op, const std::vector<Tensor>& from, std::vector<Tensor>& to);
std::vector<AbstractValue> avals_of(const std::vector<Tensor>& ts);

/// The flat entry points behind the templates below.
std::vector<Tensor> cond_flat(const char* op, const Tensor& index, const std::vector<FlatFn>& branches,
                              const std::vector<Tensor>& operands);
std::vector<Tensor> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn, const std::vector<Tensor>& init,
                               int64_t max_steps);
/// body: (carry..., x slices...) -> (carry..., y slices...).
std::vector<Tensor> scan_flat(const FlatFn& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs,
                              int64_t length, bool reverse, const char* op = "scan");
/// The index of a cond predicate (rank 0): bool as is, numbers compared with 0.
Tensor predicate_index(const char* op, const Tensor& pred);
/// Leading size shared by every xs leaf.
int64_t scan_length(const std::vector<Tensor>& xs);

template <class T> T rebuild_tree(const T& structure, const std::vector<Tensor>& leaves, size_t& pos) {
  auto it = leaves.cbegin() + static_cast<std::ptrdiff_t>(pos);
  auto start = it;
  T out = PyTree<T>::rebuild(structure, it);
  pos += static_cast<size_t>(it - start);
  return out;
}

/// Throws ShapeError for `op` when two results of a traced function (branches, a loop's carry in
/// and out) hold different static leaves or container sizes: the rebuilt output could take only
/// one of them (JAX's treedef check).
void structure_mismatch(const char* op, const char* what);

template <class Out, class F, class... Ops>
FlatFn branch_fn(const char* op, F f, std::shared_ptr<std::optional<Out>> out_structure, std::tuple<Ops...> ops) {
  return [op, f, out_structure, ops](const std::vector<Tensor>& leaves) {
    size_t pos = 0;
    auto rebuilt =
        std::apply([&](const auto&... o) { return std::tuple<Ops...>{rebuild_tree(o, leaves, pos)...}; }, ops);
    Out out = std::apply(f, rebuilt);
    if (!*out_structure) *out_structure = out;
    else if (!PyTree<Out>::same_structure(**out_structure, out))
      structure_mismatch(op, "the branches return pytrees of different structures");
    return tree_leaves(out);
  };
}

template <class T> Tensor as_i32(const T& v) {
  if constexpr (std::is_integral_v<T>) return scalar<int32_t>(static_cast<int32_t>(v));
  else return astype(Tensor(v), i32);
}

}  // namespace control_flow_detail

/// Runs true_fn(operands...) if `pred` (a rank-0 bool) holds, else false_fn(operands...), as one
/// differentiable, batchable primitive; both branches are traced and must return equal avals.
template <class T, class F, class... Ops> auto cond(const Tensor& pred, T true_fn, F false_fn, const Ops&... operands) {
  using Out = std::decay_t<decltype(true_fn(operands...))>;
  static_assert(std::is_same_v<Out, std::decay_t<decltype(false_fn(operands...))>>,
                "fx::cond: both branches must return the same pytree type");
  auto structure = std::make_shared<std::optional<Out>>();
  auto ops = std::make_tuple(operands...);
  std::vector<Tensor> leaves;
  (PyTree<Ops>::flatten(operands, leaves), ...);
  // Branch 0 is taken for index 0 (false), branch 1 for index 1 (true).
  std::vector<control_flow_detail::FlatFn> branches{
      control_flow_detail::branch_fn<Out>("cond", false_fn, structure, ops),
      control_flow_detail::branch_fn<Out>("cond", true_fn, structure, ops)};
  std::vector<Tensor> outs =
      control_flow_detail::cond_flat("cond", control_flow_detail::predicate_index("cond", pred), branches, leaves);
  auto it = outs.cbegin();
  return PyTree<Out>::rebuild(**structure, it);
}

/// Runs branches[index](operands...) (index clamped to the valid range), as one primitive.
template <class F, class... Ops>
auto switch_(const Tensor& index, const std::vector<F>& branches, const Ops&... operands) {
  using Out = std::decay_t<decltype(branches.at(0)(operands...))>;
  auto structure = std::make_shared<std::optional<Out>>();
  auto ops = std::make_tuple(operands...);
  std::vector<Tensor> leaves;
  (PyTree<Ops>::flatten(operands, leaves), ...);
  std::vector<control_flow_detail::FlatFn> flat;
  for (const F& b : branches) flat.push_back(control_flow_detail::branch_fn<Out>("switch_", b, structure, ops));
  std::vector<Tensor> outs = control_flow_detail::cond_flat("switch_", index, flat, leaves);
  auto it = outs.cbegin();
  return PyTree<Out>::rebuild(**structure, it);
}
/// switch_ with a braced list of branches of one type (e.g. std::function).
template <class F, class... Ops>
auto switch_(const Tensor& index, std::initializer_list<F> branches, const Ops&... operands) {
  return switch_(index, std::vector<F>(branches), operands...);
}

/// Repeats carry = body_fn(carry) while cond_fn(carry) (a rank-0 bool) holds; init is any pytree.
/// Forward mode and vmap always work; reverse mode needs fx::max_steps(n) (at most n iterations).
template <class C, class B, class T> T while_loop(C cond_fn, B body_fn, const T& init, MaxSteps steps = {}) {
  static_assert(std::is_same_v<T, std::decay_t<decltype(body_fn(init))>>,
                "fx::while_loop: body_fn must return the carry's type");
  control_flow_detail::FlatFn c = [cond_fn, init](const std::vector<Tensor>& leaves) {
    size_t pos = 0;
    return std::vector<Tensor>{Tensor(cond_fn(control_flow_detail::rebuild_tree(init, leaves, pos)))};
  };
  control_flow_detail::FlatFn b = [body_fn, init](const std::vector<Tensor>& leaves) {
    size_t pos = 0;
    T next = body_fn(control_flow_detail::rebuild_tree(init, leaves, pos));
    if (!PyTree<T>::same_structure(init, next))
      control_flow_detail::structure_mismatch("while_loop",
                                              "body_fn returns a carry whose structure differs from init's");
    return tree_leaves(next);
  };
  std::vector<Tensor> outs = control_flow_detail::while_flat(c, b, tree_leaves(init), steps.n);
  auto it = outs.cbegin();
  return PyTree<T>::rebuild(init, it);
}

/// Scans f(carry, x) -> std::pair{carry, y} over the leading axis of xs (any pytree); returns
/// std::pair{final carry, ys stacked on axis 0}. fx::reverse scans from the last slice.
template <class F, class C, class X>
auto scan(F f, const C& init, const X& xs, std::optional<Reverse> rev = std::nullopt) {
  using R = std::decay_t<decltype(f(init, xs))>;
  using Y = std::decay_t<typename R::second_type>;
  static_assert(std::is_same_v<C, std::decay_t<typename R::first_type>>,
                "fx::scan: f must return std::pair{carry of the init's type, y}");
  auto ys_structure = std::make_shared<std::optional<Y>>();
  std::vector<Tensor> init_leaves = tree_leaves(init), xs_leaves = tree_leaves(xs);
  control_flow_detail::FlatFn body = [f, init, xs, ys_structure](const std::vector<Tensor>& leaves) {
    size_t pos = 0;
    C c = control_flow_detail::rebuild_tree(init, leaves, pos);
    X x = control_flow_detail::rebuild_tree(xs, leaves, pos);
    R r = f(c, x);
    if (!PyTree<C>::same_structure(init, r.first))
      control_flow_detail::structure_mismatch("scan", "f returns a carry whose structure differs from init's");
    if (!*ys_structure) *ys_structure = r.second;
    std::vector<Tensor> out = tree_leaves(r.first);
    PyTree<Y>::flatten(r.second, out);
    return out;
  };
  std::vector<Tensor> outs = control_flow_detail::scan_flat(
      body, init_leaves, xs_leaves, control_flow_detail::scan_length(xs_leaves), rev.has_value());
  auto it = outs.cbegin();
  C carry = PyTree<C>::rebuild(init, it);
  Y ys = PyTree<Y>::rebuild(**ys_structure, it);
  return std::pair<C, Y>{std::move(carry), std::move(ys)};
}

/// carry = body_fn(i, carry) for i in [lower, upper) (i an i32 scalar). Static int bounds lower to
/// scan (reverse mode works); Tensor bounds lower to while_loop (forward mode and vmap only).
template <class L, class U, class B, class T> T fori_loop(const L& lower, const U& upper, B body_fn, const T& init) {
  if constexpr (std::is_integral_v<L> && std::is_integral_v<U>) {
    int64_t lo = static_cast<int64_t>(lower), n = std::max<int64_t>(0, static_cast<int64_t>(upper) - lo);
    Tensor is = arange(lo, lo + n, 1, i32);
    auto step = [body_fn](const T& carry, const Tensor& i) {
      return std::pair<T, std::tuple<>>{body_fn(i, carry), std::tuple<>{}};
    };
    return scan(step, init, is).first;
  } else {
    Tensor lo = control_flow_detail::as_i32(lower), hi = control_flow_detail::as_i32(upper);
    auto state = std::make_pair(lo, init);
    auto c = [hi](const std::pair<Tensor, T>& s) { return s.first < hi; };
    auto b = [body_fn](const std::pair<Tensor, T>& s) {
      return std::pair<Tensor, T>{s.first + 1, body_fn(s.first, s.second)};
    };
    return while_loop(c, b, state).second;
  }
}

}  // namespace fluxion
