// Shared checks of the elementwise family helpers.
#include "primitives/elementwise.hpp"

namespace fluxion::primitives {

void check_arity(const Primitive& self, const std::vector<AbstractValue>& in, size_t expected) {
  if (in.size() != expected)
    detail::fail<ShapeError>(self.name.c_str(), "takes ", expected, " operand(s), got ", in.size(), ".");
}

void check_dtype_in(const Primitive& self, const AbstractValue& a, DTypeSet allowed) {
  if (!allowed.contains(a.dtype))
    detail::fail<DTypeError>(self.name.c_str(), "got an operand of type ", a, "; ", self.name,
                             " accepts ", allowed.describe(), ". Convert it with fx::astype first.");
}

Shape elementwise_binary_shape(const Primitive& self, const AbstractValue& a, const AbstractValue& b) {
  if (a.dtype != b.dtype)
    detail::fail<DTypeError>(self.name.c_str(), "operand dtypes differ: ", a, " and ", b,
                             ". Convert one with fx::astype (the fx:: ops promote automatically).");
  if (a.shape == b.shape || b.ndim() == 0) return a.shape;
  if (a.ndim() == 0) return b.shape;
  detail::fail<ShapeError>(self.name.c_str(), "shapes ", a, " and ", b,
                           " differ. The primitive needs equal shapes (or a rank-0 operand); "
                           "use fx::broadcast_to or the fx:: ops, which broadcast.");
}

}  // namespace fluxion::primitives
