/// fx::export_fn / fx::load_exported: a traced, optimized function saved to a versioned file (a text
/// form a person can read, or a compact binary) and loaded back in another process, with no C++ of the
/// original. The loaded function runs compiled and composes with jit, vmap, grad and jvp like the
/// original. The format: docs/export_format.md.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/first.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/string.hpp>

#include "fluxion/jit.hpp"

namespace fluxion {

/// The structure of a pytree, without its tensors: container kinds and sizes, map keys, struct
/// member names, and static (non-Tensor) members by their printed value.
struct TreeDesc {
  enum class Kind : uint8_t { leaf, tuple, pair, array, vector, map, structure, value };
  Kind kind = Kind::leaf;
  std::vector<std::string> keys;  // map keys, struct member names: one per child
  std::string value;              // Kind::value: the value printed, or "<not printable>"
  std::vector<TreeDesc> children;

  size_t num_leaves() const;
  bool operator==(const TreeDesc& o) const {
    return kind == o.kind && keys == o.keys && value == o.value && children == o.children;
  }
  bool operator!=(const TreeDesc& o) const { return !(*this == o); }
};

/// "tuple(leaf, map{'b': leaf, 'w': leaf}, value('3'))": the form files store.
std::string to_string(const TreeDesc& d);
/// Parses to_string's form; Error naming `where` on anything else (nesting is bounded).
TreeDesc parse_tree_desc(const std::string& text, const std::string& where);

/// The encoding save() writes: chosen by the extension (".fxb" binary, anything else text), or forced.
enum class ExportFormat { by_extension, text, binary };

/// The current version of the format; files of a newer version are refused with both versions named.
inline constexpr int64_t kExportFormatVersion = 1;

namespace export_detail {

template <class T, class = void> struct printable : std::false_type {};
template <class T> struct printable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <class T> struct is_jitted : std::false_type {};
template <class F> struct is_jitted<Jitted<F>> : std::true_type {};

template <class T> TreeDesc describe(const T& x);

template <class T> TreeDesc describe_static(const T& x) {
  TreeDesc d;
  d.kind = TreeDesc::Kind::value;
  if constexpr (printable<T>::value) {
    std::ostringstream os;
    os.precision(17);
    os << x;
    d.value = os.str();
  } else {
    d.value = "<not printable>";
  }
  return d;
}

template <class T> struct Describe {
  static TreeDesc run(const T& x) { return describe_static(x); }
};
template <> struct Describe<Tensor> {
  static TreeDesc run(const Tensor&) { return TreeDesc{}; }
};
template <class... Ts> struct Describe<std::tuple<Ts...>> {
  static TreeDesc run(const std::tuple<Ts...>& t) {
    TreeDesc d;
    d.kind = TreeDesc::Kind::tuple;
    std::apply([&](const auto&... e) { (d.children.push_back(describe(e)), ...); }, t);
    return d;
  }
};
template <class A, class B> struct Describe<std::pair<A, B>> {
  static TreeDesc run(const std::pair<A, B>& p) {
    TreeDesc d;
    d.kind = TreeDesc::Kind::pair;
    d.children = {describe(p.first), describe(p.second)};
    return d;
  }
};
template <class T, size_t N> struct Describe<std::array<T, N>> {
  static TreeDesc run(const std::array<T, N>& a) {
    TreeDesc d;
    d.kind = TreeDesc::Kind::array;
    for (const T& e : a) d.children.push_back(describe(e));
    return d;
  }
};
template <class T> struct Describe<std::vector<T>> {
  static TreeDesc run(const std::vector<T>& v) {
    TreeDesc d;
    d.kind = TreeDesc::Kind::vector;
    for (const T& e : v) d.children.push_back(describe(e));
    return d;
  }
};
template <class T> struct Describe<std::map<std::string, T>> {
  static TreeDesc run(const std::map<std::string, T>& m) {
    TreeDesc d;
    d.kind = TreeDesc::Kind::map;
    for (const auto& [k, v] : m) {
      d.keys.push_back(k);
      d.children.push_back(describe(v));
    }
    return d;
  }
};

/// The description of `x`: containers of tensors by structure, anything else (ints, strings, containers
/// without tensors) as a static value.
template <class T> TreeDesc describe(const T& x) {
  if constexpr (!is_pytree_v<T>) {
    return describe_static(x);
  } else if constexpr (boost::hana::Struct<T>::value) {
    TreeDesc d;
    d.kind = TreeDesc::Kind::structure;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      d.keys.emplace_back(boost::hana::to<const char*>(boost::hana::first(pair)));
      d.children.push_back(describe(boost::hana::second(pair)(x)));
    });
    return d;
  } else {
    return Describe<T>::run(x);
  }
}

/// Throws "[exported 'name'] the result ... is <d>, but call<T> asks for <what>".
[[noreturn]] void fail_structure(const std::string& name, const std::string& path, const TreeDesc& d,
                                 const char* wanted);
/// A static value read back from its printed form (numbers, strings); Error when it does not parse.
double parse_static_number(const std::string& name, const std::string& path, const std::string& text);

template <class T> struct Rebuild;  // per container, below

/// Rebuilds a T from the recorded description `d` and the leaves at `it` (Exported::call<T>).
template <class T, class It> T rebuild(const std::string& name, const std::string& path, const TreeDesc& d, It& it);

template <class T, class It, size_t... I> T rebuild_tuple(const std::string& name, const std::string& path,
                                                          const TreeDesc& d, It& it, std::index_sequence<I...>) {
  // Braced initialisation runs left to right: the leaves are taken in flattening order.
  return T{rebuild<std::tuple_element_t<I, T>>(name, path + "." + std::to_string(I), d.children[I], it)...};
}

template <class T, class It> T rebuild(const std::string& name, const std::string& path, const TreeDesc& d, It& it) {
  using K = TreeDesc::Kind;
  auto expect = [&](K kind, size_t n, const char* wanted) {
    if (d.kind != kind || (n != size_t(-1) && d.children.size() != n)) fail_structure(name, path, d, wanted);
  };
  if constexpr (std::is_same_v<T, Tensor>) {
    expect(K::leaf, 0, "a Tensor");
    return *it++;
  } else if constexpr (!is_pytree_v<T>) {
    expect(K::value, 0, "a static value");
    if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(parse_static_number(name, path, d.value));
    else if constexpr (std::is_same_v<T, std::string>) return d.value;
    else return T{};
  } else if constexpr (boost::hana::Struct<T>::value) {
    constexpr size_t n = decltype(boost::hana::length(boost::hana::accessors<T>()))::value;
    expect(K::structure, n, "a struct");
    T r{};
    size_t i = 0;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      auto& member = boost::hana::second(pair)(r);
      member = rebuild<std::decay_t<decltype(member)>>(name, path + "." + d.keys[i], d.children[i], it);
      ++i;
    });
    return r;
  } else {
    return Rebuild<T>::run(name, path, d, it, expect);
  }
}

template <class... Ts> struct Rebuild<std::tuple<Ts...>> {
  template <class It, class Expect> static std::tuple<Ts...> run(const std::string& name, const std::string& path,
                                                                 const TreeDesc& d, It& it, const Expect& expect) {
    expect(TreeDesc::Kind::tuple, sizeof...(Ts), "a std::tuple");
    return rebuild_tuple<std::tuple<Ts...>>(name, path, d, it, std::index_sequence_for<Ts...>{});
  }
};
template <class A, class B> struct Rebuild<std::pair<A, B>> {
  template <class It, class Expect> static std::pair<A, B> run(const std::string& name, const std::string& path,
                                                               const TreeDesc& d, It& it, const Expect& expect) {
    expect(TreeDesc::Kind::pair, 2, "a std::pair");
    A a = rebuild<A>(name, path + ".first", d.children[0], it);
    B b = rebuild<B>(name, path + ".second", d.children[1], it);
    return {std::move(a), std::move(b)};
  }
};
template <class T, size_t N> struct Rebuild<std::array<T, N>> {
  template <class It, class Expect> static std::array<T, N> run(const std::string& name, const std::string& path,
                                                                const TreeDesc& d, It& it, const Expect& expect) {
    expect(TreeDesc::Kind::array, N, "a std::array");
    std::array<T, N> r;
    for (size_t i = 0; i < N; ++i) r[i] = rebuild<T>(name, path + "[" + std::to_string(i) + "]", d.children[i], it);
    return r;
  }
};
template <class T> struct Rebuild<std::vector<T>> {
  template <class It, class Expect> static std::vector<T> run(const std::string& name, const std::string& path,
                                                              const TreeDesc& d, It& it, const Expect& expect) {
    expect(TreeDesc::Kind::vector, size_t(-1), "a std::vector");
    std::vector<T> r;
    for (size_t i = 0; i < d.children.size(); ++i)
      r.push_back(rebuild<T>(name, path + "[" + std::to_string(i) + "]", d.children[i], it));
    return r;
  }
};
template <class T> struct Rebuild<std::map<std::string, T>> {
  template <class It, class Expect> static std::map<std::string, T> run(const std::string& name,
                                                                        const std::string& path, const TreeDesc& d,
                                                                        It& it, const Expect& expect) {
    expect(TreeDesc::Kind::map, size_t(-1), "a std::map");
    std::map<std::string, T> r;
    for (size_t i = 0; i < d.children.size(); ++i)
      r.emplace(d.keys[i], rebuild<T>(name, path + "['" + d.keys[i] + "']", d.children[i], it));
    return r;
  }
};

class ExportedState;

}  // namespace export_detail

/// An exported function: its optimized Jaxpr, the avals and pytree structures of its arguments and
/// results, and a name for messages. Cheap to copy (the state is shared and immutable).
class Exported {
 public:
  Exported() = default;
  explicit Exported(std::shared_ptr<const export_detail::ExportedState> state) : state_(std::move(state)) {}

  const std::string& name() const;
  /// A copy named `name` (error messages say "[exported 'name']"; saved files keep it).
  Exported named(const std::string& name) const;
  const Jaxpr& jaxpr() const;
  const std::vector<AbstractValue>& in_avals() const;
  const std::vector<AbstractValue>& out_avals() const;
  /// The arguments' structure (a tuple with one child per argument) and the result's.
  const TreeDesc& in_tree() const;
  const TreeDesc& out_tree() const;

  /// Calls the function: the arguments' tensors (pytree leaves) must have the recorded number, dtypes
  /// and shapes, and static arguments the recorded values. Returns the result's leaves. Runs the
  /// compiled plan eagerly; under jit, vmap, grad or jvp it is one jit_call, transformed as any.
  template <class... Args> std::vector<Tensor> operator()(const Args&... args) const {
    std::vector<Tensor> leaves;
    (jit_detail::flatten_dynamic(args, leaves), ...);
    TreeDesc tree;
    tree.kind = TreeDesc::Kind::tuple;
    (tree.children.push_back(export_detail::describe(args)), ...);
    return call_leaves(std::move(leaves), tree);
  }
  /// operator() with the result rebuilt as an `Out` (checked against the recorded result structure).
  template <class Out, class... Args> Out call(const Args&... args) const {
    std::vector<Tensor> outs = (*this)(args...);
    auto it = outs.cbegin();
    return export_detail::rebuild<Out>(name(), "result", out_tree(), it);
  }

  /// Calls with the arguments' tensors already flattened (all pytree leaves, in order); static arguments
  /// are the recorded ones. For callers without the argument types (a loader of any file).
  std::vector<Tensor> call_flat(const std::vector<Tensor>& leaves) const;

  /// Writes the file (text or binary, docs/export_format.md).
  void save(const std::string& path, ExportFormat format = ExportFormat::by_extension) const;
  /// The file's bytes in memory.
  std::string serialize(ExportFormat format) const;

 private:
  std::vector<Tensor> call_leaves(std::vector<Tensor> leaves, const TreeDesc& args) const;
  const export_detail::ExportedState& state() const;
  std::shared_ptr<const export_detail::ExportedState> state_;
};

namespace export_detail {
/// Builds the Exported of a jit signature: custom-rule calls replaced by their primal sub-Jaxprs, then
/// saved to the text form and read back (so what runs is exactly what a file holds; params that cannot
/// be saved fail here, naming the primitive).
Exported make_exported(const std::shared_ptr<const JitCallParams>& call, TreeDesc in_tree, TreeDesc out_tree);
/// CRC-32 (IEEE 802.3) of `n` bytes: the binary form's checksum (tests re-seal mutated files with it).
uint32_t crc32(const void* data, size_t n);
}  // namespace export_detail

/// Traces `f` on `args` like fx::jit (f itself may be an fx::jit object: its compiled signature for these
/// arguments is taken), optimizes it, and returns the Exported function. Arguments are Tensors, pytrees
/// of them, and static values (baked in; a call must pass the same values).
template <class F, class... Args> Exported export_fn(const F& f, const Args&... args) {
  if constexpr (export_detail::is_jitted<F>::value) {
    auto lowered = f.lower(args...);
    TreeDesc in_tree;
    in_tree.kind = TreeDesc::Kind::tuple;
    (in_tree.children.push_back(export_detail::describe(args)), ...);
    return export_detail::make_exported(lowered.first, std::move(in_tree), export_detail::describe(lowered.second));
  } else {
    return export_fn(jit(f), args...);
  }
}

/// Reads a file save() wrote (text or binary, detected). Any damage, a newer version or an unknown
/// primitive is a fluxion::Error naming the file and the line or byte offset; never a crash.
Exported load_exported(const std::string& path);
/// load_exported of bytes in memory; `source` names them in messages.
Exported parse_exported(const std::string& bytes, const std::string& source);

/// Saves tensors in the binary format's tensor encoding (test data across processes), and reads them back.
void save_tensors(const std::string& path, const std::vector<Tensor>& tensors);
std::vector<Tensor> load_tensors(const std::string& path);

}  // namespace fluxion
