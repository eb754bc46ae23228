/// The unary elementwise primitives' handles (defined in unary.cpp); all take NoParams.
#pragma once
#include "fluxion/primitive.hpp"

namespace fluxion::primitives::unary_family {
// Passes and the planner compare an equation's primitive to these handles, never to a name.
const Primitive& neg_p();
const Primitive& sin_p();
const Primitive& cos_p();
const Primitive& tan_p();
const Primitive& exp_p();
const Primitive& log_p();
const Primitive& log1p_p();
const Primitive& expm1_p();
const Primitive& sqrt_p();
const Primitive& rsqrt_p();
const Primitive& tanh_p();
const Primitive& logistic_p();
const Primitive& abs_p();
const Primitive& sign_p();
const Primitive& floor_p();
const Primitive& ceil_p();
const Primitive& round_p();
const Primitive& round_nearest_even_p();
const Primitive& logical_not_p();
const Primitive& stop_gradient_p();
}  // namespace fluxion::primitives::unary_family
