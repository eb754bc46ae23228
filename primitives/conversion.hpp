/// The conversion primitives' handles and params (defined in conversion.cpp): select takes
/// NoParams, convert_element_type a ConvertElementTypeParams.
#pragma once
#include <tuple>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::conversion_family {

/// Params of convert_element_type, printed `convert_element_type[new_dtype=f32]`.
struct ConvertElementTypeParams final : ParamsOf<ConvertElementTypeParams> {
  DType new_dtype = f32;
  explicit ConvertElementTypeParams(DType d) : new_dtype(d) {}
  auto fields() const { return std::tie(new_dtype); }
  static constexpr const char* names[] = {"new_dtype"};
};

const Primitive& select_p();
const Primitive& convert_element_type_p();

}  // namespace fluxion::primitives::conversion_family
