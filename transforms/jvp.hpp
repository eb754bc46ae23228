/// Forward mode: the jvp interpreter carries (primal, tangent) pairs; undefined tangents are
/// symbolic zeros. Rules run under the parent interpreter.
#pragma once
#include <utility>
#include <vector>

#include "fluxion/interpreter.hpp"

namespace fluxion {

/// The value of a jvp interpreter: a primal and its tangent (undefined = zero).
class JvpTracer final : public TracerImpl {
 public:
  JvpTracer(Tensor primal, Tensor tangent, std::shared_ptr<InterpreterTag> owner)
      : TracerImpl(primal.aval(), primal.device(), std::move(owner)),
        primal_(std::move(primal)),
        tangent_(std::move(tangent)) {}
  const Tensor& primal() const { return primal_; }
  const Tensor& tangent() const { return tangent_; }
  /// Under jvp the primal is known: C++ control flow on values works.
  Tensor concrete_value(const char* what) const override { return primal_.concrete(what); }
  /// The primal, unless this value carries a derivative: a C++ number would drop it (ConcretizationError).
  Tensor value_for_read(const char* what) const override;

 private:
  Tensor primal_, tangent_;
};

class JvpInterpreter final : public Interpreter {
 public:
  /// `transform` names the user-facing transform in messages (jvp, grad, jacfwd, ...).
  explicit JvpInterpreter(const char* transform = "jvp") : Interpreter(transform) {}
  /// A tracer of this interpreter with the given primal and tangent.
  Tensor lift(const Tensor& primal, const Tensor& tangent);
  /// Primal and tangent of `t` at this level: a value from outside has a zero tangent.
  std::pair<Tensor, Tensor> split(const Tensor& t) const;
  std::vector<Tensor> process(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) override;
};

}  // namespace fluxion
