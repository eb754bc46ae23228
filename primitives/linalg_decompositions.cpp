// Primitives of the linalg_decompositions family: lu, qr, det, slogdet, matrix_power, expm (issue 31). Filled in by its branch.
#include <vector>

#include "primitives/registry.hpp"

namespace fluxion::primitives {

void register_linalg_decompositions(std::vector<const Primitive*>&) {}

}  // namespace fluxion::primitives
