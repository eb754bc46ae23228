/// Automatic mixed precision: dynamic loss scaling for gradients computed in f16/bf16 (PyTorch's GradScaler).
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/pytree.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::amp {

/// PyTorch GradScaler's defaults: start at 2^16, double every 2000 finite steps, halve on a non-finite one.
struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;      // > 1
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // finite steps in a row before the scale grows
};

/// Dynamic loss scaling. Small gradients of a half-precision loss underflow to zero in f16; scaling the loss by
/// S before differentiating scales every gradient by S, and unscale divides it back out in f32. A step whose
/// gradients are not finite (S too large: overflow) is skipped and S is multiplied by backoff_factor; after
/// growth_interval finite steps in a row S grows by growth_factor, so S tracks the largest scale that does not
/// overflow. Eager: all_finite and step read values (compute the gradients under jit, call the scaler outside;
/// inside jit pass scale_tensor() as an argument, since a captured scale would be a constant of the trace).
class LossScaler {
 public:
  /// Throws Error naming a bad option (a non-positive or non-finite scale, growth_factor <= 1, ...).
  explicit LossScaler(LossScalerOptions options = {});

  /// loss * S, in loss's dtype (a half loss stays half: an overflow there is what the scaler detects).
  Tensor scale(const Tensor& loss) const;
  /// S as an f32 rank-0 tensor (to pass into a jitted function).
  Tensor scale_tensor() const;
  /// The current scale S.
  double get_scale() const { return scale_; }

  /// The gradients of a scaled loss divided by S, every leaf converted to f32 first (S is a power of two with the
  /// default options: the division is exact unless it underflows).
  template <class Tree> Tree unscale(const Tree& grads) const {
    return tree_map([this](const Tensor& g) { return unscale_leaf(g); }, grads);
  }
  /// True when every element of every leaf is finite (no inf, no NaN). Reads the values.
  template <class Tree> static bool all_finite(const Tree& grads) { return all_finite_leaves(tree_leaves(grads)); }

  /// Adjusts S after a step: backoff (and a restarted growth count) when `found_inf`, else one more finite step
  /// towards growth.
  void update(bool found_inf);

  /// One optimizer step with the gradients of scale(loss): unscales them, and if every one is finite calls
  /// `apply(unscaled)` (the optimizer update); otherwise skips it. Updates S either way. Returns whether the step
  /// was applied.
  template <class Tree, class Apply> bool step(const Tree& scaled_grads, Apply&& apply) {
    Tree grads = unscale(scaled_grads);
    const bool finite = all_finite(grads);
    if (finite) apply(grads);
    update(!finite);
    return finite;
  }

  /// Steps skipped so far because their gradients were not finite.
  int64_t skipped_steps() const { return skipped_; }
  /// Finite steps since the last change of S.
  int64_t growth_tracker() const { return tracker_; }
  const LossScalerOptions& options() const { return options_; }

 private:
  Tensor unscale_leaf(const Tensor& g) const;
  static bool all_finite_leaves(const std::vector<Tensor>& leaves);

  LossScalerOptions options_;
  double scale_;
  int64_t tracker_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace fluxion::amp
