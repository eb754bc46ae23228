// The Jaxpr typechecker: re-derives every equation's avals with the shape rules.
#include <string>
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

void typecheck(const Jaxpr& jaxpr) {
  // What a message names: "a constvar", "an input", "an output", or equation `eqn` (text built only
  // on failure: the passes typecheck every result, so the walk must not allocate per equation).
  struct Where {
    const char* what;
    const Jaxpr* j;
    size_t eqn;
  };
  auto text = [](const Where& w) {
    if (!w.j) return std::string(w.what);
    return "equation " + std::to_string(w.eqn) + " (" + w.j->equations[w.eqn].primitive->name + ")";
  };
  std::vector<char> defined(jaxpr.avals.size(), 0);
  auto define = [&](int32_t v, const Where& w) {
    if (v < 0 || static_cast<size_t>(v) >= jaxpr.avals.size())
      detail::fail<Error>("typecheck", text(w), " refers to variable id ", v, " outside the Jaxpr (",
                          jaxpr.avals.size(), " variables).");
    if (defined[v]) detail::fail<Error>("typecheck", text(w), " defines variable id ", v, " twice.");
    defined[v] = 1;
  };
  auto use = [&](const Atom& a, const Where& w) {
    if (a.is_literal()) {
      if (!a.literal.defined() || a.literal.is_tracer() || a.literal.ndim() != 0)
        detail::fail<Error>("typecheck", text(w), " has a literal that is not a concrete scalar.");
      return;
    }
    if (a.var < 0 || static_cast<size_t>(a.var) >= defined.size() || !defined[a.var])
      detail::fail<Error>("typecheck", text(w), " uses variable id ", a.var, " before it is defined.");
  };
  if (jaxpr.consts.size() != jaxpr.constvars.size())
    detail::fail<Error>("typecheck", jaxpr.constvars.size(), " constvars but ", jaxpr.consts.size(),
                        " constant values.");
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    define(jaxpr.constvars[i], Where{"a constvar", nullptr, 0});
    if (jaxpr.consts[i].aval() != jaxpr.avals[jaxpr.constvars[i]])
      detail::fail<Error>("typecheck", "constant ", i, " is ", jaxpr.consts[i].aval(), " but its variable is typed ",
                          jaxpr.avals[jaxpr.constvars[i]], ".");
  }
  for (int32_t v : jaxpr.invars) define(v, Where{"an input", nullptr, 0});
  std::vector<AbstractValue> in;  // reused: assigning an aval keeps the shape's capacity
  for (size_t e = 0; e < jaxpr.equations.size(); ++e) {
    const Equation& eqn = jaxpr.equations[e];
    const Where where{nullptr, &jaxpr, e};
    in.resize(eqn.inputs.size());
    for (size_t k = 0; k < eqn.inputs.size(); ++k) {
      use(eqn.inputs[k], where);
      in[k] = jaxpr.aval_of(eqn.inputs[k]);
    }
    std::vector<AbstractValue> out = eqn.primitive->abstract_eval(in, *eqn.params);
    if (out.size() != eqn.outputs.size())
      detail::fail<Error>("typecheck", text(where), " produces ", out.size(), " values but binds ", eqn.outputs.size(),
                          " variables.");
    for (size_t i = 0; i < out.size(); ++i) {
      define(eqn.outputs[i], where);
      if (out[i] != jaxpr.avals[eqn.outputs[i]])
        detail::fail<Error>("typecheck", text(where), " output ", i, " is ", out[i], " by the shape rule but typed ",
                            jaxpr.avals[eqn.outputs[i]], ".");
    }
  }
  for (const Atom& a : jaxpr.outputs) use(a, Where{"an output", nullptr, 0});
}

}  // namespace fluxion
