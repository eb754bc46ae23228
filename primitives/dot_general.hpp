/// The dot_general primitive's handle and params (defined in dot_general.cpp).
#pragma once
#include <tuple>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::dot_general_family {

/// Params of dot_general, printed "contract=((1,),(0,)) batch=((),())": (lhs dims, rhs dims) pairs.
struct DotGeneralParams final : ParamsOf<DotGeneralParams> {
  AxisPair contract, batch;
  DotGeneralParams(AxisPair c, AxisPair b) : contract(std::move(c)), batch(std::move(b)) {}
  auto fields() const { return std::tie(contract, batch); }
  static constexpr const char* names[] = {"contract", "batch"};
};

const Primitive& dot_general_p();

}  // namespace fluxion::primitives::dot_general_family
