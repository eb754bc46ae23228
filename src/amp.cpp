// fx::amp::LossScaler: dynamic loss scaling (include/fluxion/amp.hpp).
#include "fluxion/amp.hpp"

#include <cmath>

#include "fluxion/errors.hpp"
#include "fluxion/ops.hpp"

namespace fluxion::amp {

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  const char* op = "amp.LossScaler";
  if (!(std::isfinite(options.init_scale) && options.init_scale > 0))
    detail::fail<Error>(op, "init_scale must be positive and finite, got ", options.init_scale,
                        ". The default is 65536 (2^16).");
  if (!(std::isfinite(options.growth_factor) && options.growth_factor > 1))
    detail::fail<Error>(op, "growth_factor must be finite and above 1, got ", options.growth_factor,
                        ". The default is 2.");
  if (!(options.backoff_factor > 0 && options.backoff_factor < 1))
    detail::fail<Error>(op, "backoff_factor must be in (0, 1), got ", options.backoff_factor, ". The default is 0.5.");
  if (options.growth_interval < 1)
    detail::fail<Error>(op, "growth_interval must be at least 1, got ", options.growth_interval,
                        ". The default is 2000 steps.");
}

Tensor LossScaler::scale(const Tensor& loss) const {
  if (!is_floating(loss.dtype()))
    detail::fail<DTypeError>("amp.LossScaler.scale", "the loss must be floating, got ", loss.aval(),
                             ". Convert it with fx::astype(loss, fx::f32).");
  return loss * scale_;
}

Tensor LossScaler::scale_tensor() const { return full(Shape{}, scale_, f32); }

Tensor LossScaler::unscale_leaf(const Tensor& g) const {
  if (!is_floating(g.dtype()))
    detail::fail<DTypeError>("amp.LossScaler.unscale", "gradients must be floating, got ", g.aval(),
                             ". Pass the gradients of scale(loss).");
  return astype(g, f32) * (1.0 / scale_);
}

bool LossScaler::all_finite_leaves(const std::vector<Tensor>& leaves) {
  for (const Tensor& g : leaves)
    if (is_floating(g.dtype()) && g.size() > 0 && !all(isfinite(g)).item<bool>()) return false;
  return true;
}

void LossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    tracker_ = 0;
    ++skipped_;
    return;
  }
  if (++tracker_ >= options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;  // never an infinite scale (every step would then be skipped)
    tracker_ = 0;
  }
}

}  // namespace fluxion::amp
