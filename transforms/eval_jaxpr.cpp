// eval_jaxpr: replays a Jaxpr's equations through bind, so the replay can itself be transformed.
#include "fluxion/jaxpr.hpp"

namespace fluxion {

std::vector<Tensor> eval_jaxpr(const Jaxpr& jaxpr, const std::vector<Tensor>& args) {
  if (args.size() != jaxpr.invars.size())
    detail::fail<Error>("eval_jaxpr", "the Jaxpr takes ", jaxpr.invars.size(), " inputs, got ", args.size(),
                        ". Pass one tensor per input variable.");
  std::vector<Tensor> env(jaxpr.avals.size());
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) env[jaxpr.constvars[i]] = jaxpr.consts[i];
  for (size_t i = 0; i < args.size(); ++i) {
    const AbstractValue& want = jaxpr.avals[jaxpr.invars[i]];
    if (args[i].aval() != want)
      detail::fail<ShapeError>("eval_jaxpr", "input ", i, " is ", args[i].aval(), " but the Jaxpr expects ", want,
                               ". Pass inputs with the traced shapes and dtypes.");
    env[jaxpr.invars[i]] = args[i];
  }
  auto read = [&](const Atom& a) -> const Tensor& { return a.is_literal() ? a.literal : env[a.var]; };
  std::vector<Tensor> in;
  for (const Equation& eqn : jaxpr.equations) {
    in.clear();
    for (const Atom& a : eqn.inputs) in.push_back(read(a));
    std::vector<Tensor> out = fluxion::bind(*eqn.primitive, in, *eqn.params);
    for (size_t i = 0; i < out.size(); ++i) env[eqn.outputs[i]] = std::move(out[i]);
  }
  std::vector<Tensor> outs;
  outs.reserve(jaxpr.outputs.size());
  for (const Atom& a : jaxpr.outputs) outs.push_back(read(a));
  return outs;
}

std::vector<Tensor> eval_jaxpr_on(const Jaxpr& j, const std::vector<Tensor>& args, Backend backend) {
  std::vector<Tensor> env(j.avals.size());
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i]] = j.consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[j.invars[i]] = args[i];
  std::vector<Tensor> in;
  for (const Equation& e : j.equations) {
    in.clear();
    for (const Atom& a : e.inputs) in.push_back(a.is_literal() ? a.literal : env[a.var]);
    std::vector<Tensor> r = eval_primitive(*e.primitive, in, *e.params, backend);
    for (size_t k = 0; k < r.size(); ++k) env[e.outputs[k]] = std::move(r[k]);
  }
  std::vector<Tensor> outs;
  for (const Atom& a : j.outputs) outs.push_back(a.is_literal() ? a.literal : env[a.var]);
  return outs;
}

}  // namespace fluxion
