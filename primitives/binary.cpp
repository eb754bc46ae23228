// Family 'binary': being written (placeholder registration so the tree links).
#include "primitives/registry.hpp"
namespace fluxion::primitives {
void register_binary(std::vector<const Primitive*>&) {}
}  // namespace fluxion::primitives
