// The transpose interpreter: walks a linear Jaxpr backwards, accumulating cotangents.
#include "transforms/transpose.hpp"

#include <new>

#include "fluxion/lax.hpp"

namespace fluxion {

std::vector<Tensor> transpose_jaxpr(const Jaxpr& j, const std::vector<Tensor>& cts_out, const char* transform) try {
  if (cts_out.size() != j.outputs.size())
    detail::fail<Error>(transform, "expected ", j.outputs.size(), " output cotangents, got ", cts_out.size(), ".");
  // Which variables are constants (known values) rather than linear.
  std::vector<Tensor> known(j.avals.size());
  for (size_t i = 0; i < j.constvars.size(); ++i) known[j.constvars[i]] = j.consts[i];
  std::vector<char> is_const(j.avals.size(), 0);
  for (int32_t v : j.constvars) is_const[v] = 1;

  std::vector<Tensor> ct(j.avals.size());
  auto accumulate = [&](int32_t v, const Tensor& c) {
    if (!c.defined()) return;
    ct[v] = ct[v].defined() ? lax::add(ct[v], c) : c;
  };
  for (size_t i = 0; i < j.outputs.size(); ++i) {
    const Atom& a = j.outputs[i];
    if (a.is_literal() || is_const[a.var] || !cts_out[i].defined()) continue;
    if (cts_out[i].aval() != j.avals[a.var])
      detail::fail<ShapeError>(transform, "cotangent ", i, " is ", cts_out[i].aval(), " but the output is ",
                               j.avals[a.var], ". Pass cotangents shaped like the outputs.");
    accumulate(a.var, cts_out[i]);
  }
  std::vector<Tensor> inputs, eq_cts_out, cts_in;
  std::vector<AbstractValue> in_avals;
  for (size_t e = j.equations.size(); e-- > 0;) {
    const Equation& eqn = j.equations[e];
    eq_cts_out.clear();
    bool any = false;
    for (int32_t v : eqn.outputs) {
      eq_cts_out.push_back(ct[v]);
      any |= ct[v].defined();
      ct[v] = Tensor();  // consumed: frees memory as the walk proceeds
    }
    if (!any) continue;
    const Primitive& p = *eqn.primitive;
    if (!p.transpose)
      detail::fail<NotImplementedError>(transform, "no transpose rule for primitive '", p.name,
                                        "' (it is not linear in its inputs).");
    inputs.clear();
    in_avals.clear();
    for (const Atom& a : eqn.inputs) {
      in_avals.push_back(j.aval_of(a));
      if (a.is_literal()) inputs.push_back(a.literal);
      else if (is_const[a.var]) inputs.push_back(known[a.var]);
      else inputs.push_back(Tensor());
    }
    cts_in.assign(inputs.size(), Tensor());
    p.transpose(p, eq_cts_out, inputs, in_avals, *eqn.params, cts_in);
    for (size_t i = 0; i < eqn.inputs.size(); ++i)
      if (!inputs[i].defined()) accumulate(eqn.inputs[i].var, cts_in[i]);
  }
  std::vector<Tensor> result;
  result.reserve(j.invars.size());
  for (int32_t v : j.invars) result.push_back(ct[v].defined() ? ct[v] : zeros(j.avals[v].shape, j.avals[v].dtype));
  return result;
} catch (const std::bad_alloc&) {
  detail::fail<OutOfMemoryError>(transform, "out of memory while transposing a linear program of ", j.equations.size(),
                                 " equations. Free memory, or make the program smaller.");
}

}  // namespace fluxion
