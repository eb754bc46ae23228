// partial_eval_jaxpr: a replay of the Jaxpr under two staging interpreters, the known side below
// the unknown (partial-evaluation) side.
#include "transforms/partial_eval.hpp"

#include <unordered_map>

namespace fluxion {

PartialEvalSplit partial_eval_jaxpr(const Jaxpr& jaxpr, const std::vector<bool>& unknown_inputs) {
  if (unknown_inputs.size() != jaxpr.invars.size())
    detail::fail<Error>("partial_eval", "got ", unknown_inputs.size(), " input flags for a Jaxpr with ",
                        jaxpr.invars.size(), " inputs. Pass one flag per input.");
  // `known` stages everything bound under it; `unknown` (its child) forwards equations whose
  // inputs are all outside it to `known`, applies partial-evaluation rules to mixed ones, and
  // stages the rest. Sub-Jaxprs are device-neutral: tracers are placed on the CPU.
  StageInterpreter known("partial_eval");
  std::vector<Tensor> args(jaxpr.invars.size()), known_args;
  std::vector<Tensor> outs;
  PartialEvalSplit split;
  {
    InterpreterScope known_scope(known);
    StageInterpreter unknown("partial_eval", /*forward_known=*/true);
    for (size_t i = 0; i < args.size(); ++i) {
      const AbstractValue& aval = jaxpr.avals[jaxpr.invars[i]];
      if (!unknown_inputs[i]) known_args.push_back(args[i] = known.new_input(aval));
    }
    for (size_t i = 0; i < args.size(); ++i)
      if (unknown_inputs[i]) args[i] = unknown.new_input(jaxpr.avals[jaxpr.invars[i]]);
    {
      InterpreterScope unknown_scope(unknown);
      outs = eval_jaxpr(jaxpr, args);
    }
    std::vector<Tensor> unknown_outs;
    for (const Tensor& o : outs) {
      const bool is_known = !unknown.owns(o);
      split.out_known.push_back(is_known);
      if (!is_known) unknown_outs.push_back(o);
    }
    split.unknown = unknown.finish(unknown_outs);
  }
  // The unknown side's constants made by the known side are residuals: they become its leading
  // inputs, and extra outputs of the known side. Other constants (concrete values) stay.
  Jaxpr& u = split.unknown;
  std::vector<int32_t> residual_vars, constvars;
  std::vector<Tensor> residuals, consts;
  for (size_t i = 0; i < u.constvars.size(); ++i) {
    if (known.owns(u.consts[i])) {
      residual_vars.push_back(u.constvars[i]);
      residuals.push_back(u.consts[i]);
    } else {
      constvars.push_back(u.constvars[i]);
      consts.push_back(u.consts[i]);
    }
  }
  u.constvars = std::move(constvars);
  u.consts = std::move(consts);
  u.invars.insert(u.invars.begin(), residual_vars.begin(), residual_vars.end());
  split.num_residuals = residuals.size();
  // Residuals that are known inputs themselves, by the input's tracer (the last input of equal ones).
  std::unordered_map<const TensorImpl*, int> input_of;
  for (size_t i = 0, k = 0; i < args.size(); ++i)
    if (!unknown_inputs[i]) input_of[known_args[k++].impl().get()] = static_cast<int>(i);
  for (const Tensor& r : residuals) {
    auto it = input_of.find(r.impl().get());
    split.residual_input.push_back(it == input_of.end() ? -1 : it->second);
  }
  std::vector<Tensor> known_outs;
  for (size_t i = 0; i < outs.size(); ++i)
    if (split.out_known[i]) known_outs.push_back(outs[i]);
  known_outs.insert(known_outs.end(), residuals.begin(), residuals.end());
  split.known = known.finish(known_outs);
  return split;
}

}  // namespace fluxion
