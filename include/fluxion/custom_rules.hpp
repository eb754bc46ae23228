/// Custom derivative rules and implicit differentiation: custom_jvp, custom_vjp and custom_root.
///
/// A function wrapped by custom_jvp / custom_vjp runs as a plain call when no transform is
/// active. Under any transform it is traced once per call into a sub-Jaxpr and bound as one
/// primitive (`custom_jvp_call`, `custom_vjp_call`) that carries the user's rule:
/// - jvp / grad / vjp / hessian use the rule instead of differentiating the function's body;
/// - vmap batches the function *and* the rule (the rule runs once on the whole batch);
/// - jit stages it as one equation (inlined only when the plan is executed).
/// custom_vjp under forward mode (jvp, jacfwd, the forward pass of hessian) works too: the
/// output tangent is bwd transposed (bwd must be linear in its cotangent, as a vjp is).
/// The wrapped function, the rule, fwd and bwd must not close over values that are being
/// differentiated or batched: pass those as arguments (a closure is refused with an Error).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/control_flow.hpp"
#include "fluxion/interpreter.hpp"
#include "fluxion/transforms.hpp"

namespace fluxion {

/// custom_jvp_call (args) -> outputs, custom_vjp_call (args) -> outputs, and custom_lin
/// (residuals, nonzero argument tangents) -> output tangents: the tangent of a custom_vjp output,
/// whose transpose is the user's bwd.
const Primitive& custom_jvp_call_p();
const Primitive& custom_vjp_call_p();
const Primitive& custom_lin_p();

namespace custom_detail {

using control_flow_detail::FlatFn;
/// rule(primals, tangents) -> (outputs..., output tangents...), flat.
using FlatJvpRule = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const std::vector<Tensor>&)>;

/// True when no transform is active on this thread: custom functions run as plain calls.
bool eager();
/// The flat entry points behind the templates below.
std::vector<Tensor> custom_jvp_flat(const FlatFn& f, const FlatJvpRule& rule, const std::vector<Tensor>& args);
/// fwd(args) -> (outputs..., residuals...); bwd(residuals..., output cotangents...) -> one
/// cotangent per argument leaf.
std::vector<Tensor> custom_vjp_flat(const FlatFn& f, const FlatFn& fwd, const FlatFn& bwd,
                                    const std::vector<Tensor>& args);
/// Binds custom_lin directly: the output tangents (avals `out_avals`) given `residuals` and the
/// tangents of arguments of avals `arg_avals` (undefined tangents are zero), with bwd as above.
std::vector<Tensor> custom_lin_flat(const FlatFn& bwd, const std::vector<Tensor>& residuals,
                                    const std::vector<Tensor>& tangents, const std::vector<AbstractValue>& arg_avals,
                                    const std::vector<AbstractValue>& out_avals);

template <class... Args> std::vector<Tensor> flatten_args(const std::tuple<Args...>& args) {
  std::vector<Tensor> leaves;
  PyTree<std::tuple<Args...>>::flatten(args, leaves);
  return leaves;
}

/// A FlatFn calling f(args...) rebuilt in the structure of `shape`; the output's structure is
/// recorded in `out` on the first call.
template <class Out, class F, class Tuple> FlatFn flat_call(F f, Tuple shape, std::shared_ptr<std::optional<Out>> out) {
  return [f, shape, out](const std::vector<Tensor>& leaves) {
    size_t pos = 0;
    Tuple args = control_flow_detail::rebuild_tree(shape, leaves, pos);
    Out result = std::apply(f, args);
    if (!*out) out->emplace(result);
    return tree_leaves(result);
  };
}

/// A value type for what fwd returns: references in tuples and pairs (std::tie,
/// std::forward_as_tuple, std::make_pair of std::ref) become the values they refer to, so that the
/// residuals outlive fwd's call. Other types are kept as they are.
template <class T> struct Stored { using type = T; };
template <class T> using stored_t = typename Stored<std::decay_t<T>>::type;
template <class... T> struct Stored<std::tuple<T...>> { using type = std::tuple<stored_t<T>...>; };
template <class A, class B> struct Stored<std::pair<A, B>> { using type = std::pair<stored_t<A>, stored_t<B>>; };

/// fwd's result: std::pair{output, residuals} or, as in JAX, std::tuple{output, residuals}.
template <class R> struct FwdResult {
  static constexpr bool ok = false;
  using Out = void;
  using Res = std::tuple<>;
};
template <class O, class R> struct FwdResult<std::pair<O, R>> {
  static constexpr bool ok = true;
  using Out = stored_t<O>;
  using Res = stored_t<R>;
};
template <class O, class R> struct FwdResult<std::tuple<O, R>> : FwdResult<std::pair<O, R>> {};

template <class Out>
Out rebuild_output(const std::shared_ptr<std::optional<Out>>& structure, const std::vector<Tensor>& leaves) {
  auto it = leaves.cbegin();
  return PyTree<Out>::rebuild(**structure, it);
}

}  // namespace custom_detail

/// A function with a user-defined jvp rule (see custom_jvp).
template <class F, class Rule> class CustomJvp {
 public:
  CustomJvp(F f, Rule rule) : f_(std::move(f)), rule_(std::move(rule)) {}

  template <class... Args> auto operator()(const Args&... args) const {
    static_assert((is_pytree_v<Args> && ...), "fx::custom_jvp: every argument must be a Tensor or pytree of Tensors");
    using Out = std::decay_t<decltype(f_(args...))>;
    using Tuple = std::tuple<Args...>;
    if (custom_detail::eager()) return Out(f_(args...));
    Tuple shape(args...);
    auto structure = std::make_shared<std::optional<Out>>();
    Rule rule = rule_;
    custom_detail::FlatJvpRule flat_rule = [rule, shape](const std::vector<Tensor>& p, const std::vector<Tensor>& t) {
      size_t pp = 0, tp = 0;
      Tuple primals = control_flow_detail::rebuild_tree(shape, p, pp);
      Tuple tangents = control_flow_detail::rebuild_tree(shape, t, tp);
      auto r = rule(primals, tangents);
      static_assert(
          std::is_same_v<std::decay_t<decltype(r.first)>, Out> && std::is_same_v<std::decay_t<decltype(r.second)>, Out>,
          "fx::custom_jvp: the rule must return std::pair{output, output tangent}, both of f's output type");
      std::vector<Tensor> out = tree_leaves(r.first);
      PyTree<Out>::flatten(r.second, out);
      return out;
    };
    std::vector<Tensor> outs = custom_detail::custom_jvp_flat(custom_detail::flat_call<Out>(f_, shape, structure),
                                                              flat_rule, custom_detail::flatten_args(shape));
    return custom_detail::rebuild_output(structure, outs);
  }

 private:
  F f_;
  Rule rule_;
};

/// `f` with the jvp rule `rule(primals, tangents) -> std::pair{output, output tangent}`, where
/// primals and tangents are std::tuple of f's arguments (tangents of integer leaves are zeros).
/// The output tangent must be linear in the tangents (reverse mode transposes it).
template <class F, class Rule> CustomJvp<F, Rule> custom_jvp(F f, Rule rule) {
  return CustomJvp<F, Rule>(std::move(f), std::move(rule));
}

/// A function with a user-defined vjp (see custom_vjp).
template <class F, class Fwd, class Bwd> class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd) : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)) {}

  template <class... Args> auto operator()(const Args&... args) const {
    static_assert((is_pytree_v<Args> && ...), "fx::custom_vjp: every argument must be a Tensor or pytree of Tensors");
    using Out = std::decay_t<decltype(f_(args...))>;
    using Fwd_ = custom_detail::FwdResult<std::decay_t<decltype(fwd_(args...))>>;
    static_assert(Fwd_::ok,
                  "fx::custom_vjp: fwd must return std::pair{output, residuals} (or a std::tuple of the two)");
    static_assert(std::is_same_v<typename Fwd_::Out, Out>,
                  "fx::custom_vjp: the output fwd returns must have the type of f's output");
    using Res = typename Fwd_::Res;  // deduced: any pytree, static leaves included
    using Tuple = std::tuple<Args...>;
    if (custom_detail::eager()) return Out(f_(args...));
    Tuple shape(args...);
    auto out_structure = std::make_shared<std::optional<Out>>();
    auto res_structure = std::make_shared<std::optional<Res>>();
    Fwd fwd = fwd_;
    Bwd bwd = bwd_;
    custom_detail::FlatFn flat_fwd = [fwd, shape, out_structure, res_structure](const std::vector<Tensor>& leaves) {
      size_t pos = 0;
      const Tuple primals = control_flow_detail::rebuild_tree(shape, leaves, pos);  // residuals may refer to it
      auto r = std::apply(fwd, primals);
      Out out = std::get<0>(r);
      Res res = std::get<1>(r);
      if (!*out_structure) out_structure->emplace(out);
      if (!*res_structure) res_structure->emplace(res);
      std::vector<Tensor> flat = tree_leaves(out);
      PyTree<Res>::flatten(res, flat);
      return flat;
    };
    custom_detail::FlatFn flat_bwd = [bwd, out_structure, res_structure](const std::vector<Tensor>& leaves) {
      size_t pos = 0;
      const Res res = control_flow_detail::rebuild_tree(**res_structure, leaves, pos);
      const Out ct = control_flow_detail::rebuild_tree(**out_structure, leaves, pos);
      return tree_leaves(bwd(res, ct));
    };
    std::vector<Tensor> outs = custom_detail::custom_vjp_flat(custom_detail::flat_call<Out>(f_, shape, out_structure),
                                                              flat_fwd, flat_bwd, custom_detail::flatten_args(shape));
    return custom_detail::rebuild_output(out_structure, outs);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
};

/// `f` with a user-defined vjp: `fwd(args...) -> std::pair{output, residuals}` (or a std::tuple of
/// the two) and `bwd(residuals, output cotangent) -> cotangents` (a std::tuple with one entry per
/// argument, or the argument itself for one argument). bwd must be linear in the cotangent. The
/// residuals are any pytree, their type deduced (`std::pair{y, std::tuple{x, c}}`): tensors, tuples,
/// pairs, vectors, maps, Hana structs, nested, with static members (ints...) passed through as they
/// are; bwd receives them with that type (references, as from std::tie, become values).
template <class F, class Fwd, class Bwd> CustomVjp<F, Fwd, Bwd> custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return CustomVjp<F, Fwd, Bwd>(std::move(f), std::move(fwd), std::move(bwd));
}

/// The root x of residual(x, theta) = 0 found by `solver(x0, theta)` (any method: Newton in a
/// while_loop, a fixed-point iteration...), differentiated by the implicit function theorem:
/// dx = -(d residual/dx)^-1 (d residual/d theta) dtheta at the root, never through the solver's
/// iterations. x is a Tensor of any shape (residual returns its shape); theta any pytree. The
/// Jacobian in x is formed densely (n forward passes) and solved once per derivative evaluation.
template <class R, class S, class Theta>
Tensor custom_root(R residual, S solver, const Tensor& x0, const Theta& theta) {
  auto root = custom_jvp(
      [solver](const Tensor& x_init, const Theta& th) { return Tensor(solver(x_init, th)); },
      [residual, solver](const std::tuple<Tensor, Theta>& primals, const std::tuple<Tensor, Theta>& tangents) {
        const Tensor& x_init = std::get<0>(primals);
        const Theta& th = std::get<1>(primals);
        // The root again, so that transforms enclosing this one also differentiate implicitly.
        Tensor x = custom_root(residual, solver, x_init, th);
        const int64_t n = x.size();
        Tensor r0 = residual(x, th);
        if (r0.shape() != x.shape())
          detail::fail<ShapeError>("custom_root", "residual(x, theta) returned ", r0.aval(), " for x of ", x.aval(),
                                   ". The residual must have x's shape (one equation per unknown).");
        Tensor jac = jacfwd([&](const Tensor& xx) { return reshape(Tensor(residual(xx, th)), {n}); })(x);
        Tensor rhs = jvp([&](const Theta& t) { return reshape(Tensor(residual(x, t)), {n}); }, std::make_tuple(th),
                         std::make_tuple(std::get<1>(tangents)))
                         .second;
        Tensor dx = reshape(-fluxion::solve(reshape(jac, {n, n}), rhs), x.shape().dims());
        return std::pair<Tensor, Tensor>{x, dx};
      });
  return root(x0, theta);
}

}  // namespace fluxion
