// Primitives of the linalg_triangular family: cholesky, triangular_solve, cho_solve (issue 31). Filled in by its branch.
#include <vector>

#include "primitives/registry.hpp"

namespace fluxion::primitives {

void register_linalg_triangular(std::vector<const Primitive*>&) {}

}  // namespace fluxion::primitives
