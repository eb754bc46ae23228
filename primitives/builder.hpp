/// One builder declares a primitive: its name, traits and every rule by a named setter, in one
/// expression, e.g.
///
///   const Primitive& cumsum_p() {
///     static const Primitive& p = define_primitive("cumsum")
///                                     .linear()
///                                     .shape(&cumsum_shape_rule)
///                                     .reference(&cumsum_kernel<true>)
///                                     .cpu(&cumsum_kernel<kLightKernels>)
///                                     .jvp(&linear_jvp_rule)
///                                     .transpose(&cumsum_transpose)
///                                     .batch(&cumsum_batch)
///                                     .build();
///     return p;
///   }
///
/// build() allocates the primitive once, for the life of the program (its handle holds it by
/// reference and equations point at it), and files its CPU lowering (cpu_lowering: fused and tiled
/// forms) in the CPU backend's table, keyed by the primitive (backends/cpu/lowering.hpp). A setter
/// left out leaves the rule absent; the rule-coverage test then asks for missing_rule's reason.
#pragma once
#include <string>

#include "backends/cpu/lowering.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion::primitives {

class PrimitiveBuilder {
 public:
  explicit PrimitiveBuilder(std::string name) { p_.name = std::move(name); }

  // Traits (Traits in fluxion/primitive.hpp).
  PrimitiveBuilder& traits(const Traits& t) { return p_.traits = t, *this; }
  PrimitiveBuilder& elementwise() { return p_.traits.elementwise = true, *this; }
  PrimitiveBuilder& linear() { return p_.traits.linear = true, *this; }
  PrimitiveBuilder& commutative() { return p_.traits.commutative = true, *this; }
  PrimitiveBuilder& view() { return p_.traits.view = true, *this; }

  // The shape rule and the kernel table (one kernel per backend).
  PrimitiveBuilder& shape(ShapeRule rule) { return p_.shape_rule = rule, *this; }
  PrimitiveBuilder& kernel(Backend b, Kernel k) { return p_.kernels[static_cast<size_t>(b)] = k, *this; }
  PrimitiveBuilder& reference(Kernel k) { return kernel(Backend::reference, k); }
  PrimitiveBuilder& cpu(Kernel k) { return kernel(Backend::cpu, k); }
  PrimitiveBuilder& cuda(Kernel k) { return kernel(Backend::cuda, k); }

  // Transformation rules.
  PrimitiveBuilder& jvp(JvpRule rule) { return p_.jvp = rule, *this; }
  PrimitiveBuilder& transpose(TransposeRule rule) { return p_.transpose = rule, *this; }
  PrimitiveBuilder& batch(BatchRule rule) { return p_.batch = rule, *this; }
  PrimitiveBuilder& partial_eval(PartialEvalRule rule) { return p_.partial_eval = rule, *this; }
  /// Call-like primitives: the sub-Jaxpr; `transparent` when its rules are the sub-Jaxpr's.
  PrimitiveBuilder& callee(CalleeRule rule, bool transparent = false) {
    p_.callee = rule;
    p_.callee_transparent = transparent;
    return *this;
  }
  /// Collectives: the axis name of the params, the rule under the vmap binding it, and the trait.
  PrimitiveBuilder& collective(AxisNameRule name, CollectiveBatchRule rule) {
    p_.axis_name = name;
    p_.collective_batch = rule;
    p_.traits.collective = true;
    return *this;
  }
  /// The params type P: its static load(ParamsReader&) reads saved params back (fx::load_exported).
  /// Primitives taking NoParams leave it out.
  template <class P> PrimitiveBuilder& params() { return p_.load_params = &P::load, *this; }
  /// Why some rule is intentionally absent (read by the rule-coverage test).
  PrimitiveBuilder& missing_rule(std::string reason) { return p_.missing_rule_reason = std::move(reason), *this; }

  /// The CPU backend's lowering table entry (fused block and row forms, tile op, tiled form).
  PrimitiveBuilder& cpu_lowering(const cpu::Lowering& lowering) { return cpu_lowering_ = lowering, *this; }

  /// The primitive, allocated once and never freed; its CPU lowering filed. Call once per handle.
  const Primitive& build();

 private:
  Primitive p_;
  cpu::Lowering cpu_lowering_;
};

/// Starts the declaration of primitive `name`.
inline PrimitiveBuilder define_primitive(std::string name) { return PrimitiveBuilder(std::move(name)); }

}  // namespace fluxion::primitives
