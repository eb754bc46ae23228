/// Reverse mode's second half: transposing a linear Jaxpr (from linearize) backwards.
#pragma once
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

/// Cotangents of `linear`'s inputs given cotangents of its outputs (undefined = zero; zeros are
/// materialised in the result). Inputs and every equation output are linear; constvars and
/// literals are constants. Evaluated with bind, so the result can itself be transformed.
std::vector<Tensor> transpose_jaxpr(const Jaxpr& linear, const std::vector<Tensor>& cts_out,
                                    const char* transform = "vjp");

}  // namespace fluxion
