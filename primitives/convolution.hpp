/// conv_general_dilated's handle and params (defined in convolution.cpp), shared by every backend's kernel.
#pragma once
#include <cstdint>
#include <tuple>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::convolution_detail {

/// Params of conv_general_dilated, with JAX's meaning (jax.lax.conv_general_dilated). One entry per
/// spatial dim in window_strides, padding_lo/hi (negative crops), lhs_dilation and rhs_dilation, ordered
/// like the spatial dims of rhs_spec. The specs are JAX's ConvDimensionNumbers: lhs_spec = (batch dim,
/// feature dim, spatial dims...), rhs_spec = (out feature dim, in feature dim, spatial dims...),
/// out_spec = (batch dim, feature dim, spatial dims...). At most one group count exceeds 1.
struct ConvParams final : ParamsOf<ConvParams> {
  std::vector<int64_t> window_strides, padding_lo, padding_hi, lhs_dilation, rhs_dilation;
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  int64_t feature_group_count = 1, batch_group_count = 1;
  auto fields() const {
    return std::tie(window_strides, padding_lo, padding_hi, lhs_dilation, rhs_dilation, lhs_spec, rhs_spec, out_spec,
                    feature_group_count, batch_group_count);
  }
  static constexpr const char* names[] = {"window_strides",      "padding_lo",       "padding_hi", "lhs_dilation",
                                          "rhs_dilation",        "lhs_spec",         "rhs_spec",   "out_spec",
                                          "feature_group_count", "batch_group_count"};
};

/// out = conv_general_dilated(lhs, rhs); ConvParams.
const Primitive& conv_general_dilated_p();

}  // namespace fluxion::primitives::convolution_detail

namespace fluxion::primitives::convolution_detail {
/// x reversed along each of `axes` (a gather of descending indices; differentiable and batchable).
Tensor reverse(const Tensor& x, const std::vector<int64_t>& axes);
}  // namespace fluxion::primitives::convolution_detail
