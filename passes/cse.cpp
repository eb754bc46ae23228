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

/// An equation's identity for CSE: primitive, params and (canonically ordered) inputs.
struct Key {
  const Equation* eqn;
  std::vector<Atom> inputs;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<const void*>{}(k.eqn->primitive) ^ k.eqn->params->hash();
    for (const Atom& a : k.inputs) h = detail::hash_combine(h, hash_atom(a));
    return h;
  }
};
struct KeyEq {
  bool operator()(const Key& x, const Key& y) const {
    if (x.eqn->primitive != y.eqn->primitive || x.inputs.size() != y.inputs.size() ||
        x.eqn->outputs.size() != y.eqn->outputs.size() || !x.eqn->params->equals(*y.eqn->params))
      return false;
    for (size_t i = 0; i < x.inputs.size(); ++i)
      if (!same_atom(x.inputs[i], y.inputs[i])) return false;
    return true;
  }
};

}  // namespace cse_detail

Jaxpr cse(const Jaxpr& jaxpr) {
  using namespace cse_detail;
  Jaxpr out = jaxpr;
  out.constvars.clear();
  out.consts.clear();
  out.equations.clear();
  out.outputs.clear();
  // Replacement of each variable (itself unless merged into an earlier one).
  std::vector<Atom> repl(jaxpr.avals.size());
  for (size_t v = 0; v < repl.size(); ++v) repl[v] = Atom::of_var(static_cast<int32_t>(v));
  auto subst = [&](const Atom& a) { return a.is_literal() ? a : repl[a.var]; };

  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    const Tensor& value = jaxpr.consts[i];
    int32_t same = -1;
    for (size_t k = 0; k < out.consts.size() && same < 0; ++k)
      if (same_value(out.consts[k], value)) same = out.constvars[k];
    if (same >= 0) {
      repl[jaxpr.constvars[i]] = Atom::of_var(same);
      continue;
    }
    out.constvars.push_back(jaxpr.constvars[i]);
    out.consts.push_back(value);
  }

  // Keys point into out.equations, so reserve: no reallocation while the map is alive.
  out.equations.reserve(jaxpr.equations.size());
  std::unordered_map<Key, size_t, KeyHash, KeyEq> seen;
  for (const Equation& eqn : jaxpr.equations) {
    Equation e = eqn;
    for (Atom& a : e.inputs) a = subst(a);
    Key key{nullptr, e.inputs};
    if (e.primitive->traits.commutative && key.inputs.size() == 2 && atom_less(key.inputs[1], key.inputs[0]))
      std::swap(key.inputs[0], key.inputs[1]);
    out.equations.push_back(std::move(e));
    key.eqn = &out.equations.back();
    auto [it, inserted] = seen.emplace(std::move(key), out.equations.size() - 1);
    if (inserted) continue;
    // A repeat: its outputs become the earlier equation's, and it is dropped.
    const Equation& first = out.equations[it->second];
    const Equation& repeat = out.equations.back();
    for (size_t k = 0; k < repeat.outputs.size(); ++k) repl[repeat.outputs[k]] = Atom::of_var(first.outputs[k]);
    out.equations.pop_back();
  }
  for (const Atom& a : jaxpr.outputs) out.outputs.push_back(subst(a));
  return out;
}

}  // namespace fluxion::passes
