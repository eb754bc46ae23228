/// The Jaxpr: a typed SSA list of equations, its printer, typechecker, evaluator and make_jaxpr.
#pragma once
#include <memory>
#include <ostream>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "fluxion/interpreter.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion {

/// An equation operand: a variable id, or a literal (a concrete rank-0 tensor).
struct Atom {
  int32_t var = -1;
  Tensor literal;
  bool is_literal() const { return var < 0; }
  static Atom of_var(int32_t v) { return Atom{v, Tensor()}; }
  static Atom of_literal(Tensor t) { return Atom{-1, std::move(t)}; }
};

/// One equation: outputs = primitive[params] inputs.
struct Equation {
  const Primitive* primitive = nullptr;
  std::shared_ptr<const Params> params;
  std::vector<Atom> inputs;
  std::vector<int32_t> outputs;
};

/// A closed Jaxpr: constants (values captured while tracing), inputs, equations, outputs.
/// Variables are ids into `avals`; printing names them a, b, c... in order of definition.
struct Jaxpr {
  std::vector<AbstractValue> avals;  // by variable id
  std::vector<int32_t> constvars;
  std::vector<Tensor> consts;  // values of constvars, same order
  std::vector<int32_t> invars;
  std::vector<Equation> equations;
  std::vector<Atom> outputs;

  int32_t new_var(const AbstractValue& aval) {
    avals.push_back(aval);
    return static_cast<int32_t>(avals.size() - 1);
  }
  const AbstractValue& aval_of(const Atom& a) const { return a.is_literal() ? a.literal.aval() : avals[a.var]; }
  std::vector<AbstractValue> in_avals() const;
  std::vector<AbstractValue> out_avals() const;
};

/// Prints the JAX-style text of DESIGN.md §4; deterministic (golden tests rely on it).
std::ostream& operator<<(std::ostream& os, const Jaxpr& jaxpr);

/// Re-derives every equation's avals with the shape rules and checks variables are defined
/// before use and once only. Throws Error naming the equation on any mismatch.
void typecheck(const Jaxpr& jaxpr);

/// Evaluates the Jaxpr on `args` under the current interpreter (so it can itself be transformed).
std::vector<Tensor> eval_jaxpr(const Jaxpr& jaxpr, const std::vector<Tensor>& args);

/// Evaluates the Jaxpr now with the kernels of `backend`, equation by equation, bypassing the
/// interpreters (reference kernels of primitives that hold sub-Jaxprs).
std::vector<Tensor> eval_jaxpr_on(const Jaxpr& jaxpr, const std::vector<Tensor>& args, Backend backend);

/// Records the primitives bound while it is current into a Jaxpr.
class StageInterpreter final : public Interpreter {
 public:
  /// `transform` names the user-facing transform in error messages ("make_jaxpr", "jit", ...).
  /// With `forward_known` (partial evaluation, used by linearize), equations none of whose
  /// inputs are this interpreter's tracers are evaluated by the parent instead of staged, so the
  /// Jaxpr holds only what depends on its inputs and known values are its constants.
  explicit StageInterpreter(const char* transform = "make_jaxpr", bool forward_known = false);
  /// A new input variable of the Jaxpr, returned as a tracer.
  Tensor new_input(const AbstractValue& aval, Device device = Device::cpu());
  std::vector<Tensor> process(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) override;
  /// Records `p` as one equation whatever its inputs (partial-evaluation rules stage their
  /// unknown part with it).
  std::vector<Tensor> stage_equation(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params);
  /// Closes the Jaxpr with `outputs` (tracers of this interpreter, or constants) and returns it.
  Jaxpr finish(const std::vector<Tensor>& outputs);

 private:
  Atom atom_for(const Tensor& t, const char* op);
  std::vector<Tensor> record(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params);
  Jaxpr jaxpr_;
  /// The constvar of each captured tensor, by its impl (the Jaxpr's consts keep the impls alive).
  std::unordered_map<const TensorImpl*, int32_t> const_vars_;
  bool forward_known_ = false;
};

namespace detail {
/// Argument handling for make_jaxpr: Tensors become inputs, everything else is static.
template <class T> struct is_tensor : std::is_same<std::decay_t<T>, Tensor> {};

template <class Arg> decltype(auto) stage_argument(StageInterpreter& st, const Arg& arg) {
  if constexpr (is_tensor<Arg>::value) {
    return st.new_input(arg.aval(), arg.device());
  } else if constexpr (std::is_same_v<Arg, std::vector<Tensor>>) {
    std::vector<Tensor> staged;
    for (const Tensor& t : arg) staged.push_back(st.new_input(t.aval(), t.device()));
    return staged;
  } else {
    return (arg);
  }
}

inline void collect_outputs(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
inline void collect_outputs(const std::vector<Tensor>& ts, std::vector<Tensor>& out) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <class... Ts> void collect_outputs(const std::tuple<Ts...>& t, std::vector<Tensor>& out) {
  std::apply([&](const auto&... e) { (collect_outputs(e, out), ...); }, t);
}
template <class A, class B> void collect_outputs(const std::pair<A, B>& p, std::vector<Tensor>& out) {
  collect_outputs(p.first, out);
  collect_outputs(p.second, out);
}
}  // namespace detail

/// Returns a callable that traces `f` on the avals of its Tensor arguments and returns the Jaxpr.
/// Non-Tensor arguments are static and passed through unchanged.
template <class F> auto make_jaxpr(F f) {
  return [f](const auto&... args) -> Jaxpr {
    StageInterpreter stage("make_jaxpr");
    std::vector<Tensor> outs;
    {
      InterpreterScope scope(stage);
      // Braced initialisation is evaluated left to right, so inputs are numbered in order.
      std::tuple<decltype(detail::stage_argument(stage, args))...> staged{detail::stage_argument(stage, args)...};
      auto result = std::apply(f, staged);
      detail::collect_outputs(result, outs);
    }
    return stage.finish(outs);
  };
}

}  // namespace fluxion
