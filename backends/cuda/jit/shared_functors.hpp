/// The one place the CUDA jit reads the shared scalar functors (primitives/scalar_functions.hpp:
/// their text; backends/cuda/scalar_functor_names.hpp: which functor a primitive applies) and the
/// one place it spells how a generated kernel calls one (`Name::apply(args)`).
#pragma once
#include <string>

#include "fluxion/primitive.hpp"

namespace fluxion::cuda::jit {

/// True when `p` has a shared scalar functor (its equations may then be members of a generated
/// kernel; the others stay kernel steps).
bool has_functor(const Primitive& p);

/// The functors' source text, FLUXION_HD literal (a generated kernel defines it first).
const char* functor_source();

/// The expression applying `p`'s functor, whose result has dtype `out`, to the argument list
/// `args` ("a, b"). Requires has_functor(p).
std::string functor_call(const Primitive& p, DType out, const std::string& args);

}  // namespace fluxion::cuda::jit
