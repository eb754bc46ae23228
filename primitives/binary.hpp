/// The binary elementwise primitives' handles (defined in binary.cpp); all take NoParams.
#pragma once
#include "fluxion/primitive.hpp"

namespace fluxion::primitives::binary_family {
// Passes and the planner compare an equation's primitive to these handles, never to a name.
const Primitive& add_p();
const Primitive& sub_p();
const Primitive& mul_p();
const Primitive& div_p();
const Primitive& pow_p();
const Primitive& max_p();
const Primitive& min_p();
const Primitive& atan2_p();
const Primitive& rem_p();
const Primitive& lt_p();
const Primitive& le_p();
const Primitive& gt_p();
const Primitive& ge_p();
const Primitive& eq_p();
const Primitive& ne_p();
const Primitive& logical_and_p();
const Primitive& logical_or_p();
}  // namespace fluxion::primitives::binary_family
