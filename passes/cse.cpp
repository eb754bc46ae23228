// Common-subexpression elimination: equal constants merge, repeated equations reuse earlier outputs.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "passes/passes.hpp"

namespace fluxion::passes {
namespace cse_detail {

/// Constants up to this many elements are compared by value; larger ones only by identity.
constexpr int64_t kMaxCompared = 1 << 16;

/// The bytes of a concrete CPU tensor, or nullptr (tracers, device arrays).
const void* host_bytes(const Tensor& t) {
  if (!t.defined() || t.is_tracer() || !t.device().is_cpu()) return nullptr;
  return t.array().data();
}

/// True when two constants hold the same dtype, shape and bits (NaN payloads included).
bool same_value(const Tensor& a, const Tensor& b) {
  if (a.impl() == b.impl()) return true;
  if (a.aval() != b.aval() || a.size() > kMaxCompared) return false;
  const void *pa = host_bytes(a), *pb = host_bytes(b);
  return pa && pb && std::memcmp(pa, pb, static_cast<size_t>(a.size() * dtype_size(a.dtype()))) == 0;
}

size_t hash_atom(const Atom& a) {
  if (!a.is_literal()) return std::hash<int32_t>{}(a.var);
  size_t h = static_cast<size_t>(a.literal.dtype()) * 1000003u;
  const auto* p = static_cast<const unsigned char*>(host_bytes(a.literal));
  for (int64_t i = 0; p && i < dtype_size(a.literal.dtype()); ++i) h = h * 131 + p[i];
  return h;
}

bool same_atom(const Atom& a, const Atom& b) {
  if (a.is_literal() != b.is_literal()) return false;
  return a.is_literal() ? same_value(a.literal, b.literal) : a.var == b.var;
}

/// A strict order on atoms (vars by id, then literals by dtype and bytes): commutative inputs
/// are sorted with it so that `add a b` and `add b a` get the same key.
bool atom_less(const Atom& a, const Atom& b) {
  if (a.is_literal() != b.is_literal()) return !a.is_literal();
  if (!a.is_literal()) return a.var < b.var;
  if (a.literal.dtype() != b.literal.dtype()) return a.literal.dtype() < b.literal.dtype();
  const void *pa = host_bytes(a.literal), *pb = host_bytes(b.literal);
  if (!pa || !pb) return false;
  return std::memcmp(pa, pb, static_cast<size_t>(dtype_size(a.literal.dtype()))) < 0;
}

/// An equation's identity for CSE: primitive, params and inputs (of a commutative binary one in
/// canonical order: `swapped` reads them the other way round, so `add a b` and `add b a` match).
struct Key {
  const Equation* eqn;
  bool swapped;
  const Atom& input(size_t i) const { return eqn->inputs[swapped ? 1 - i : i]; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<const void*>{}(k.eqn->primitive) ^ k.eqn->params->hash();
    for (size_t i = 0; i < k.eqn->inputs.size(); ++i) h = detail::hash_combine(h, hash_atom(k.input(i)));
    return h;
  }
};
struct KeyEq {
  bool operator()(const Key& x, const Key& y) const {
    if (x.eqn->primitive != y.eqn->primitive || x.eqn->inputs.size() != y.eqn->inputs.size() ||
        x.eqn->outputs.size() != y.eqn->outputs.size() || !x.eqn->params->equals(*y.eqn->params))
      return false;
    for (size_t i = 0; i < x.eqn->inputs.size(); ++i)
      if (!same_atom(x.input(i), y.input(i))) return false;
    return true;
  }
};

/// A hash consistent with same_value: by bytes where those are compared, else by identity.
struct ConstHash {
  size_t operator()(const Tensor& t) const {
    const auto* p = static_cast<const unsigned char*>(host_bytes(t));
    if (!p || t.size() > kMaxCompared) return std::hash<const void*>{}(t.impl().get());
    size_t h = static_cast<size_t>(t.dtype()) * 1000003u;
    for (int64_t d : t.shape()) h = detail::hash_combine(h, std::hash<int64_t>{}(d));
    const auto n = static_cast<size_t>(t.size() * dtype_size(t.dtype()));
    for (size_t i = 0; i < n; ++i) h = h * 131 + p[i];
    return h;
  }
};
struct ConstEq {
  bool operator()(const Tensor& a, const Tensor& b) const { return same_value(a, b); }
};

}  // namespace cse_detail

Jaxpr cse(Jaxpr jaxpr) {
  using namespace cse_detail;
  // Replacement of each variable (itself unless merged into an earlier one).
  std::vector<int32_t> repl(jaxpr.avals.size());
  for (size_t v = 0; v < repl.size(); ++v) repl[v] = static_cast<int32_t>(v);
  auto subst = [&](Atom& a) {
    if (!a.is_literal()) a.var = repl[a.var];
  };

  // The first constvar holding each value; later equal ones are dropped (compacted in place).
  std::unordered_map<Tensor, int32_t, ConstHash, ConstEq> const_of;
  size_t kept = 0;
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    auto [it, inserted] = const_of.emplace(jaxpr.consts[i], jaxpr.constvars[i]);
    if (!inserted) {
      repl[jaxpr.constvars[i]] = it->second;
      continue;
    }
    jaxpr.constvars[kept] = jaxpr.constvars[i];
    if (kept != i) jaxpr.consts[kept] = std::move(jaxpr.consts[i]);
    ++kept;
  }
  jaxpr.constvars.resize(kept);
  jaxpr.consts.resize(kept);

  // Equations are compacted in place: kept ones move to the front, so the keys' pointers to
  // positions before `kept` stay valid (nothing is written there again, nothing reallocates).
  std::unordered_map<Key, size_t, KeyHash, KeyEq> seen;
  seen.reserve(jaxpr.equations.size());
  kept = 0;
  for (size_t i = 0; i < jaxpr.equations.size(); ++i) {
    Equation& e = jaxpr.equations[i];
    for (Atom& a : e.inputs) subst(a);
    const bool swapped = e.primitive->traits.commutative && e.inputs.size() == 2 && atom_less(e.inputs[1], e.inputs[0]);
    if (kept != i) jaxpr.equations[kept] = std::move(e);
    auto [it, inserted] = seen.emplace(Key{&jaxpr.equations[kept], swapped}, kept);
    if (inserted) {
      ++kept;
      continue;
    }
    // A repeat: its outputs become the earlier equation's, and it is dropped.
    const Equation& first = jaxpr.equations[it->second];
    const Equation& repeat = jaxpr.equations[kept];
    for (size_t k = 0; k < repeat.outputs.size(); ++k) repl[repeat.outputs[k]] = first.outputs[k];
  }
  jaxpr.equations.resize(kept, Equation{});
  for (Atom& a : jaxpr.outputs) subst(a);
  return jaxpr;
}

}  // namespace fluxion::passes
