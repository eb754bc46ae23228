/// How Jacobians of pytree outputs nest (JAX's convention): the output's structure outside, the input's inside.
/// Used by fx::jacobian / jacfwd / jacrev / hessian (fluxion/transforms.hpp).
#pragma once
#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/pytree.hpp"

namespace fluxion::transform_detail {

/// The type of a Jacobian of an output of type Y with respect to inputs shaped like X, nested like JAX's: Y's
/// structure outside (std::tuple, std::pair, std::array, std::vector, std::map of string keys, nested), each
/// output leaf replaced by an X, static members (not pytrees: ints, strings) kept as they are. A struct output
/// (whose member types cannot change) gives one X per output leaf in a std::vector. build() consumes one X per
/// output leaf, in leaf order.
template <class Y, class X, class = void> struct JacobianTree {
  using type = std::conditional_t<is_pytree_v<Y>, std::vector<X>, Y>;
  static type build(const Y& y, typename std::vector<X>::const_iterator& it) {
    if constexpr (is_pytree_v<Y>) {
      const auto n = static_cast<std::ptrdiff_t>(tree_leaves(y).size());
      type out(it, it + n);
      it += n;
      return out;
    } else {
      (void)it;
      return y;
    }
  }
};
template <class X> struct JacobianTree<Tensor, X> {
  using type = X;
  static type build(const Tensor&, typename std::vector<X>::const_iterator& it) { return *it++; }
};
template <class X, class... Ts> struct JacobianTree<std::tuple<Ts...>, X> {
  using type = std::tuple<typename JacobianTree<Ts, X>::type...>;
  static type build(const std::tuple<Ts...>& y, typename std::vector<X>::const_iterator& it) {
    return build(y, it, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I> static type build(const std::tuple<Ts...>& y, typename std::vector<X>::const_iterator& it,
                                           std::index_sequence<I...>) {
    return type{JacobianTree<Ts, X>::build(std::get<I>(y), it)...};  // braces: left to right
  }
};
template <class X, class A, class B> struct JacobianTree<std::pair<A, B>, X> {
  using type = std::pair<typename JacobianTree<A, X>::type, typename JacobianTree<B, X>::type>;
  static type build(const std::pair<A, B>& y, typename std::vector<X>::const_iterator& it) {
    auto first = JacobianTree<A, X>::build(y.first, it);
    return type{std::move(first), JacobianTree<B, X>::build(y.second, it)};
  }
};
template <class X, class T, size_t N> struct JacobianTree<std::array<T, N>, X> {
  using type = std::array<typename JacobianTree<T, X>::type, N>;
  static type build(const std::array<T, N>& y, typename std::vector<X>::const_iterator& it) {
    type out{};
    for (size_t i = 0; i < N; ++i) out[i] = JacobianTree<T, X>::build(y[i], it);
    return out;
  }
};
template <class X, class T> struct JacobianTree<std::vector<T>, X> {
  using type = std::vector<typename JacobianTree<T, X>::type>;
  static type build(const std::vector<T>& y, typename std::vector<X>::const_iterator& it) {
    type out;
    out.reserve(y.size());
    for (const T& e : y) out.push_back(JacobianTree<T, X>::build(e, it));
    return out;
  }
};
template <class X, class T> struct JacobianTree<std::map<std::string, T>, X> {
  using type = std::map<std::string, typename JacobianTree<T, X>::type>;
  static type build(const std::map<std::string, T>& y, typename std::vector<X>::const_iterator& it) {
    type out;
    for (const auto& [key, e] : y) out.emplace(key, JacobianTree<T, X>::build(e, it));
    return out;
  }
};

/// The Jacobian's blocks [output leaf][input leaf] assembled like JAX's nesting (JacobianTree): for a Tensor
/// output, a value shaped like the input (each leaf holding its block); otherwise Y's structure with such a
/// value per output leaf.
template <class X, class Y>
auto assemble_jacobian(const X& x, const Y& y, const std::vector<std::vector<Tensor>>& blocks) {
  std::vector<X> rows;
  for (const auto& row : blocks) {
    auto it = row.cbegin();
    rows.push_back(PyTree<X>::rebuild(x, it));
  }
  auto it = rows.cbegin();
  return JacobianTree<Y, X>::build(y, it);
}

}  // namespace fluxion::transform_detail
