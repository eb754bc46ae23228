// Dead-code elimination: keeps the equations the outputs depend on, then renumbers densely, in place.
#include "passes/passes.hpp"

namespace fluxion::passes {
namespace dce_detail {

/// Keeps only the constvars marked in `keep_const` and the equations marked in `keep_eqn`, in
/// place, and renumbers the variables 0..n-1 in definition order (constvars, invars, equations).
void compact(Jaxpr& jaxpr, const std::vector<char>& keep_const, const std::vector<char>& keep_eqn) {
  std::vector<int32_t> id(jaxpr.avals.size(), -1);
  std::vector<AbstractValue> avals;
  auto define = [&](int32_t v) {
    id[v] = static_cast<int32_t>(avals.size());
    avals.push_back(std::move(jaxpr.avals[v]));
    return id[v];
  };
  auto renumber = [&](Atom& a) {
    if (!a.is_literal()) a.var = id[a.var];
  };
  size_t kept = 0;
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    if (!keep_const[i]) continue;
    jaxpr.constvars[kept] = define(jaxpr.constvars[i]);
    if (kept != i) jaxpr.consts[kept] = std::move(jaxpr.consts[i]);
    ++kept;
  }
  jaxpr.constvars.resize(kept);
  jaxpr.consts.resize(kept);
  for (int32_t& v : jaxpr.invars) v = define(v);
  kept = 0;
  for (size_t e = 0; e < jaxpr.equations.size(); ++e) {
    if (!keep_eqn[e]) continue;
    Equation& eqn = jaxpr.equations[e];
    for (Atom& a : eqn.inputs) renumber(a);
    for (int32_t& v : eqn.outputs) v = define(v);
    if (kept != e) jaxpr.equations[kept] = std::move(eqn);
    ++kept;
  }
  jaxpr.equations.resize(kept, Equation{});
  for (Atom& a : jaxpr.outputs) renumber(a);
  jaxpr.avals = std::move(avals);
}

}  // namespace dce_detail

Jaxpr dce(Jaxpr jaxpr) {
  std::vector<char> live(jaxpr.avals.size(), 0);
  auto use = [&](const Atom& a) {
    if (!a.is_literal()) live[a.var] = 1;
  };
  for (const Atom& a : jaxpr.outputs) use(a);
  // Backwards: an equation is needed when one of its outputs is (all primitives are pure).
  std::vector<char> keep_eqn(jaxpr.equations.size(), 0);
  for (size_t e = jaxpr.equations.size(); e-- > 0;) {
    const Equation& eqn = jaxpr.equations[e];
    for (int32_t v : eqn.outputs) keep_eqn[e] |= live[v];
    if (keep_eqn[e])
      for (const Atom& a : eqn.inputs) use(a);
  }
  std::vector<char> keep_const(jaxpr.constvars.size(), 0);
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) keep_const[i] = live[jaxpr.constvars[i]];
  dce_detail::compact(jaxpr, keep_const, keep_eqn);
  return jaxpr;
}

}  // namespace fluxion::passes
