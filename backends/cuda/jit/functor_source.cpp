// functor_source (shared_functors.hpp), in a translation unit of its own: it reads only the shared
// functors' header, whose namespace is not to meet Fluxion's public names.
#include "primitives/scalar_functions.hpp"

namespace fluxion::cuda::jit {

const char* functor_source() { return fluxion::scalar::source(); }

}  // namespace fluxion::cuda::jit
