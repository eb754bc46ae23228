/// Forward mode: the jvp interpreter carries (primal, tangent) pairs; undefined tangents are
/// symbolic zeros. Rules run under the parent interpreter.
#pragma once
#include <cstdint>
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
  /// The primal. When this value carries a derivative the C++ number drops it: counted, and the
  /// first such read of the process prints a warning (derivative_dropping_reads()).
  Tensor value_for_read(const char* what) const override;

 private:
  Tensor primal_, tangent_;
};

/// How many floating reads (item<double>(), to_vector<float>(), ...) of a value carrying a
/// derivative this process has made. They are allowed, as DESIGN's eager transforms promise (C++
/// control flow on values), but the number is a constant to the transform: the first one prints a
/// warning to stderr naming fx::stop_gradient, unless FLUXION_WARN_READS=0.
int64_t derivative_dropping_reads();

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
