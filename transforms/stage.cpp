// The staging interpreter: records each bound primitive as an equation of a Jaxpr.
#include <new>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

namespace stage_detail {

/// A Jaxpr variable seen from the traced function.
class StageTracer final : public TracerImpl {
 public:
  StageTracer(AbstractValue aval, Device device, std::shared_ptr<InterpreterTag> owner, int32_t var)
      : TracerImpl(std::move(aval), device, std::move(owner)), var_(var) {}
  int32_t var() const { return var_; }

 private:
  int32_t var_;
};

/// One NoParams shared by every staged equation without params (one allocation less per equation).
const std::shared_ptr<const Params>& shared_no_params() {
  static const std::shared_ptr<const Params> none = no_params().clone();
  return none;
}

}  // namespace stage_detail

using stage_detail::StageTracer;

StageInterpreter::StageInterpreter(const char* transform, bool forward_known)
    : Interpreter(transform), forward_known_(forward_known) {}

Tensor StageInterpreter::new_input(const AbstractValue& aval, Device device) {
  int32_t v = jaxpr_.new_var(aval);
  jaxpr_.invars.push_back(v);
  return Tensor(std::make_shared<StageTracer>(aval, device, tag(), v));
}

Atom StageInterpreter::atom_for(const Tensor& t, const char* op) {
  check_visible(t, op);
  if (owns(t)) return Atom::of_var(static_cast<const StageTracer&>(*t.impl()).var());
  // A concrete scalar is printed inline as a literal; anything else (including values traced by
  // an enclosing transform) becomes a constant input of the Jaxpr.
  if (!t.is_tracer() && t.ndim() == 0) return Atom::of_literal(t);
  auto [it, inserted] = const_vars_.emplace(t.impl().get(), 0);
  if (!inserted) return Atom::of_var(it->second);
  int32_t v = jaxpr_.new_var(t.aval());
  jaxpr_.constvars.push_back(v);
  jaxpr_.consts.push_back(t);
  return Atom::of_var(it->second = v);
}

FLUXION_REPL_INLINE std::vector<Tensor> StageInterpreter::process(const Primitive& p, const std::vector<Tensor>& inputs,
                                                                  const Params& params) {
  if (forward_known_) {
    std::vector<bool> known(inputs.size());
    bool any_known = false, any_unknown = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      known[i] = !owns(inputs[i]);
      (known[i] ? any_known : any_unknown) = true;
    }
    if (!any_unknown) {
      InterpreterScope parent_scope(*parent());
      return fluxion::bind(p, inputs, params);
    }
    // Primitives holding sub-Jaxprs split them, so their known part runs now.
    if (any_known && p.partial_eval) return p.partial_eval(p, *this, inputs, known, params);
  }
  return stage_equation(p, inputs, params);
}

std::vector<Tensor> StageInterpreter::stage_equation(const Primitive& p, const std::vector<Tensor>& inputs,
                                                     const Params& params) {
  try {
    return record(p, inputs, params);
  } catch (const std::bad_alloc&) {
    detail::fail<OutOfMemoryError>(tag()->transform, "out of memory while staging equation ", jaxpr_.equations.size(),
                                   " (", p.name, ") of the traced program. Free memory, or make the program ",
                                   "smaller: fx::scan / fx::fori_loop instead of an unrolled loop.");
  }
}

std::vector<Tensor> StageInterpreter::record(const Primitive& p, const std::vector<Tensor>& inputs,
                                             const Params& params) {
  Equation eqn;
  eqn.primitive = &p;
  eqn.inputs.reserve(inputs.size());
  std::vector<AbstractValue> in_avals;
  in_avals.reserve(inputs.size());
  Device device = inputs.empty() ? Device::cpu() : inputs[0].device();
  for (const Tensor& t : inputs) {
    eqn.inputs.push_back(atom_for(t, p.name.c_str()));
    in_avals.push_back(t.aval());
  }
  std::vector<AbstractValue> out_avals = p.abstract_eval(in_avals, params);
  eqn.params = params.empty() ? stage_detail::shared_no_params() : params.clone();
  std::vector<Tensor> outs;
  outs.reserve(out_avals.size());
  for (const AbstractValue& a : out_avals) {
    int32_t v = jaxpr_.new_var(a);
    eqn.outputs.push_back(v);
    outs.emplace_back(std::make_shared<StageTracer>(a, device, tag(), v));
  }
  jaxpr_.equations.push_back(std::move(eqn));
  return outs;
}

Jaxpr StageInterpreter::finish(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs) jaxpr_.outputs.push_back(atom_for(t, tag()->transform));
  const_vars_ = {};  // its memory goes back before the caller optimizes or transposes the Jaxpr
  return std::move(jaxpr_);
}

}  // namespace fluxion
