/// Mistakes in calling the transforms that are caught at compile time (issue 35): each is one
/// static_assert whose message says what to write instead, and the transform compiles nothing
/// else when one fails (no pages of template errors after it). tests/compile_errors/ holds one
/// snippet per message.
#pragma once
#include <tuple>
#include <type_traits>
#include <utility>

#include "fluxion/pytree.hpp"

namespace fluxion {
namespace transform_detail {

template <class> inline constexpr bool dependent_false = false;  // a static_assert that fires when instantiated
template <class T> inline constexpr bool is_tuple_v = false;
template <class... T> inline constexpr bool is_tuple_v<std::tuple<T...>> = true;
template <class T> inline constexpr bool is_pair_v = false;
template <class A, class B> inline constexpr bool is_pair_v<std::pair<A, B>> = true;
/// A has_aux function's result: std::pair{loss Tensor, aux}.
template <class T> inline constexpr bool is_loss_aux_pair_v = false;
template <class A, class B> inline constexpr bool is_loss_aux_pair_v<std::pair<A, B>> =
    std::is_constructible_v<Tensor, A>;

/// Checks that every in-range argnum selects a Tensor or pytree argument (out-of-range argnums are
/// reported at run time, like JAX).
template <class... Args, template <int...> class Nums, int... I> constexpr bool check_differentiable_args(Nums<I...>) {
  constexpr bool tree[] = {is_pytree_v<Args>..., true};
  constexpr bool ok = ((I < 0 || I >= static_cast<int>(sizeof...(Args)) || tree[I]) && ...);
  static_assert(ok,
                "fluxion: an argument selected by fx::argnums (default 0) is not a Tensor or a pytree of Tensors and "
                "cannot be differentiated: pass numbers as Tensors (fx::scalar(2.0)), register structs with "
                "BOOST_HANA_ADAPT_STRUCT, or leave the argument out of fx::argnums<...>");
  return ok;
}

/// Checks grad's and value_and_grad's call: f's result type Ret (with or without has_aux) and the
/// differentiated arguments.
template <bool Aux, class Ret, class Nums, class... Args> constexpr bool check_grad_call() {
  constexpr bool returns_pytuple = is_pair_v<Ret> || is_tuple_v<Ret>;
  static_assert(Aux || !returns_pytuple,
                "fx::grad / fx::value_and_grad: f returns a std::pair or std::tuple: for a loss with auxiliary "
                "outputs write fx::grad(f, fx::has_aux) with f returning std::pair{loss, aux}; to differentiate "
                "every output use fx::jacrev or fx::vjp");
  static_assert(Aux || returns_pytuple || std::is_constructible_v<Tensor, Ret>,
                "fx::grad / fx::value_and_grad: f must return a scalar fx::Tensor: reduce with fx::sum or fx::mean, "
                "or use fx::jacrev for other results");
  static_assert(!Aux || is_loss_aux_pair_v<Ret>,
                "fx::grad(f, fx::has_aux) / fx::value_and_grad(f, fx::has_aux): f must return std::pair{scalar "
                "Tensor, aux}: write `return std::make_pair(loss, aux);`");
  constexpr bool args_ok = check_differentiable_args<Args...>(Nums{});
  constexpr bool result_ok = Aux ? is_loss_aux_pair_v<Ret> : !returns_pytuple && std::is_constructible_v<Tensor, Ret>;
  return result_ok && args_ok;
}

/// Checks that every argument of vjp / linearize is a Tensor or pytree of Tensors (all are differentiated).
template <class... Args> constexpr void check_tree_args() {
  static_assert((is_pytree_v<Args> && ...),
                "fx::vjp / fx::linearize: every argument must be a Tensor or a pytree of Tensors: capture numbers "
                "and strings in f (or pass them as Tensors), register structs with BOOST_HANA_ADAPT_STRUCT");
}

/// Checks that f's result (under vmap, jvp, vjp, linearize) is a Tensor or pytree of Tensors.
template <class Out> constexpr void check_tree_result() {
  static_assert(is_pytree_v<Out>,
                "fluxion: the transformed function must return a Tensor or a pytree of Tensors (std::tuple, "
                "std::pair, std::vector, std::array, std::map<std::string, ...> of Tensors, or a struct registered "
                "with BOOST_HANA_ADAPT_STRUCT)");
}

}  // namespace transform_detail
}  // namespace fluxion
