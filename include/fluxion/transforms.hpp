/// The transforms: grad, value_and_grad, jvp, vjp, linearize, vmap, jacfwd, jacrev, jacobian,
/// hessian, hvp. Each returns a callable (or a result) and composes with the others to any depth.
#pragma once
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/first.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/string.hpp>

#include "fluxion/jaxpr.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/jacobian_tree.hpp"
#include "fluxion/pytree.hpp"
#include "fluxion/transform_checks.hpp"
#include "transforms/batching.hpp"
#include "transforms/jvp.hpp"
#include "transforms/transpose.hpp"

namespace fluxion {

/// grad's option selecting the differentiated arguments: fx::argnums<0, 2>.
template <int... I> struct Argnums { static constexpr std::array<int, sizeof...(I)> values{I...}; };
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

/// Checks grad's output is a floating scalar.
void check_scalar_output(const char* transform, const std::vector<Tensor>& outs);
/// Checks a differentiated input is floating point.
void check_float_input(const char* transform, size_t argnum, const Tensor& leaf);
/// A tensor of ones shaped like `t` (grad's seed).
Tensor ones_like_value(const Tensor& t);

/// The position of the first occurrence of nums[k] in nums (k itself unless it repeats).
template <size_t N> size_t first_occurrence(const std::array<int, N>& nums, size_t k) {
  size_t j = 0;
  while (nums[j] != nums[k]) ++j;
  return j;
}

/// Where the selected arguments' leaves sit in the flat list of leaves: argument nums[k] has
/// count[k] leaves from offset[k]. A repeated argnum shares its first occurrence's leaves (it is
/// differentiated once, and its derivative is returned at every position, like JAX).
template <size_t N> struct Selection { std::array<size_t, N> offset{}, count{}; };

/// Flattens the selected arguments' leaves, each argument once; fills `sel`.
template <size_t N, class Tuple> std::vector<Tensor> selected_leaves(const std::array<int, N>& nums, const Tuple& args,
                                                                     Selection<N>& sel, const char* transform) {
  std::vector<Tensor> leaves;
  for (size_t k = 0; k < N; ++k) {
    size_t first = first_occurrence(nums, k);
    if (first < k) {
      sel.offset[k] = sel.offset[first], sel.count[k] = sel.count[first];
      continue;
    }
    size_t before = leaves.size();
    bool found = false;
    std::apply(
        [&](const auto&... a) {
          int i = 0;
          auto visit = [&](const auto& arg) {
            if (i++ != nums[k]) return;
            found = true;
            using A = std::decay_t<decltype(arg)>;
            if constexpr (is_pytree_v<A>) {
              PyTree<A>::flatten(arg, leaves);
            } else {
              detail::fail<Error>(
                  transform, "argument ", nums[k], " is static (not a Tensor or pytree of ",
                  "Tensors) and cannot be differentiated. Pass it as a Tensor or remove it from argnums.");
            }
          };
          (visit(a), ...);
        },
        args);
    if (!found)
      detail::fail<Error>(transform, "argnums ", nums[k], " is out of range for a function called with ",
                          std::tuple_size_v<Tuple>, " argument(s). Use argnums in [0, ", std::tuple_size_v<Tuple>,
                          ").");
    sel.offset[k] = before, sel.count[k] = leaves.size() - before;
    for (size_t i = before; i < leaves.size(); ++i)
      check_float_input(transform, static_cast<size_t>(nums[k]), leaves[i]);
  }
  return leaves;
}

/// A copy of `args` whose selected arguments take their leaves from `leaves` (in order, each
/// argument once).
template <size_t N, class Tuple>
Tuple replace_selected(const std::array<int, N>& nums, const Tuple& args, const std::vector<Tensor>& leaves) {
  auto it = leaves.cbegin();
  Tuple out = args;
  for (size_t k = 0; k < N; ++k) {
    if (first_occurrence(nums, k) < k) continue;
    int i = 0;
    std::apply(
        [&](auto&... a) {
          auto visit = [&](auto& arg) {
            if (i++ != nums[k]) return;
            using A = std::decay_t<decltype(arg)>;
            if constexpr (is_pytree_v<A>) arg = PyTree<A>::rebuild(arg, it);
          };
          (visit(a), ...);
        },
        out);
  }
  return out;
}

/// Selected argument K rebuilt from the leaves at its offset.
template <size_t K, int... I, class Tuple>
auto rebuild_one(const Tuple& args, const std::vector<Tensor>& leaves, size_t offset) {
  constexpr size_t i = static_cast<size_t>(Argnums<I...>::values[K]);
  using A = std::decay_t<std::tuple_element_t<i, Tuple>>;
  auto it = leaves.cbegin() + static_cast<std::ptrdiff_t>(offset);
  return PyTree<A>::rebuild(std::get<i>(args), it);
}

/// The selected arguments rebuilt from `leaves`: one value for one argnum, a tuple for several
/// (a repeated argnum appears at each of its positions).
template <int... I, class Tuple, size_t... K>
auto rebuild_selected(Argnums<I...>, const Tuple& args, const std::vector<Tensor>& leaves,
                      const Selection<sizeof...(I)>& sel, std::index_sequence<K...>) {
  if constexpr (sizeof...(I) == 1) return rebuild_one<0, I...>(args, leaves, sel.offset[0]);
  else return std::make_tuple(rebuild_one<K, I...>(args, leaves, sel.offset[K])...);
}
template <int... I, class Tuple> auto rebuild_selected(Argnums<I...> nums, const Tuple& args,
                                                       const std::vector<Tensor>& leaves,
                                                       const Selection<sizeof...(I)>& sel) {
  return rebuild_selected(nums, args, leaves, sel, std::make_index_sequence<sizeof...(I)>{});
}

/// Out-of-range argnums are reported at run time (like JAX) rather than as a template error.
template <int... I> constexpr bool argnums_in_range_of(Argnums<I...>, size_t num_args) {
  return std::max({0, I...}) < static_cast<int>(num_args);
}
[[noreturn]] void fail_argnums_range(const char* transform, int argnum, size_t num_args);

/// The aux type of a has_aux function's std::pair{value, aux} result (int when there is none).
template <bool Aux, class Ret> struct AuxType { using type = int; };
template <class Ret> struct AuxType<true, Ret> { using type = std::decay_t<decltype(std::declval<Ret>().second)>; };

/// Shared body of grad and value_and_grad.
template <bool WithValue, class F, int... I, bool Aux, class... Args>
auto value_and_grad_impl(const char* transform, const F& f, Argnums<I...> nums, std::bool_constant<Aux>,
                         const Args&... args) {
  using Ret = std::decay_t<decltype(f(args...))>;
  if constexpr (!check_grad_call<Aux, Ret, Argnums<I...>, Args...>()) {
    return;  // a static_assert has said what is wrong
  } else if constexpr (!argnums_in_range_of(Argnums<I...>{}, sizeof...(Args))) {
    fail_argnums_range(transform, std::max({0, I...}), sizeof...(Args));
  } else {
    auto arg_tuple = std::make_tuple(args...);
    using Aux_t = typename AuxType<Aux, Ret>::type;
    Selection<sizeof...(I)> sel;
    std::vector<Tensor> leaves = selected_leaves(Argnums<I...>::values, arg_tuple, sel, transform);
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
    auto g = rebuild_selected(nums, arg_tuple, grads, sel);
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
template <class F, class... Opts> auto grad(F f, Opts...) {
  using O = transform_detail::GradOptions<Opts...>;
  return [f](const auto&... args) {
    return transform_detail::value_and_grad_impl<false>("grad", f, typename O::Nums{}, std::bool_constant<O::aux>{},
                                                        args...);
  };
}

/// std::pair{value, grad} (with has_aux: std::pair{std::pair{value, aux}, grad}).
template <class F, class... Opts> auto value_and_grad(F f, Opts...) {
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
  for (size_t i = 0; i < pl.size(); ++i)
    lifted.push_back(interp.lift(pl[i], is_floating(pl[i].dtype()) ? tl[i] : Tensor()));
  auto it = lifted.cbegin();
  auto args = PyTree<std::tuple<P...>>::rebuild(primals, it);
  using Out = std::decay_t<decltype(std::apply(f, args))>;
  transform_detail::check_tree_result<Out>();
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
template <class F> auto jvp(F f, const Tensor& x, const Tensor& t) {
  return jvp([&f](const Tensor& a) { return f(a); }, std::make_tuple(x), std::make_tuple(t));
}

namespace transform_detail {
/// f linearized at args (all pytrees): its output y (f's own structure) and the linear Jaxpr.
template <class F, class... Args>
auto linearize_args(const char* transform, const F& f, const std::tuple<Args...>& arg_tuple) {
  std::vector<Tensor> leaves = tree_leaves(arg_tuple);
  using Out = std::decay_t<decltype(std::apply(f, arg_tuple))>;
  check_tree_result<Out>();
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

namespace transform_detail {
/// vjp's pullback: a cotangent shaped like f's output (Out) -> a std::tuple with one cotangent per
/// argument. The linear Jaxpr's first `num_out` outputs are f's output; those after them (has_aux)
/// get zero cotangents.
template <class Out, class ArgTuple> struct Pullback {
  std::shared_ptr<const Jaxpr> linear;
  ArgTuple args;
  size_t num_out;
  ArgTuple operator()(const Out& ct) const {
    std::vector<Tensor> cts = tree_leaves(ct);
    if (cts.size() != num_out)
      detail::fail<Error>("vjp", "the cotangent has ", cts.size(), " tensors but the output has ", num_out,
                          ". Pass a cotangent with the output's structure.");
    cts.resize(linear->outputs.size());
    std::vector<Tensor> grads = transpose_jaxpr(*linear, cts, "vjp");
    auto gi = grads.cbegin();
    return PyTree<ArgTuple>::rebuild(args, gi);
  }
  template <class Ct> ArgTuple operator()(const Ct&) const {
    static_assert(dependent_false<Ct>,
                  "fx::vjp: the cotangent must have the type of f's output. If f returns std::pair{output, aux}, "
                  "write fx::vjp(f, fx::has_aux, args...) and pull back cotangents of the output only");
    return args;
  }
};

template <bool Aux, class F, class... Args> auto vjp_impl(const F& f, const Args&... args) {
  auto arg_tuple = std::make_tuple(args...);
  std::vector<Tensor> leaves = tree_leaves(arg_tuple);
  for (size_t i = 0; i < leaves.size(); ++i) check_float_input("vjp", i, leaves[i]);
  auto [y, linear] = linearize_args("vjp", f, arg_tuple);
  using Y = std::decay_t<decltype(y)>;
  if constexpr (Aux) {
    using Out = typename Y::first_type;
    Pullback<Out, decltype(arg_tuple)> pullback{linear, arg_tuple, tree_leaves(y.first).size()};
    return std::make_tuple(y.first, pullback, y.second);
  } else {
    return std::make_pair(y, Pullback<Y, decltype(arg_tuple)>{linear, arg_tuple, linear->outputs.size()});
  }
}
}  // namespace transform_detail

/// Reverse mode: std::pair{f(args...), pullback}; pullback(ct) returns a std::tuple with one
/// cotangent per argument and can be called many times.
template <class F, class... Args> auto vjp(F f, const Args&... args) {
  transform_detail::check_tree_args<Args...>();
  return transform_detail::vjp_impl<false>(f, args...);
}

/// vjp of f returning std::pair{output, aux}: std::tuple{output, pullback, aux}, where aux is
/// passed through, not differentiated (JAX's vjp(..., has_aux=True)).
template <class F, class... Args> auto vjp(F f, HasAux, const Args&... args) {
  transform_detail::check_tree_args<Args...>();
  using R = std::decay_t<decltype(f(args...))>;
  if constexpr (!transform_detail::is_pair_v<R>)
    static_assert(transform_detail::dependent_false<R>,
                  "fx::vjp(f, fx::has_aux, args...): f must return std::pair{output, aux}: write `return "
                  "std::make_pair(y, aux)`");
  else return transform_detail::vjp_impl<true>(f, args...);
}

/// std::pair{f(args...), f_lin} with f_lin(tangents...) = J·t, reusable.
template <class F, class... Args> auto linearize(F f, const Args&... args) {
  transform_detail::check_tree_args<Args...>();
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

/// vmap's marker for an argument (or leaf) that is not mapped.
struct None {};
inline constexpr None none{};

/// One in_axes / out_axes entry. A leaf (an int, negative counting from the end, or fx::none)
/// applies to every Tensor of the matching (sub)tree; a node has one entry per child of the
/// matching container: per element of a std::tuple / std::pair / std::array / std::vector, per
/// member of a struct (in order), per key of a std::map (given as a std::map with the same keys).
/// Built from such a container by in_axes / out_axes, like JAX's nested in_axes.
struct AxisTree {
  bool leaf = true;
  std::optional<int64_t> axis = 0;  // a leaf's axis; nullopt for fx::none
  std::vector<AxisTree> children;   // a node's entries
  std::vector<std::string> keys;    // a node made from a std::map: its keys
};

namespace transform_detail {
inline AxisTree axis_tree(None) { return AxisTree{true, std::nullopt, {}, {}}; }
inline AxisTree axis_tree(std::optional<int64_t> a) { return AxisTree{true, a, {}, {}}; }
inline AxisTree axis_tree(const AxisTree& a) { return a; }
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0> AxisTree axis_tree(T a) {
  return AxisTree{true, static_cast<int64_t>(a), {}, {}};
}
template <class... T> AxisTree axis_tree(const std::tuple<T...>& t);
template <class A, class B> AxisTree axis_tree(const std::pair<A, B>& p);
template <class T> AxisTree axis_tree(const std::vector<T>& v);
template <class T, size_t N> AxisTree axis_tree(const std::array<T, N>& v);
template <class T> AxisTree axis_tree(const std::map<std::string, T>& m);
inline AxisTree axis_node(std::vector<AxisTree> children) {
  return AxisTree{false, std::nullopt, std::move(children), {}};
}
template <class... T> AxisTree axis_tree(const std::tuple<T...>& t) {
  return std::apply([](const auto&... e) { return axis_node({axis_tree(e)...}); }, t);
}
template <class A, class B> AxisTree axis_tree(const std::pair<A, B>& p) {
  return axis_node({axis_tree(p.first), axis_tree(p.second)});
}
template <class Seq> AxisTree axis_seq(const Seq& v) {
  std::vector<AxisTree> c;
  for (const auto& e : v) c.push_back(axis_tree(e));
  return axis_node(std::move(c));
}
template <class T> AxisTree axis_tree(const std::vector<T>& v) { return axis_seq(v); }
template <class T, size_t N> AxisTree axis_tree(const std::array<T, N>& v) { return axis_seq(v); }
template <class T> AxisTree axis_tree(const std::map<std::string, T>& m) {
  AxisTree t = axis_node({});
  for (const auto& [k, v] : m) t.children.push_back(axis_tree(v)), t.keys.push_back(k);
  return t;
}

template <class T> struct IsStdMap : std::false_type {};
template <class T> struct IsStdMap<std::map<std::string, T>> : std::true_type {};
template <class T> struct IsSequence : std::false_type {};
template <class T> struct IsSequence<std::vector<T>> : std::true_type {};
template <class T, size_t N> struct IsSequence<std::array<T, N>> : std::true_type {};

[[noreturn]] void fail_axis_structure(const char* what, size_t index, const std::string& path,
                                      const std::string& problem);

/// Appends the axis of every Tensor of `x` (in flattening order) that `spec` gives it. `what`,
/// `index` and `path` name the place in errors ("in_axes", argument 1, ".second").
template <class T> void leaf_axes(const T& x, const AxisTree& spec, std::vector<std::optional<int64_t>>& out,
                                  const char* what, size_t index, const std::string& path) {
  if constexpr (is_pytree_v<T>) {
    auto check_count = [&](size_t n, const char* kind) {
      if (spec.children.size() != n)
        fail_axis_structure(
            what, index, path,
            detail::cat("has ", spec.children.size(), " entries but the ", kind, " has ", n, " elements"));
    };
    auto child = [&](const auto& c, size_t i, const std::string& sub) {
      leaf_axes(c, spec.children[i], out, what, index, path + sub);
    };
    if (spec.leaf) {
      out.insert(out.end(), tree_leaves(x).size(), spec.axis);
    } else if constexpr (std::is_same_v<T, Tensor>) {
      fail_axis_structure(what, index, path, "is a container but the value is a Tensor (give an int or fx::none)");
    } else if constexpr (is_tuple_v<T>) {
      check_count(std::tuple_size_v<T>, "std::tuple");
      size_t i = 0;
      std::apply([&](const auto&... e) { ((child(e, i, detail::cat("[", i, "]")), ++i), ...); }, x);
    } else if constexpr (IsSequence<T>::value) {
      check_count(x.size(), "sequence");
      for (size_t i = 0; i < x.size(); ++i) child(x[i], i, detail::cat("[", i, "]"));
    } else if constexpr (IsStdMap<T>::value) {
      check_count(x.size(), "std::map");
      size_t i = 0;
      for (const auto& [k, v] : x) {
        if (!spec.keys.empty() && spec.keys[i] != k)
          fail_axis_structure(what, index, path,
                              detail::cat("has key '", spec.keys[i], "' where the map has '", k, "'"));
        child(v, i++, "[\"" + k + "\"]");
      }
    } else if constexpr (boost::hana::Struct<T>::value) {
      check_count(boost::hana::length(boost::hana::accessors<T>()), "struct");
      size_t i = 0;
      boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
        child(boost::hana::second(pair)(x), i,
              detail::cat(".", boost::hana::to<const char*>(boost::hana::first(pair))));
        ++i;
      });
    } else {  // std::pair
      check_count(2, "std::pair");
      child(x.first, 0, ".first");
      child(x.second, 1, ".second");
    }
  }
}
}  // namespace transform_detail

/// Per-argument batch axes: fx::in_axes(0, fx::none) maps argument 0 along axis 0 and passes
/// argument 1 whole. An entry may be a container of entries matching a pytree argument, per leaf:
/// fx::in_axes(std::make_tuple(0, fx::none), 1) for a std::tuple<Tensor, Tensor> argument and a
/// Tensor; std::map<std::string, ...> entries for map arguments; a std::tuple (member order) for
/// structs. A single int or fx::none applies to the whole argument (a prefix, like JAX).
struct InAxes {
  std::vector<AxisTree> entries;  // one per argument; empty: every argument along axis 0
  InAxes() = default;
  InAxes(const std::vector<std::optional<int64_t>>& axes) {  // NOLINT: one flat axis per argument
    for (const auto& a : axes) entries.push_back(transform_detail::axis_tree(a));
  }
};
template <class... A> InAxes in_axes(const A&... a) {
  InAxes r;
  r.entries = {transform_detail::axis_tree(a)...};
  return r;
}
/// Where the batch axis goes in the outputs: one entry (an int, negative counting from the end)
/// for every output, or a container matching the output's pytree per leaf, like in_axes.
/// fx::none marks an output that does not depend on the mapped arguments (returned unbatched).
struct OutAxes {
  AxisTree spec;  // default: axis 0 everywhere
};
/// out_axes(1); out_axes(std::make_tuple(0, 1)); out_axes(0, 1) is out_axes(std::make_tuple(0, 1)).
template <class... A> OutAxes out_axes(const A&... a) {
  static_assert(sizeof...(A) > 0, "fx::out_axes: give at least one axis");
  if constexpr (sizeof...(A) == 1) return OutAxes{transform_detail::axis_tree(a...)};
  else return OutAxes{transform_detail::axis_tree(std::make_tuple(a...))};
}

namespace transform_detail {
/// The batch size implied by the mapped leaves (axes per leaf of each argument); errors (axis out
/// of range, inconsistent sizes, nothing mapped) name vmap.
int64_t vmap_batch_size(const std::vector<std::vector<Tensor>>& leaves_per_arg,
                        const std::vector<std::vector<std::optional<int64_t>>>& axes);
/// Moves output leaf `leaf`'s batch axis to `out_axis` (broadcasting unbatched outputs); with
/// no axis (fx::none), the output must be unbatched and is returned as it is.
Tensor vmap_output(const BatchInterpreter& interp, const Tensor& out, int64_t size, std::optional<int64_t> out_axis,
                   size_t leaf);
}  // namespace transform_detail

/// Names vmap's mapped axis, so that collectives inside f over that name (fx::all_sum(x, "batch"))
/// act across it, as JAX's vmap(axis_name=...). The same f then runs over processes unchanged, with
/// the name registered for a process group (fx::distributed).
struct AxisName {
  std::string name;
};
inline AxisName axis_name(std::string name) { return AxisName{std::move(name)}; }

/// Vectorising map: f over the mapped axis of its arguments, as one batched computation.
template <class F> auto vmap(F f, InAxes in = {}, OutAxes out = {}, AxisName name = {}) {
  return [f, in, out, name](const auto&... args) {
    constexpr size_t n = sizeof...(args);
    std::vector<AxisTree> entries = in.entries;
    if (entries.empty()) entries.assign(n, AxisTree{});
    if (entries.size() != n)
      detail::fail<Error>("vmap", "in_axes has ", entries.size(), " entries but the function was called with ", n,
                          " argument(s). Give one entry per argument (fx::none for unmapped ones).");
    std::vector<std::vector<Tensor>> leaves_per_arg{tree_leaves(args)...};
    std::vector<std::vector<std::optional<int64_t>>> axes(n);
    {
      size_t i = 0;
      ((transform_detail::leaf_axes(args, entries[i], axes[i], "in_axes", i, ""), ++i), ...);
    }
    int64_t size = transform_detail::vmap_batch_size(leaves_per_arg, axes);
    BatchInterpreter interp(size, name.name, "vmap");
    auto lift_arg = [&](const auto& arg, size_t i) {
      using A = std::decay_t<decltype(arg)>;
      if constexpr (is_pytree_v<A>) {
        std::vector<Tensor> lifted;
        for (size_t j = 0; j < leaves_per_arg[i].size(); ++j) {
          const Tensor& t = leaves_per_arg[i][j];
          const std::optional<int64_t>& a = axes[i][j];
          lifted.push_back(a ? interp.lift(t, *a < 0 ? *a + t.ndim() : *a) : t);
        }
        auto it = lifted.cbegin();
        return PyTree<A>::rebuild(arg, it);
      } else {
        return arg;
      }
    };
    size_t idx = 0;
    auto lifted_args = std::tuple<std::decay_t<decltype(args)>...>{lift_arg(args, idx++)...};
    using Out = std::decay_t<decltype(std::apply(f, lifted_args))>;
    transform_detail::check_tree_result<Out>();
    std::optional<Out> result;
    {
      InterpreterScope scope(interp);
      result.emplace(std::apply(f, lifted_args));
    }
    std::vector<std::optional<int64_t>> out_leaf_axes;
    transform_detail::leaf_axes(*result, out.spec, out_leaf_axes, "out_axes", 0, "");
    std::vector<Tensor> outs = tree_leaves(*result);
    for (size_t j = 0; j < outs.size(); ++j)
      outs[j] = transform_detail::vmap_output(interp, outs[j], size, out_leaf_axes[j], j);
    auto it = outs.cbegin();
    return PyTree<Out>::rebuild(*result, it);
  };
}
template <class F> auto vmap(F f, AxisName name) { return vmap(std::move(f), InAxes{}, OutAxes{}, std::move(name)); }
template <class F> auto vmap(F f, InAxes in, AxisName name) {
  return vmap(std::move(f), std::move(in), OutAxes{}, std::move(name));
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

/// Blocks from forward mode: ys[j] = [n, *out_j], n running over the input elements.
std::vector<std::vector<Tensor>> blocks_from_columns(const std::vector<Tensor>& ys,
                                                     const std::vector<Tensor>& x_leaves);
/// Blocks from reverse mode: xs[i] = [m, *x_i], m running over the output elements.
std::vector<std::vector<Tensor>> blocks_from_rows(const std::vector<Tensor>& xs, const std::vector<Tensor>& y_leaves);
}  // namespace transform_detail

namespace transform_detail {
/// Each block row (one block per unique selected leaf) spread over the selected arguments in
/// order: a repeated argnum gets its first occurrence's blocks again.
template <size_t N> void spread_blocks(std::vector<std::vector<Tensor>>& blocks, const Selection<N>& sel) {
  for (std::vector<Tensor>& row : blocks) {
    std::vector<Tensor> spread;
    for (size_t k = 0; k < N; ++k)
      spread.insert(spread.end(), row.begin() + static_cast<std::ptrdiff_t>(sel.offset[k]),
                    row.begin() + static_cast<std::ptrdiff_t>(sel.offset[k] + sel.count[k]));
    row = std::move(spread);
  }
}

/// The Jacobian transforms' driver: the Jacobian of f(args...) with respect to the arguments
/// Nums, from `core(g, leaves)` -> {y, blocks[output leaf][input leaf]} where g is f as a function
/// of the flat leaves of the selected arguments. One argnum gives blocks shaped like that
/// argument, several a std::tuple of them (like JAX), nested per output leaf by assemble_jacobian.
template <class Nums, class F, class Core, class... Args>
auto jacobian_of(const char* transform, const F& f, const Core& core, const Args&... args) {
  if constexpr (!check_differentiable_args<Args...>(Nums{})) {
    return;  // a static_assert has said what is wrong
  } else if constexpr (!argnums_in_range_of(Nums{}, sizeof...(Args))) {
    fail_argnums_range(transform, *std::max_element(Nums::values.begin(), Nums::values.end()), sizeof...(Args));
  } else {
    constexpr size_t N = Nums::values.size();
    auto arg_tuple = std::make_tuple(args...);
    Selection<N> sel;
    std::vector<Tensor> leaves = selected_leaves(Nums::values, arg_tuple, sel, transform);
    auto g = [&](const std::vector<Tensor>& l) { return std::apply(f, replace_selected(Nums::values, arg_tuple, l)); };
    auto [y, blocks] = core(g, leaves);
    spread_blocks(blocks, sel);
    return assemble_jacobian(rebuild_selected(Nums{}, arg_tuple, leaves, sel), y, blocks);
  }
}

/// jacfwd's core: a batch of jvps over the standard basis of the inputs.
struct ForwardCore {
  template <class G> auto operator()(const G& g, const std::vector<Tensor>& xl) const {
    using Y = std::decay_t<decltype(g(xl))>;
    std::optional<Y> y;
    std::vector<Tensor> ys = vmap([&](const std::vector<Tensor>& t) {
      auto r = jvp(g, std::make_tuple(xl), std::make_tuple(t));
      if (!y) y.emplace(r.first);  // the structure only: the primal does not depend on the tangent
      return tree_leaves(r.second);
    })(standard_basis(xl));
    if (!y) y.emplace(g(xl));  // an empty input: vmap over zero basis vectors still traced once
    return std::make_pair(*y, blocks_from_columns(ys, xl));
  }
};

/// jacrev's core: one linearization, a batch of vjps over the standard basis of the outputs.
struct ReverseCore {
  template <class G> auto operator()(const G& g, const std::vector<Tensor>& xl) const {
    auto y_and_pullback = vjp(g, xl);  // not a structured binding: lambdas cannot capture those in C++17
    const auto& y = y_and_pullback.first;
    const auto& pullback = y_and_pullback.second;
    using Y = std::decay_t<decltype(y)>;
    std::vector<Tensor> yl = tree_leaves(y);
    std::vector<Tensor> xs = vmap([&](const std::vector<Tensor>& ct) {
      auto ci = ct.cbegin();
      return std::get<0>(pullback(PyTree<Y>::rebuild(y, ci)));
    })(standard_basis(yl));
    return std::make_pair(y, blocks_from_rows(xs, yl));
  }
};

/// jacobian's core: one linearization, transposed (reverse mode) when the output has fewer
/// elements than the input, applied (forward mode) otherwise.
struct LinearCore {
  template <class G> auto operator()(const G& g, const std::vector<Tensor>& xl) const {
    auto [y, linear] = linearize_args("jacobian", g, std::make_tuple(xl));
    std::vector<Tensor> yl = tree_leaves(y);
    int64_t n = 0, m = 0;
    for (const Tensor& t : xl) n += t.size();
    for (const Tensor& t : yl) m += t.size();
    std::vector<std::vector<Tensor>> blocks;
    const Jaxpr& lin = *linear;
    if (m < n) {
      std::vector<Tensor> xs =
          vmap([&](const std::vector<Tensor>& ct) { return transpose_jaxpr(lin, ct, "jacobian"); })(standard_basis(yl));
      blocks = blocks_from_rows(xs, yl);
    } else {
      std::vector<Tensor> ys =
          vmap([&](const std::vector<Tensor>& t) { return eval_jaxpr(lin, t); })(standard_basis(xl));
      blocks = blocks_from_columns(ys, xl);
    }
    return std::make_pair(y, blocks);
  }
};

/// A Jacobian transform of f computed by Core, with the options fx::argnums<...> (default 0).
template <class Core, class F, class... Opts> auto jacobian_transform(const char* name, F f) {
  using O = GradOptions<Opts...>;
  static_assert(!O::aux, "fx::jacfwd / jacrev / jacobian / hessian take fx::argnums<...> only (no has_aux)");
  return [f, name](const auto&... args) { return jacobian_of<typename O::Nums>(name, f, Core{}, args...); };
}
}  // namespace transform_detail

/// Forward-mode Jacobian (a batch of jvps over the input's standard basis). For Tensor -> Tensor
/// the shape is out.shape ++ x.shape; pytree inputs/outputs nest as in assemble_jacobian. Option
/// fx::argnums<...> selects the arguments (default 0); several give a std::tuple of blocks, one
/// per argnum (a repeated argnum gives the same block again), like JAX's tuple argnums.
template <class F, class... Opts> auto jacfwd(F f, Opts...) {
  return transform_detail::jacobian_transform<transform_detail::ForwardCore, F, Opts...>("jacfwd", f);
}

/// Reverse-mode Jacobian (a batch of vjps over the output's standard basis, one linearization).
/// Options and result structure as jacfwd.
template <class F, class... Opts> auto jacrev(F f, Opts...) {
  return transform_detail::jacobian_transform<transform_detail::ReverseCore, F, Opts...>("jacrev", f);
}

/// The Jacobian from one linearization: reverse mode (transposition) when the output has fewer
/// elements than the input, forward mode (the linear map itself) otherwise. Options as jacfwd.
template <class F, class... Opts> auto jacobian(F f, Opts...) {
  return transform_detail::jacobian_transform<transform_detail::LinearCore, F, Opts...>("jacobian", f);
}

/// The Hessian of a scalar function (forward over reverse): shape x.shape ++ x.shape for a Tensor;
/// for a pytree with leaves θ1..θk, a std::vector of k values shaped like x whose member j in row i
/// holds d²f/dθi dθj with shape θi.shape ++ θj.shape. With several fx::argnums<...> the selected
/// arguments act as one std::tuple pytree: a std::vector (one row per leaf of the tuple) of tuples.
template <class F, class... Opts> auto hessian(F f, Opts... opts) { return jacfwd(jacrev(f, opts...), opts...); }

/// Hessian-vector product H(x)·v of a scalar function, forward over reverse; never forms H.
/// x and v are the same pytree type (a Tensor, a struct of parameters...).
template <class F, class X> X hvp(F f, const X& x, const X& v) {
  return jvp(grad(f), std::make_tuple(x), std::make_tuple(v)).second;
}

}  // namespace fluxion
