// Dead-code elimination: keeps the equations the outputs depend on, then renumbers densely.
#include "passes/passes.hpp"

namespace fluxion::passes {
namespace dce_detail {

/// `jaxpr` with variables renumbered 0..n-1 in definition order (constvars, invars, equations),
/// keeping only the constvars marked in `keep_const` and the equations marked in `keep_eqn`.
Jaxpr renumbered(const Jaxpr& jaxpr, const std::vector<char>& keep_const, const std::vector<char>& keep_eqn) {
  Jaxpr out;
  std::vector<int32_t> id(jaxpr.avals.size(), -1);
  auto define = [&](int32_t v) { return id[v] = out.new_var(jaxpr.avals[v]); };
  auto atom = [&](const Atom& a) { return a.is_literal() ? a : Atom::of_var(id[a.var]); };
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    if (!keep_const[i]) continue;
    out.constvars.push_back(define(jaxpr.constvars[i]));
    out.consts.push_back(jaxpr.consts[i]);
  }
  for (int32_t v : jaxpr.invars) out.invars.push_back(define(v));
  for (size_t e = 0; e < jaxpr.equations.size(); ++e) {
    if (!keep_eqn[e]) continue;
    const Equation& eqn = jaxpr.equations[e];
    Equation copy{eqn.primitive, eqn.params, {}, {}};
    for (const Atom& a : eqn.inputs) copy.inputs.push_back(atom(a));
    for (int32_t v : eqn.outputs) copy.outputs.push_back(define(v));
    out.equations.push_back(std::move(copy));
  }
  for (const Atom& a : jaxpr.outputs) out.outputs.push_back(atom(a));
  return out;
}

}  // namespace dce_detail

Jaxpr dce(const Jaxpr& jaxpr) {
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
  return dce_detail::renumbered(jaxpr, keep_const, keep_eqn);
}

}  // namespace fluxion::passes
