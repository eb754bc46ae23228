/// The gram primitive's handle (defined in gram.cpp): gram(x, s) = xᵀ diag(s) x, NoParams.
#pragma once
#include "fluxion/primitive.hpp"

namespace fluxion::primitives::gram_detail {
const Primitive& gram_p();
}  // namespace fluxion::primitives::gram_detail
