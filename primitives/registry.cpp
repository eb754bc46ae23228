// The single list of primitives that every dispatcher, pass and test reads.
#include "primitives/registry.hpp"

namespace fluxion {

const std::vector<const Primitive*>& all_primitives() {
  static const std::vector<const Primitive*> list = [] {
    std::vector<const Primitive*> l;
    primitives::register_unary(l);
    primitives::register_binary(l);
    primitives::register_conversion(l);
    primitives::register_shape(l);
    primitives::register_reduction(l);
    primitives::register_dot_general(l);
    primitives::register_linalg(l);
    primitives::register_gram(l);
    primitives::register_indexing(l);
    primitives::register_control_flow(l);
    primitives::register_checkpoint(l);
    primitives::register_custom_rules(l);
    primitives::register_linalg_triangular(l);
    primitives::register_linalg_decompositions(l);
    primitives::register_linalg_spectral(l);
    primitives::register_random(l);
    primitives::register_sort(l);
    primitives::register_scatter(l);
    primitives::register_convolution(l);
    primitives::register_collectives(l);
    return l;
  }();
  return list;
}

const Primitive* find_primitive(const std::string& name) {
  for (const Primitive* p : all_primitives())
    if (p->name == name) return p;
  return nullptr;
}

}  // namespace fluxion
