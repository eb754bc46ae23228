// The Jaxpr typechecker: re-derives every equation's avals with the shape rules.
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

void typecheck(const Jaxpr& jaxpr) {
  std::vector<char> defined(jaxpr.avals.size(), 0);
  auto define = [&](int32_t v, const char* what) {
    if (v < 0 || static_cast<size_t>(v) >= jaxpr.avals.size())
      detail::fail<Error>("typecheck", what, " refers to variable id ", v, " outside the Jaxpr (", jaxpr.avals.size(),
                          " variables).");
    if (defined[v]) detail::fail<Error>("typecheck", what, " defines variable id ", v, " twice.");
    defined[v] = 1;
  };
  auto use = [&](const Atom& a, const char* what) {
    if (a.is_literal()) {
      if (!a.literal.defined() || a.literal.is_tracer() || a.literal.ndim() != 0)
        detail::fail<Error>("typecheck", what, " has a literal that is not a concrete scalar.");
      return;
    }
    if (a.var < 0 || static_cast<size_t>(a.var) >= defined.size() || !defined[a.var])
      detail::fail<Error>("typecheck", what, " uses variable id ", a.var, " before it is defined.");
  };
  if (jaxpr.consts.size() != jaxpr.constvars.size())
    detail::fail<Error>("typecheck", jaxpr.constvars.size(), " constvars but ", jaxpr.consts.size(),
                        " constant values.");
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    define(jaxpr.constvars[i], "a constvar");
    if (jaxpr.consts[i].aval() != jaxpr.avals[jaxpr.constvars[i]])
      detail::fail<Error>("typecheck", "constant ", i, " is ", jaxpr.consts[i].aval(), " but its variable is typed ",
                          jaxpr.avals[jaxpr.constvars[i]], ".");
  }
  for (int32_t v : jaxpr.invars) define(v, "an input");
  for (size_t e = 0; e < jaxpr.equations.size(); ++e) {
    const Equation& eqn = jaxpr.equations[e];
    const std::string where = "equation " + std::to_string(e) + " (" + eqn.primitive->name + ")";
    std::vector<AbstractValue> in;
    for (const Atom& a : eqn.inputs) {
      use(a, where.c_str());
      in.push_back(jaxpr.aval_of(a));
    }
    std::vector<AbstractValue> out = eqn.primitive->abstract_eval(in, *eqn.params);
    if (out.size() != eqn.outputs.size())
      detail::fail<Error>("typecheck", where, " produces ", out.size(), " values but binds ", eqn.outputs.size(),
                          " variables.");
    for (size_t i = 0; i < out.size(); ++i) {
      define(eqn.outputs[i], where.c_str());
      if (out[i] != jaxpr.avals[eqn.outputs[i]])
        detail::fail<Error>("typecheck", where, " output ", i, " is ", out[i], " by the shape rule but typed ",
                            jaxpr.avals[eqn.outputs[i]], ".");
    }
  }
  for (const Atom& a : jaxpr.outputs) use(a, "an output");
}

}  // namespace fluxion
