// PrimitiveBuilder::build: the primitive moves to the heap (a handle's reference, and every
// equation's pointer, stay valid for the program's life), then its CPU lowering is filed under it.
#include "primitives/builder.hpp"

namespace fluxion::primitives {

const Primitive& PrimitiveBuilder::build() {
  const Primitive* p = new Primitive(std::move(p_));  // intentionally never freed: primitives are program-wide
  if (!cpu_lowering_.empty()) cpu::set_lowering(*p, cpu_lowering_);
  return *p;
}

}  // namespace fluxion::primitives
