// Primitives of the random family: threefry2x32 keys and distributions (fx::random::) (issue 31). Filled in by its branch.
#include <vector>

#include "primitives/registry.hpp"

namespace fluxion::primitives {

void register_random(std::vector<const Primitive*>&) {}

}  // namespace fluxion::primitives
