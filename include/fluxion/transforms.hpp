/// The transforms: grad, value_and_grad, jvp, vjp, linearize, vmap, jacfwd, jacrev, jacobian,
/// hessian, hvp. Each returns a callable (or a result) and composes with the others to any depth.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/jaxpr.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/pytree.hpp"
#include "transforms/batching.hpp"
#include "transforms/jvp.hpp"
#include "transforms/transpose.hpp"

namespace fluxion {

/// grad's option selecting the differentiated arguments: fx::argnums<0, 2>.
template <int... I> struct Argnums {
  static constexpr std::array<int, sizeof...(I)> values{I...};
};
template <int... I> inline constexpr Argnums<I...> argnums{};
/// grad's option: the function returns std::pair{scalar, aux}; aux is passed through.
struct HasAux {};
inline constexpr HasAux has_aux{};

namespace transform_detail {

/// Result of linearizing a flat function: primal outputs and the linear Jaxpr from input
/// tangents to output tangents (known values are its constants: the residuals).
struct Linearized {
  std::vector<Tensor> primals_out;
  std::shared_ptr<const Jaxpr> linear;
};

/// Linearizes `body` (traced inputs -> outputs) at `primals`: jvp with the primals computed by the
/// parent interpreter and the tangents staged (partial evaluation).
template <class Body>
Linearized linearize_flat(const char* transform, const std::vector<Tensor>& primals, Body&& body) {
  StageInterpreter pe(transform, /*forward_known=*/true);
  std::vector<Tensor> tangents_in;
  tangents_in.reserve(primals.size());
  for (const Tensor& p : primals) tangents_in.push_back(pe.new_input(p.aval(), p.device()));
  Linearized result;
  std::vector<Tensor> tangents_out;
  {
    InterpreterScope pe_scope(pe);
    JvpInterpreter jvp(transform);
    std::vector<Tensor> traced;
    traced.reserve(primals.size());
    // Integer and boolean inputs have no tangent (symbolic zero).
    for (size_t i = 0; i < primals.size(); ++i)
      traced.push_back(jvp.lift(primals[i], is_floating(primals[i].dtype()) ? tangents_in[i] : Tensor()));
    std::vector<Tensor> outs;
    {
      InterpreterScope jvp_scope(jvp);
      outs = body(traced);
    }
    for (const Tensor& o : outs) {
      auto [p, t] = jvp.split(o);
      result.primals_out.push_back(p);
      tangents_out.push_back(t.defined() ? t : zeros(p.shape(), p.dtype()));
    }
  }
  result.linear = std::make_shared<const Jaxpr>(pe.finish(tangents_out));
  return result;
}

template <class T> inline constexpr bool is_tuple_v = false;
template <class... T> inline constexpr bool is_tuple_v<std::tuple<T...>> = true;

/// Checks grad's output is a floating scalar.
void check_scalar_output(const char* transform, const std::vector<Tensor>& outs);
/// Checks a differentiated input is floating point.
void check_float_input(const char* transform, size_t argnum, const Tensor& leaf);
/// A tensor of ones shaped like `t` (grad's seed).
Tensor ones_like_value(const Tensor& t);

/// Flattens the selected arguments' leaves; returns (leaves, counts per selected argument).
template <size_t N, class Tuple>
std::vector<Tensor> selected_leaves(const std::array<int, N>& nums, const Tuple& args,
                                    std::array<size_t, N>& counts, const char* transform) {
  std::vector<Tensor> leaves;
  for (size_t k = 0; k < N; ++k) {
    size_t before = leaves.size();
    bool found = false;
    std::apply([&](const auto&... a) {
      int i = 0;
      auto visit = [&](const auto& arg) {
        if (i++ != nums[k]) return;
        found = true;
        using A = std::decay_t<decltype(arg)>;
        if constexpr (is_pytree_v<A>) {
          PyTree<A>::flatten(arg, leaves);
        } else {
          detail::fail<Error>(transform, "argument ", nums[k], " is static (not a Tensor or pytree of ",
                              "Tensors) and cannot be differentiated. Pass it as a Tensor or remove it from argnums.");
        }
      };
      (visit(a), ...);
    }, args);
    if (!found)
      detail::fail<Error>(transform, "argnums ", nums[k], " is out of range for a function called with ",
                          std::tuple_size_v<Tuple>, " argument(s). Use argnums in [0, ", std::tuple_size_v<Tuple>, ").");
    counts[k] = leaves.size() - before;
    for (size_t i = before; i < leaves.size(); ++i) check_float_input(transform, static_cast<size_t>(nums[k]), leaves[i]);
  }
  return leaves;
}

/// A copy of `args` whose selected arguments take their leaves from `leaves` (in order).
template <size_t N, class Tuple>
Tuple replace_selected(const std::array<int, N>& nums, const Tuple& args, const std::vector<Tensor>& leaves) {
  auto it = leaves.cbegin();
  Tuple out = args;
  for (size_t k = 0; k < N; ++k) {
    int i = 0;
    std::apply([&](auto&... a) {
      auto visit = [&](auto& arg) {
        if (i++ != nums[k]) return;
        using A = std::decay_t<decltype(arg)>;
        if constexpr (is_pytree_v<A>) arg = PyTree<A>::rebuild(arg, it);
      };
      (visit(a), ...);
    }, out);
  }
  return out;
}

/// The selected arguments rebuilt from `leaves`: one value for one argnum, a tuple for several.
template <int... I, class Tuple>
auto rebuild_selected(Argnums<I...>, const Tuple& args, const std::vector<Tensor>& leaves) {
  auto it = leaves.cbegin();
  auto one = [&](auto index) {
    using A = std::decay_t<std::tuple_element_t<decltype(index)::value, Tuple>>;
    return PyTree<A>::rebuild(std::get<decltype(index)::value>(args), it);
  };
  if constexpr (sizeof...(I) == 1) {
    return one(std::integral_constant<size_t, static_cast<size_t>(I)>{}...);
  } else {
    return std::tuple<std::decay_t<std::tuple_element_t<static_cast<size_t>(I), Tuple>>...>{
        one(std::integral_constant<size_t, static_cast<size_t>(I)>{})...};
  }
}

/// The aux type of a has_aux function's std::pair{value, aux} result (int when there is none).
template <bool Aux, class Ret> struct AuxType { using type = int; };
template <class Ret> struct AuxType<true, Ret> { using type = std::decay_t<decltype(std::declval<Ret>().second)>; };

/// Shared body of grad and value_and_grad.
template <bool WithValue, class F, int... I, bool Aux, class... Args>
auto value_and_grad_impl(const char* transform, const F& f, Argnums<I...> nums, std::bool_constant<Aux>,
                         const Args&... args) {
  // Out-of-range argnums are reported at run time (like JAX) rather than as a template error.
  constexpr int kMax = std::max({0, I...});
  if constexpr (kMax >= static_cast<int>(sizeof...(Args))) {
    detail::fail<Error>(transform, "argnums ", kMax, " is out of range for a function called with ",
                        sizeof...(Args), " argument(s). Use argnums in [0, ", sizeof...(Args), ").");
  } else {
  auto arg_tuple = std::make_tuple(args...);
  using Ret = decltype(f(args...));
  using Aux_t = typename AuxType<Aux, Ret>::type;
  std::array<size_t, sizeof...(I)> counts{};
  std::vector<Tensor> leaves = selected_leaves(Argnums<I...>::values, arg_tuple, counts, transform);
  std::optional<Aux_t> aux_structure;
  size_t aux_leaves = 0;
  Linearized lin = linearize_flat(transform, leaves, [&](const std::vector<Tensor>& traced) {
    auto call_args = replace_selected(Argnums<I...>::values, arg_tuple, traced);
    std::vector<Tensor> outs;
    if constexpr (Aux) {
      auto r = std::apply(f, call_args);
      outs.push_back(Tensor(r.first));
      aux_structure.emplace(r.second);
      PyTree<Aux_t>::flatten(r.second, outs);
      aux_leaves = outs.size() - 1;
    } else {
      outs.push_back(Tensor(std::apply(f, call_args)));
    }
    return outs;
  });
  check_scalar_output(transform, {lin.primals_out[0]});
  std::vector<Tensor> cts(lin.linear->outputs.size());
  cts[0] = ones_like_value(lin.primals_out[0]);
  std::vector<Tensor> grads = transpose_jaxpr(*lin.linear, cts, transform);
  auto g = rebuild_selected(nums, arg_tuple, grads);
  if constexpr (Aux) {
    std::vector<Tensor> aux_values(lin.primals_out.begin() + 1, lin.primals_out.end());
    auto it = aux_values.cbegin();
    Aux_t aux = PyTree<Aux_t>::rebuild(*aux_structure, it);
    if constexpr (WithValue) return std::make_pair(std::make_pair(lin.primals_out[0], aux), g);
    else return std::make_pair(g, aux);
  } else {
    if constexpr (WithValue) return std::make_pair(lin.primals_out[0], g);
    else return g;
  }
  }
}

/// Option parsing for grad/value_and_grad: any order of fx::argnums<...> and fx::has_aux.
template <class... Opts> struct GradOptions {
  using Nums = Argnums<0>;
  static constexpr bool aux = false;
};
template <int... I, class... Rest> struct GradOptions<Argnums<I...>, Rest...> : GradOptions<Rest...> {
  using Nums = Argnums<I...>;
};
template <class... Rest> struct GradOptions<HasAux, Rest...> : GradOptions<Rest...> {
  static constexpr bool aux = true;
};
template <int... I> struct GradOptions<Argnums<I...>, HasAux> {
  using Nums = Argnums<I...>;
  static constexpr bool aux = true;
};
template <int... I> struct GradOptions<HasAux, Argnums<I...>> : GradOptions<Argnums<I...>, HasAux> {};

}  // namespace transform_detail

/// d f / d (selected arguments); f returns a floating scalar. Options: fx::argnums<...>, fx::has_aux.
/// One argnum gives a gradient of that argument's type; several give a std::tuple.
template <class F, class... Opts>
auto grad(F f, Opts...) {
  using O = transform_detail::GradOptions<Opts...>;
  return [f](const auto&... args) {
    return transform_detail::value_and_grad_impl<false>("grad", f, typename O::Nums{},
                                                        std::bool_constant<O::aux>{}, args...);
  };
}

/// std::pair{value, grad} (with has_aux: std::pair{std::pair{value, aux}, grad}).
template <class F, class... Opts>
auto value_and_grad(F f, Opts...) {
  using O = transform_detail::GradOptions<Opts...>;
  return [f](const auto&... args) {
    return transform_detail::value_and_grad_impl<true>("value_and_grad", f, typename O::Nums{},
                                                       std::bool_constant<O::aux>{}, args...);
  };
}

/// Forward mode: std::pair{f(primals...), J·tangents}. Tangents have the primals' structure,
/// shapes and dtypes.
template <class F, class... P, class... T>
auto jvp(F f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) == sizeof...(T), "fx::jvp: pass one tangent per primal");
  std::vector<Tensor> pl = tree_leaves(primals), tl = tree_leaves(tangents);
  if (pl.size() != tl.size())
    detail::fail<Error>("jvp", "primals have ", pl.size(), " tensors but tangents have ", tl.size(),
                        ". Give tangents the structure of the primals.");
  for (size_t i = 0; i < pl.size(); ++i)
    if (pl[i].aval() != tl[i].aval())
      detail::fail<ShapeError>("jvp", "tangent ", i, " is ", tl[i].aval(), " but its primal is ", pl[i].aval(),
                               ". Tangents must match the primals' shapes and dtypes.");
  JvpInterpreter interp("jvp");
  std::vector<Tensor> lifted;
  for (size_t i = 0; i < pl.size(); ++i) lifted.push_back(interp.lift(pl[i], is_floating(pl[i].dtype()) ? tl[i] : Tensor()));
  auto it = lifted.cbegin();
  auto args = PyTree<std::tuple<P...>>::rebuild(primals, it);
  using Out = std::decay_t<decltype(std::apply(f, args))>;
  std::optional<Out> out;
  {
    InterpreterScope scope(interp);
    out.emplace(std::apply(f, args));
  }
  std::vector<Tensor> ol = tree_leaves(*out), po, to;
  for (const Tensor& o : ol) {
    auto [p, t] = interp.split(o);
    po.push_back(p);
    to.push_back(t.defined() ? t : zeros(p.shape(), p.dtype()));
  }
  auto pi = po.cbegin(), ti = to.cbegin();
  Out primal_out = PyTree<Out>::rebuild(*out, pi);
  Out tangent_out = PyTree<Out>::rebuild(*out, ti);
  return std::make_pair(primal_out, tangent_out);
}

/// jvp of a one-argument function: std::pair{f(x), J·t}.
template <class F>
auto jvp(F f, const Tensor& x, const Tensor& t) {
  return jvp([&f](const Tensor& a) { return f(a); }, std::make_tuple(x), std::make_tuple(t));
}

namespace transform_detail {
/// f linearized at args (all pytrees): its output y (f's own structure) and the linear Jaxpr.
template <class F, class... Args>
auto linearize_args(const char* transform, const F& f, const std::tuple<Args...>& arg_tuple) {
  std::vector<Tensor> leaves = tree_leaves(arg_tuple);
  using Out = std::decay_t<decltype(std::apply(f, arg_tuple))>;
  std::optional<Out> out_structure;
  Linearized lin = linearize_flat(transform, leaves, [&](const std::vector<Tensor>& traced) {
    auto it = traced.cbegin();
    auto call = PyTree<std::tuple<Args...>>::rebuild(arg_tuple, it);
    out_structure.emplace(std::apply(f, call));
    return tree_leaves(*out_structure);
  });
  auto oi = lin.primals_out.cbegin();
  Out y = PyTree<Out>::rebuild(*out_structure, oi);
  return std::make_pair(std::move(y), lin.linear);
}
}  // namespace transform_detail

/// Reverse mode: std::pair{f(args...), pullback}; pullback(ct) returns a std::tuple with one
/// cotangent per argument and can be called many times.
template <class F, class... Args>
auto vjp(F f, const Args&... args) {
  static_assert((is_pytree_v<Args> && ...), "fx::vjp: every argument must be a Tensor or pytree of Tensors");
  auto arg_tuple = std::make_tuple(args...);
  std::vector<Tensor> leaves = tree_leaves(arg_tuple);
  for (size_t i = 0; i < leaves.size(); ++i) transform_detail::check_float_input("vjp", i, leaves[i]);
  auto [y, linear] = transform_detail::linearize_args("vjp", f, arg_tuple);
  using Out = std::decay_t<decltype(y)>;
  auto pullback = [linear = linear, arg_tuple](const Out& ct) {
    std::vector<Tensor> cts = tree_leaves(ct);
    if (cts.size() != linear->outputs.size())
      detail::fail<Error>("vjp", "the cotangent has ", cts.size(), " tensors but the output has ",
                          linear->outputs.size(), ". Pass a cotangent with the output's structure.");
    std::vector<Tensor> grads = transpose_jaxpr(*linear, cts, "vjp");
    auto gi = grads.cbegin();
    return PyTree<decltype(arg_tuple)>::rebuild(arg_tuple, gi);
  };
  return std::make_pair(y, pullback);
}

/// std::pair{f(args...), f_lin} with f_lin(tangents...) = J·t, reusable.
template <class F, class... Args>
auto linearize(F f, const Args&... args) {
  static_assert((is_pytree_v<Args> && ...), "fx::linearize: every argument must be a Tensor or pytree of Tensors");
  auto arg_tuple = std::make_tuple(args...);
  auto [y, linear] = transform_detail::linearize_args("linearize", f, arg_tuple);
  auto f_lin = [linear = linear, y = y, arg_tuple](const auto&... tangents) {
    std::vector<Tensor> tl = tree_leaves(std::make_tuple(tangents...));
    std::vector<Tensor> in_leaves = tree_leaves(arg_tuple);
    if (tl.size() != in_leaves.size())
      detail::fail<Error>("linearize", "expected ", in_leaves.size(), " tangent tensors, got ", tl.size(), ".");
    for (size_t i = 0; i < tl.size(); ++i)
      if (tl[i].aval() != in_leaves[i].aval())
        detail::fail<ShapeError>("linearize", "tangent ", i, " is ", tl[i].aval(), " but its primal is ",
                                 in_leaves[i].aval(), ". Tangents must match the primals.");
    std::vector<Tensor> out = eval_jaxpr(*linear, tl);
    auto it = out.cbegin();
    return PyTree<std::decay_t<decltype(y)>>::rebuild(y, it);
  };
  return std::make_pair(y, f_lin);
}

// ---------------------------------------------------------------- vmap

/// vmap's marker for an argument that is not mapped.
struct None {};
inline constexpr None none{};

/// Per-argument batch axes: an int (negative counts from the end) or fx::none.
struct InAxes {
  std::vector<std::optional<int64_t>> axes;
};
namespace transform_detail {
inline std::optional<int64_t> axis_entry(None) { return std::nullopt; }
inline std::optional<int64_t> axis_entry(int64_t a) { return a; }
}  // namespace transform_detail
template <class... A>
InAxes in_axes(A... a) {
  return InAxes{{transform_detail::axis_entry(static_cast<std::conditional_t<std::is_same_v<A, None>, None, int64_t>>(a))...}};
}
/// Where the batch axis goes in every output (negative counts from the end).
struct OutAxes {
  int64_t axis = 0;
};
inline OutAxes out_axes(int64_t a) { return OutAxes{a}; }

namespace transform_detail {
/// The batch size implied by the mapped leaves; errors (axis out of range, inconsistent sizes,
/// nothing mapped) name vmap.
int64_t vmap_batch_size(const std::vector<std::vector<Tensor>>& leaves_per_arg,
                        const std::vector<std::optional<int64_t>>& axes);
/// Moves an output's batch axis to `out_axis` (broadcasting unbatched outputs).
Tensor vmap_output(const BatchInterpreter& interp, const Tensor& out, int64_t size, int64_t out_axis);
}  // namespace transform_detail

/// Vectorising map: f over the mapped axis of its arguments, as one batched computation.
template <class F>
auto vmap(F f, InAxes in = {}, OutAxes out = {}) {
  return [f, in, out](const auto&... args) {
    constexpr size_t n = sizeof...(args);
    std::vector<std::optional<int64_t>> axes = in.axes;
    if (axes.empty()) axes.assign(n, std::optional<int64_t>(0));
    if (axes.size() != n)
      detail::fail<Error>("vmap", "in_axes has ", axes.size(), " entries but the function was called with ", n,
                          " argument(s). Give one entry per argument (fx::none for unmapped ones).");
    std::vector<std::vector<Tensor>> leaves_per_arg{tree_leaves(args)...};
    int64_t size = transform_detail::vmap_batch_size(leaves_per_arg, axes);
    BatchInterpreter interp(size, "vmap");
    auto lift_arg = [&](const auto& arg, size_t i) {
      using A = std::decay_t<decltype(arg)>;
      if constexpr (is_pytree_v<A>) {
        if (!axes[i]) return arg;
        std::vector<Tensor> lifted;
        for (const Tensor& t : leaves_per_arg[i])
          lifted.push_back(interp.lift(t, *axes[i] < 0 ? *axes[i] + t.ndim() : *axes[i]));
        auto it = lifted.cbegin();
        return PyTree<A>::rebuild(arg, it);
      } else {
        return arg;
      }
    };
    size_t idx = 0;
    auto lifted_args = std::tuple<std::decay_t<decltype(args)>...>{lift_arg(args, idx++)...};
    using Out = std::decay_t<decltype(std::apply(f, lifted_args))>;
    std::optional<Out> result;
    {
      InterpreterScope scope(interp);
      result.emplace(std::apply(f, lifted_args));
    }
    std::vector<Tensor> outs;
    for (const Tensor& o : tree_leaves(*result))
      outs.push_back(transform_detail::vmap_output(interp, o, size, out.axis));
    auto it = outs.cbegin();
    return PyTree<Out>::rebuild(*result, it);
  };
}

// ---------------------------------------------------------------- Jacobians

namespace transform_detail {
/// The standard basis over all elements of `leaves`, split by leaf: entry i has shape
/// [total, *leaves[i].shape] (rows of an identity of size total = sum of the leaf sizes).
std::vector<Tensor> standard_basis(const std::vector<Tensor>& leaves);
/// Offsets of each leaf's elements in the flattened order of standard_basis.
std::vector<int64_t> leaf_offsets(const std::vector<Tensor>& leaves);
/// From `batched` = [total, *shape] where the leading axis runs over the elements of the
/// `basis_leaves` (rows offset..offset+size of `basis_leaf`), the Jacobian block of shape
/// other.shape ++ basis_leaf.shape (when `basis_is_input`) or basis_leaf.shape ++ other.shape.
Tensor jacobian_block(const Tensor& batched, int64_t offset, const Shape& basis_leaf, bool basis_is_input);

/// The Jacobian's blocks [output leaf][input leaf] assembled like JAX's nesting: for a Tensor
/// output, a value shaped like the input (each leaf holding its block); otherwise one such value
/// per output leaf, in leaf order.
template <class X, class Y>
auto assemble_jacobian(const X& x, const Y&, const std::vector<std::vector<Tensor>>& blocks) {
  if constexpr (std::is_same_v<Y, Tensor>) {
    auto it = blocks[0].cbegin();
    return PyTree<X>::rebuild(x, it);
  } else {
    std::vector<X> rows;
    for (const auto& row : blocks) {
      auto it = row.cbegin();
      rows.push_back(PyTree<X>::rebuild(x, it));
    }
    return rows;
  }
}

/// Blocks from forward mode: ys[j] = [n, *out_j], n running over the input elements.
std::vector<std::vector<Tensor>> blocks_from_columns(const std::vector<Tensor>& ys, const std::vector<Tensor>& x_leaves);
/// Blocks from reverse mode: xs[i] = [m, *x_i], m running over the output elements.
std::vector<std::vector<Tensor>> blocks_from_rows(const std::vector<Tensor>& xs, const std::vector<Tensor>& y_leaves);
}  // namespace transform_detail

/// Forward-mode Jacobian (a batch of jvps over the input's standard basis). For Tensor -> Tensor
/// the shape is out.shape ++ x.shape; pytree inputs/outputs nest as in assemble_jacobian.
template <class F>
auto jacfwd(F f) {
  return [f](const auto& x) {
    using X = std::decay_t<decltype(x)>;
    using Y = std::decay_t<decltype(f(x))>;
    std::vector<Tensor> xl = tree_leaves(x);
    std::optional<Y> y;
    std::vector<Tensor> ys = vmap([&](const std::vector<Tensor>& t) {
      auto ti = t.cbegin();
      auto r = jvp(f, std::make_tuple(x), std::make_tuple(PyTree<X>::rebuild(x, ti)));
      if (!y) y.emplace(r.first);  // the primal does not depend on the batched tangent
      return tree_leaves(r.second);
    })(transform_detail::standard_basis(xl));
    if (!y) y.emplace(f(x));  // an empty input: vmap over zero basis vectors still traced once
    return transform_detail::assemble_jacobian(x, *y, transform_detail::blocks_from_columns(ys, xl));
  };
}

/// Reverse-mode Jacobian (a batch of vjps over the output's standard basis, one linearization).
template <class F>
auto jacrev(F f) {
  return [f](const auto& x) {
    auto y_and_pullback = vjp(f, x);  // not a structured binding: lambdas cannot capture those in C++17
    const auto& y = y_and_pullback.first;
    const auto& pullback = y_and_pullback.second;
    using Y = std::decay_t<decltype(y)>;
    std::vector<Tensor> yl = tree_leaves(y);
    std::vector<Tensor> xs = vmap([&](const std::vector<Tensor>& ct) {
      auto ci = ct.cbegin();
      return tree_leaves(std::get<0>(pullback(PyTree<Y>::rebuild(y, ci))));
    })(transform_detail::standard_basis(yl));
    return transform_detail::assemble_jacobian(x, y, transform_detail::blocks_from_rows(xs, yl));
  };
}

/// The Jacobian from one linearization: reverse mode (transposition) when the output has fewer
/// elements than the input, forward mode (the linear map itself) otherwise.
template <class F>
auto jacobian(F f) {
  return [f](const auto& x) {
    auto [y, linear] = transform_detail::linearize_args("jacobian", f, std::make_tuple(x));
    std::vector<Tensor> xl = tree_leaves(x), yl = tree_leaves(y);
    int64_t n = 0, m = 0;
    for (const Tensor& t : xl) n += t.size();
    for (const Tensor& t : yl) m += t.size();
    std::vector<std::vector<Tensor>> blocks;
    if (m < n) {
      std::vector<Tensor> xs = vmap([&](const std::vector<Tensor>& ct) { return transpose_jaxpr(*linear, ct, "jacobian"); })(
          transform_detail::standard_basis(yl));
      blocks = transform_detail::blocks_from_rows(xs, yl);
    } else {
      std::vector<Tensor> ys = vmap([&](const std::vector<Tensor>& t) { return eval_jaxpr(*linear, t); })(
          transform_detail::standard_basis(xl));
      blocks = transform_detail::blocks_from_columns(ys, xl);
    }
    return transform_detail::assemble_jacobian(x, y, blocks);
  };
}

/// The Hessian of a scalar function (forward over reverse): shape x.shape ++ x.shape for a Tensor;
/// for a pytree with leaves θ1..θk, a std::vector of k values shaped like x whose member j in row i
/// holds d²f/dθi dθj with shape θi.shape ++ θj.shape.
template <class F>
auto hessian(F f) {
  return jacfwd(jacrev(f));
}

/// Hessian-vector product H(x)·v of a scalar function, forward over reverse; never forms H.
/// x and v are the same pytree type (a Tensor, a struct of parameters...).
template <class F, class X>
X hvp(F f, const X& x, const X& v) {
  return jvp(grad(f), std::make_tuple(x), std::make_tuple(v)).second;
}

}  // namespace fluxion
