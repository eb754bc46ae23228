// partial_eval_jaxpr: a forward pass marking unknown variables, then two filtered copies.
#include "transforms/partial_eval.hpp"

namespace fluxion {

namespace partial_eval_detail {
/// Keeps only the constvars that `j` still reads (the split copies every constant to both sides).
void drop_unused_consts(Jaxpr& j) {
  std::vector<bool> used(j.avals.size(), false);
  for (const Equation& e : j.equations)
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) used[a.var] = true;
  for (const Atom& a : j.outputs)
    if (!a.is_literal()) used[a.var] = true;
  std::vector<int32_t> vars;
  std::vector<Tensor> values;
  for (size_t i = 0; i < j.constvars.size(); ++i)
    if (used[j.constvars[i]]) {
      vars.push_back(j.constvars[i]);
      values.push_back(j.consts[i]);
    }
  j.constvars = std::move(vars);
  j.consts = std::move(values);
}
}  // namespace partial_eval_detail

PartialEvalSplit partial_eval_jaxpr(const Jaxpr& jaxpr, const std::vector<bool>& unknown_inputs) {
  if (unknown_inputs.size() != jaxpr.invars.size())
    detail::fail<Error>("partial_eval", "got ", unknown_inputs.size(), " input flags for a Jaxpr with ",
                        jaxpr.invars.size(), " inputs. Pass one flag per input.");
  std::vector<bool> unknown(jaxpr.avals.size(), false);
  for (size_t i = 0; i < jaxpr.invars.size(); ++i) unknown[jaxpr.invars[i]] = unknown_inputs[i];
  auto is_unknown = [&](const Atom& a) { return !a.is_literal() && unknown[a.var]; };

  PartialEvalSplit split;
  split.known.avals = split.unknown.avals = jaxpr.avals;
  split.known.constvars = split.unknown.constvars = jaxpr.constvars;
  split.known.consts = split.unknown.consts = jaxpr.consts;
  std::vector<bool> is_const(jaxpr.avals.size(), false);
  for (int32_t v : jaxpr.constvars) is_const[v] = true;

  for (size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (!unknown_inputs[i]) split.known.invars.push_back(jaxpr.invars[i]);
  // Residuals: known, non-constant variables read by unknown equations or returned as unknown
  // outputs' inputs; collected in first-use order so the split is deterministic.
  std::vector<bool> is_residual(jaxpr.avals.size(), false);
  std::vector<int32_t> residuals;
  for (const Equation& e : jaxpr.equations) {
    bool any = false;
    for (const Atom& a : e.inputs) any |= is_unknown(a);
    if (!any) {
      split.known.equations.push_back(e);
      continue;
    }
    for (int32_t v : e.outputs) unknown[v] = true;
    for (const Atom& a : e.inputs)
      if (!a.is_literal() && !unknown[a.var] && !is_const[a.var] && !is_residual[a.var]) {
        is_residual[a.var] = true;
        residuals.push_back(a.var);
      }
    split.unknown.equations.push_back(e);
  }
  for (const Atom& a : jaxpr.outputs) {
    bool known = !is_unknown(a);
    split.out_known.push_back(known);
    (known ? split.known.outputs : split.unknown.outputs).push_back(a);
  }
  for (int32_t v : residuals) split.known.outputs.push_back(Atom::of_var(v));
  split.num_residuals = residuals.size();
  split.unknown.invars = residuals;
  for (size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (unknown_inputs[i]) split.unknown.invars.push_back(jaxpr.invars[i]);
  partial_eval_detail::drop_unused_consts(split.known);
  partial_eval_detail::drop_unused_consts(split.unknown);
  return split;
}

}  // namespace fluxion
