// The shared functors as the jit sees them (shared_functors.hpp).
#include "backends/cuda/jit/shared_functors.hpp"

#include "backends/cuda/scalar_functor_names.hpp"
#include "primitives/conversion.hpp"
#include "primitives/scalar_functions.hpp"

namespace fluxion::cuda::jit {

bool has_functor(const Primitive& p) { return scalar_functor_name(p) != nullptr; }

const char* functor_source() { return fluxion::scalar_functions::source(); }

std::string functor_call(const Primitive& p, DType out, const std::string& args) {
  std::string name = scalar_functor_name(p);
  // convert_element_type's functor is a template on the result element type.
  if (&p == &primitives::conversion_family::convert_element_type_p())
    name += std::string("<") + scalar_type_name(out) + ">";
  return name + "::apply(" + args + ")";
}

}  // namespace fluxion::cuda::jit
