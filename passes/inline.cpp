// inline_calls / inline_all_calls: splice the sub-Jaxprs of call-like primitives (Primitive::callee)
// into their caller, recursively, so the passes and the fusion see one flat Jaxpr.
#include "passes/passes.hpp"

namespace fluxion::passes {

namespace inline_detail {

using CallFilter = bool (*)(const Equation&);

bool transparent_call(const Equation& e) { return e.primitive->callee && e.primitive->callee_transparent; }
bool any_call(const Equation& e) { return e.primitive->callee != nullptr; }

/// Appends `sub`'s equations to `out`, reading sub's inputs from `args`; returns sub's outputs.
std::vector<Atom> splice(Jaxpr& out, const Jaxpr& sub, const std::vector<Atom>& args, CallFilter inlined) {
  std::vector<Atom> env(sub.avals.size());
  for (size_t i = 0; i < sub.invars.size(); ++i) env[sub.invars[i]] = args[i];
  for (size_t i = 0; i < sub.constvars.size(); ++i) {
    int32_t v = out.new_var(sub.avals[sub.constvars[i]]);
    out.constvars.push_back(v);
    out.consts.push_back(sub.consts[i]);
    env[sub.constvars[i]] = Atom::of_var(v);
  }
  auto read = [&](const Atom& a) { return a.is_literal() ? a : env[a.var]; };
  for (const Equation& e : sub.equations) {
    std::vector<Atom> ins;
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    if (e.primitive->callee && inlined(e)) {
      std::vector<Atom> outs = splice(out, e.primitive->callee(*e.params), ins, inlined);
      for (size_t k = 0; k < outs.size(); ++k) env[e.outputs[k]] = outs[k];
      continue;
    }
    Equation copy = e;
    copy.inputs = std::move(ins);
    copy.outputs.clear();
    for (int32_t v : e.outputs) {
      int32_t nv = out.new_var(sub.avals[v]);
      copy.outputs.push_back(nv);
      env[v] = Atom::of_var(nv);
    }
    out.equations.push_back(std::move(copy));
  }
  std::vector<Atom> results;
  for (const Atom& a : sub.outputs) results.push_back(read(a));
  return results;
}

}  // namespace inline_detail

Jaxpr inline_calls_where(Jaxpr jaxpr, bool (*chosen)(const Equation&)) {
  bool any = false;
  for (const Equation& e : jaxpr.equations) any |= e.primitive->callee && chosen(e);
  if (!any) return jaxpr;
  Jaxpr out;
  std::vector<Atom> args;
  for (int32_t v : jaxpr.invars) {
    int32_t nv = out.new_var(jaxpr.avals[v]);
    out.invars.push_back(nv);
    args.push_back(Atom::of_var(nv));
  }
  out.outputs = inline_detail::splice(out, jaxpr, args, chosen);
  return out;
}

Jaxpr inline_calls(Jaxpr jaxpr) { return inline_calls_where(std::move(jaxpr), &inline_detail::transparent_call); }
Jaxpr inline_all_calls(Jaxpr jaxpr) { return inline_calls_where(std::move(jaxpr), &inline_detail::any_call); }

}  // namespace fluxion::passes
