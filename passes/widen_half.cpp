// widen_half: every equation with f16/bf16 operands or results becomes
//   converts of its half operands to f32; the same primitive with widened params; converts of its half
//   results back (round to nearest even)
// which is what eval_primitive does eagerly (transforms/half_kernels.cpp), so jit and eager agree bit for
// bit; fusion then sees elementwise f32 chains and keeps their values in f32 scratch inside a group.
#include <unordered_map>

#include "passes/passes.hpp"
#include "primitives/conversion.hpp"
#include "transforms/half_kernels.hpp"

namespace fluxion::passes {
namespace widen_half_detail {

using primitives::conversion_family::convert_element_type_p;
using primitives::conversion_family::ConvertElementTypeParams;

/// Appends `to = convert_element_type[new_dtype] from` to `out` and returns the new variable.
int32_t append_convert(Jaxpr& out, const Atom& from, DType new_dtype) {
  const int32_t to = out.new_var(AbstractValue{out.aval_of(from).shape, new_dtype});
  out.equations.push_back(
      Equation{&convert_element_type_p(), std::make_shared<ConvertElementTypeParams>(new_dtype), {from}, {to}});
  return to;
}

/// True when some variable or literal of `jaxpr` is f16/bf16: otherwise there is nothing to widen.
bool has_half(const Jaxpr& jaxpr) {
  for (const AbstractValue& a : jaxpr.avals)
    if (is_half(a.dtype)) return true;
  for (const Equation& e : jaxpr.equations)
    for (const Atom& a : e.inputs)
      if (a.is_literal() && is_half(a.literal.dtype())) return true;
  return false;
}

}  // namespace widen_half_detail

Jaxpr widen_half(Jaxpr jaxpr) {
  using namespace widen_half_detail;
  if (!has_half(jaxpr)) return jaxpr;
  Jaxpr& out = jaxpr;  // rewritten in place: the equations move out, and back one by one
  std::vector<Equation> equations = std::move(jaxpr.equations);
  out.equations.clear();
  out.equations.reserve(equations.size());
  std::unordered_map<int32_t, int32_t> widened;  // half variable -> its f32 conversion (one per variable)
  for (Equation& e : equations) {
    std::vector<AbstractValue> in_avals, out_avals;
    for (const Atom& a : e.inputs) in_avals.push_back(jaxpr.aval_of(a));
    for (int32_t v : e.outputs) out_avals.push_back(jaxpr.avals[v]);
    const std::shared_ptr<const Params> wide =
        half_kernels::widened_params(*e.primitive, in_avals, out_avals, *e.params);
    if (!wide) {
      out.equations.push_back(std::move(e));
      continue;
    }
    Equation f32_eqn{e.primitive, wide, {}, {}};
    for (const Atom& a : e.inputs) {
      if (!is_half(jaxpr.aval_of(a).dtype)) {
        f32_eqn.inputs.push_back(a);
      } else if (a.is_literal()) {  // rank 0: converted now, exactly
        f32_eqn.inputs.push_back(Atom::of_literal(scalar(a.literal.item<float>())));
      } else {
        auto it = widened.find(a.var);
        if (it == widened.end()) it = widened.emplace(a.var, append_convert(out, a, f32)).first;
        f32_eqn.inputs.push_back(Atom::of_var(it->second));
      }
    }
    std::vector<std::pair<int32_t, int32_t>> round_back;  // (f32 result, original half variable)
    for (int32_t v : e.outputs) {
      if (!is_half(jaxpr.avals[v].dtype)) {
        f32_eqn.outputs.push_back(v);
        continue;
      }
      const int32_t w = out.new_var(AbstractValue{Shape(jaxpr.avals[v].shape), f32});
      f32_eqn.outputs.push_back(w);
      round_back.emplace_back(w, v);
    }
    out.equations.push_back(std::move(f32_eqn));
    for (const auto& [w, v] : round_back)
      out.equations.push_back(Equation{&convert_element_type_p(),
                                       std::make_shared<ConvertElementTypeParams>(jaxpr.avals[v].dtype),
                                       {Atom::of_var(w)},
                                       {v}});
  }
  return out;
}

}  // namespace fluxion::passes
