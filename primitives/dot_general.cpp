// Family 'dot_general': being written (placeholder registration so the tree links).
#include "primitives/registry.hpp"
namespace fluxion::primitives {
void register_dot_general(std::vector<const Primitive*>&) {}
}  // namespace fluxion::primitives
