/// Pytrees: nested containers whose leaves are Tensors — std::tuple, std::pair, std::array,
/// std::vector, std::map<std::string, T> and any Boost.Hana Struct. Transforms flatten their
/// arguments to a list of leaves and rebuild results in the same structure.
#pragma once
#include <array>
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>

#include "fluxion/tensor.hpp"

namespace fluxion {

template <class T, class = void> struct PyTree;

namespace tree_detail {

/// Converts to any type: fills an aggregate's members before the one tree_member_probe tries.
struct AnyValue {
  template <class U> operator U() const;  // NOLINT: implicit on purpose (declared only, never called)
};
template <size_t> using AnyValueAt = AnyValue;
/// Converts only to pytree types: a member it initialises holds Tensors.
struct AnyTree {
  template <class U, std::enable_if_t<PyTree<U>::is_tree, int> = 0> operator U() const;  // NOLINT: as AnyValue
};
template <class T, size_t... I> auto tree_member_probe(std::index_sequence<I...>)
    -> decltype(T{AnyValueAt<I>{}..., AnyTree{}}, std::true_type{});
template <class T> std::false_type tree_member_probe(...);
template <class T, size_t... K> constexpr bool some_member_is_tree(std::index_sequence<K...>) {
  return (decltype(tree_member_probe<T>(std::make_index_sequence<K>{}))::value || ...);
}

/// True for an aggregate struct with a Tensor (or pytree) among its first 12 members that is not
/// registered as a pytree: transforms would treat its Tensors as constants, so the default PyTree
/// refuses it at compile time.
template <class T> constexpr bool unregistered_tree() {
  if constexpr (std::is_class_v<T> && std::is_aggregate_v<T>)
    return some_member_is_tree<T>(std::make_index_sequence<12>{});
  else return false;
}

/// The compile-time check of a value that is not a pytree (a static leaf).
template <class T> constexpr void check_static_leaf() {
  static_assert(!unregistered_tree<T>(),
                "fluxion: this struct holds Tensors but is not a pytree, so transforms would treat it as a constant: "
                "register it with BOOST_HANA_ADAPT_STRUCT(Type, member1, member2, ...) at global namespace scope, or "
                "declare its members with BOOST_HANA_DEFINE_STRUCT");
}

template <class T, class = void> struct has_equal : std::false_type {};
template <class T> struct has_equal<T, std::void_t<decltype(std::declval<const T&>() == std::declval<const T&>())>>
    : std::true_type {};

template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};

/// Static leaves compare by value, floating-point ones by their bits: a NaN equals itself (one
/// jit signature, not one per call) and -0.0 differs from 0.0 (1/x differs).
template <class T> bool same_static(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  } else if constexpr (std::is_floating_point_v<T>) {  // long double: padding bytes, compare the value
    return a == b ? std::signbit(a) == std::signbit(b) : (a != a && b != b);
  } else if constexpr (is_complex<T>::value) {
    return same_static(a.real(), b.real()) && same_static(a.imag(), b.imag());
  } else if constexpr (unregistered_tree<T>()) {  // check_static_leaf has said it: no second message
    return false;
  } else {
    static_assert(has_equal<T>::value,
                  "fx::jit: static (non-Tensor) arguments and pytree members must be comparable with == (they are "
                  "part of jit's cache key)");
    return static_cast<bool>(a == b);
  }
}

}  // namespace tree_detail

/// PyTree<T> says how to walk T: `flatten(x, leaves)` appends x's tensors in a fixed order and
/// `rebuild(structure, it)` returns a copy of `structure` whose tensors are taken from `it`.
/// Members that are not pytrees (ints, strings...) are static: copied from the structure, never
/// differentiated or batched. `same_structure(a, b)` compares everything but the tensors: container
/// sizes, map keys and static leaves (the type fixes the rest), like JAX's treedef equality.
template <class T, class> struct PyTree {
  static constexpr bool is_tree = false;
  static void flatten(const T&, std::vector<Tensor>&) { tree_detail::check_static_leaf<T>(); }
  template <class It> static T rebuild(const T& structure, It&) {
    tree_detail::check_static_leaf<T>();
    return structure;
  }
  static bool same_structure(const T& a, const T& b) {
    tree_detail::check_static_leaf<T>();
    return tree_detail::same_static(a, b);
  }
};

/// True when T holds Tensors (a leaf or a container of pytrees).
template <class T> inline constexpr bool is_pytree_v = PyTree<std::decay_t<T>>::is_tree;

template <> struct PyTree<Tensor> {
  static constexpr bool is_tree = true;
  static void flatten(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
  template <class It> static Tensor rebuild(const Tensor&, It& it) { return *it++; }
  static bool same_structure(const Tensor&, const Tensor&) { return true; }
};

template <class... Ts> struct PyTree<std::tuple<Ts...>> {
  static constexpr bool is_tree = (is_pytree_v<Ts> || ...);
  static void flatten(const std::tuple<Ts...>& t, std::vector<Tensor>& out) {
    std::apply([&](const auto&... e) { (PyTree<std::decay_t<decltype(e)>>::flatten(e, out), ...); }, t);
  }
  template <class It> static std::tuple<Ts...> rebuild(const std::tuple<Ts...>& s, It& it) {
    // Braced initialisation runs left to right, matching flatten's order.
    return std::apply(
        [&](const auto&... e) { return std::tuple<Ts...>{PyTree<std::decay_t<decltype(e)>>::rebuild(e, it)...}; }, s);
  }
  static bool same_structure(const std::tuple<Ts...>& a, const std::tuple<Ts...>& b) {
    return same_elements(a, b, std::index_sequence_for<Ts...>{});
  }

 private:
  template <size_t... I>
  static bool same_elements(const std::tuple<Ts...>& a, const std::tuple<Ts...>& b, std::index_sequence<I...>) {
    return (PyTree<Ts>::same_structure(std::get<I>(a), std::get<I>(b)) && ...);
  }
};

template <class A, class B> struct PyTree<std::pair<A, B>> {
  static constexpr bool is_tree = is_pytree_v<A> || is_pytree_v<B>;
  static void flatten(const std::pair<A, B>& p, std::vector<Tensor>& out) {
    PyTree<A>::flatten(p.first, out);
    PyTree<B>::flatten(p.second, out);
  }
  template <class It> static std::pair<A, B> rebuild(const std::pair<A, B>& s, It& it) {
    A a = PyTree<A>::rebuild(s.first, it);
    B b = PyTree<B>::rebuild(s.second, it);
    return {std::move(a), std::move(b)};
  }
  static bool same_structure(const std::pair<A, B>& x, const std::pair<A, B>& y) {
    return PyTree<A>::same_structure(x.first, y.first) && PyTree<B>::same_structure(x.second, y.second);
  }
};

template <class T, size_t N> struct PyTree<std::array<T, N>> {
  static constexpr bool is_tree = is_pytree_v<T>;
  static void flatten(const std::array<T, N>& a, std::vector<Tensor>& out) {
    for (const T& e : a) PyTree<T>::flatten(e, out);
  }
  template <class It> static std::array<T, N> rebuild(const std::array<T, N>& s, It& it) {
    std::array<T, N> r = s;
    for (size_t i = 0; i < N; ++i) r[i] = PyTree<T>::rebuild(s[i], it);
    return r;
  }
  static bool same_structure(const std::array<T, N>& a, const std::array<T, N>& b) {
    for (size_t i = 0; i < N; ++i)
      if (!PyTree<T>::same_structure(a[i], b[i])) return false;
    return true;
  }
};

template <class T> struct PyTree<std::vector<T>> {
  static constexpr bool is_tree = is_pytree_v<T>;
  static void flatten(const std::vector<T>& v, std::vector<Tensor>& out) {
    for (const T& e : v) PyTree<T>::flatten(e, out);
  }
  template <class It> static std::vector<T> rebuild(const std::vector<T>& s, It& it) {
    std::vector<T> r;
    r.reserve(s.size());
    for (const T& e : s) r.push_back(PyTree<T>::rebuild(e, it));
    return r;
  }
  static bool same_structure(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!PyTree<T>::same_structure(a[i], b[i])) return false;
    return true;
  }
};

template <class T> struct PyTree<std::map<std::string, T>> {  // leaves in key order
  static constexpr bool is_tree = is_pytree_v<T>;
  static void flatten(const std::map<std::string, T>& m, std::vector<Tensor>& out) {
    for (const auto& [k, v] : m) PyTree<T>::flatten(v, out);
  }
  template <class It> static std::map<std::string, T> rebuild(const std::map<std::string, T>& s, It& it) {
    std::map<std::string, T> r;
    for (const auto& [k, v] : s) r.emplace(k, PyTree<T>::rebuild(v, it));
    return r;
  }
  static bool same_structure(const std::map<std::string, T>& a, const std::map<std::string, T>& b) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
      if (i->first != j->first || !PyTree<T>::same_structure(i->second, j->second)) return false;
    return true;
  }
};

/// Any Boost.Hana Struct (BOOST_HANA_ADAPT_STRUCT / BOOST_HANA_DEFINE_STRUCT), members in order.
template <class S> struct PyTree<S, std::enable_if_t<boost::hana::Struct<S>::value>> {
  static constexpr bool is_tree = true;
  static void flatten(const S& s, std::vector<Tensor>& out) {
    boost::hana::for_each(boost::hana::accessors<S>(), [&](auto pair) {
      const auto& member = boost::hana::second(pair)(s);
      PyTree<std::decay_t<decltype(member)>>::flatten(member, out);
    });
  }
  template <class It> static S rebuild(const S& structure, It& it) {
    S r = structure;
    boost::hana::for_each(boost::hana::accessors<S>(), [&](auto pair) {
      auto& member = boost::hana::second(pair)(r);
      member = PyTree<std::decay_t<decltype(member)>>::rebuild(member, it);
    });
    return r;
  }
  static bool same_structure(const S& a, const S& b) {
    bool same = true;
    boost::hana::for_each(boost::hana::accessors<S>(), [&](auto pair) {
      const auto& get = boost::hana::second(pair);
      same = same && PyTree<std::decay_t<decltype(get(a))>>::same_structure(get(a), get(b));
    });
    return same;
  }
};

/// The structure of a pytree: rebuilds a T from a list of leaves.
template <class T> struct TreeDef {
  T structure;
  size_t num_leaves = 0;
};

/// The leaves of `tree` in flattening order (tuple/struct member order, map key order).
template <class T> std::vector<Tensor> tree_leaves(const T& tree) {
  std::vector<Tensor> out;
  PyTree<T>::flatten(tree, out);
  return out;
}

/// The leaves of `tree` and its structure.
template <class T> std::pair<std::vector<Tensor>, TreeDef<T>> tree_flatten(const T& tree) {
  std::vector<Tensor> leaves = tree_leaves(tree);
  size_t n = leaves.size();
  return {std::move(leaves), TreeDef<T>{tree, n}};
}

/// Rebuilds a tree of `def`'s structure from `leaves` (Error when the count differs).
template <class T> T tree_unflatten(const TreeDef<T>& def, const std::vector<Tensor>& leaves) {
  if (leaves.size() != def.num_leaves)
    detail::fail<Error>("tree_unflatten", "the structure has ", def.num_leaves, " leaves but ", leaves.size(),
                        " tensors were given. Pass one tensor per leaf.");
  auto it = leaves.begin();
  return PyTree<T>::rebuild(def.structure, it);
}

/// Applies f leafwise: f(leaf, leaves of `rest` at the same position...) -> Tensor. Every tree in
/// `rest` must have the same number of leaves as `tree` (Error otherwise); the result has tree's type.
template <class F, class T, class... Rest> T tree_map(F&& f, const T& tree, const Rest&... rest) {
  std::vector<Tensor> leaves = tree_leaves(tree);
  std::array<std::vector<Tensor>, sizeof...(Rest)> others{tree_leaves(rest)...};
  for (const auto& o : others)
    if (o.size() != leaves.size())
      detail::fail<Error>("tree_map", "trees have different numbers of leaves (", leaves.size(), " and ", o.size(),
                          "). Pass trees of the same structure.");
  std::vector<Tensor> mapped;
  mapped.reserve(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i)
    mapped.push_back(std::apply([&](const auto&... o) { return Tensor(f(leaves[i], o[i]...)); }, others));
  auto it = mapped.cbegin();
  return PyTree<T>::rebuild(tree, it);
}

}  // namespace fluxion
