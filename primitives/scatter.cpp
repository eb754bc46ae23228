// Primitives of the scatter family: general gather/scatter, take/put_along_axis, segment_sum, einsum (issue 31). Filled in by its branch.
#include <vector>

#include "primitives/registry.hpp"

namespace fluxion::primitives {

void register_scatter(std::vector<const Primitive*>&) {}

}  // namespace fluxion::primitives
