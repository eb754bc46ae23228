/// Convolutions with JAX's semantics: conv_general_dilated, conv, conv_transpose (issue 31).
///
///   fx::conv(x, w, {1, 1}, "SAME")                       // x NCHW, w OIHW
///   fx::conv_general_dilated(x, w, {2, 2}, {{1, 1}, {0, 1}}, {1, 1}, {2, 2}, /*feature_group_count=*/2)
///   fx::conv_general_dilated(x, w, {1, 1}, "VALID", {}, {}, {"NHWC", "HWIO", "NHWC"})
///   fx::conv_transpose(x, w, {2, 2}, "SAME")             // x NHWC, w HWIO, like jax.lax.conv_transpose
///
/// All of them differentiate (grad, jvp, jacfwd, jacrev, hessian), batch (vmap) and stage (jit); operands are
/// f32 or f64 (promoted to their common type).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion {

/// A convolution's padding: "SAME" (output size ceil(input / stride), the odd extra at the end), "SAME_LOWER"
/// (the odd extra at the start) or "VALID" (none), resolved against the shapes by the op; or one explicit
/// (low, high) pair per spatial dim, where negative values crop.
struct ConvPadding {
  std::string mode;                                // empty for explicit pairs
  std::vector<std::pair<int64_t, int64_t>> pairs;  // explicit (low, high) per spatial dim
  ConvPadding() = default;
  ConvPadding(const char* m) : mode(m) {}         // NOLINT: "SAME" converts implicitly, as in JAX
  ConvPadding(const std::string& m) : mode(m) {}  // NOLINT
  ConvPadding(std::vector<std::pair<int64_t, int64_t>> p) : pairs(std::move(p)) {}                  // NOLINT
  ConvPadding(std::initializer_list<std::pair<int64_t, int64_t>> p) : pairs(p.begin(), p.end()) {}  // NOLINT
};

/// Which dims of each operand are batch, feature and spatial (JAX's ConvDimensionNumbers): lhs_spec = (batch,
/// feature, spatial...), rhs_spec = (out feature, in feature, spatial...), out_spec = (batch, feature,
/// spatial...). Spatial dims pair up in rhs_spec's order, which is also the order of strides, padding and
/// dilations. Empty specs mean the identity: NCHW, OIHW, NCHW (any number of spatial dims).
struct ConvDimensionNumbers {
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  ConvDimensionNumbers() = default;
  ConvDimensionNumbers(std::vector<int64_t> lhs, std::vector<int64_t> rhs, std::vector<int64_t> out)
      : lhs_spec(std::move(lhs)), rhs_spec(std::move(rhs)), out_spec(std::move(out)) {}
  /// From layout strings, as in JAX: ("NHWC", "HWIO", "NHWC"). N and C mark the batch and feature dims of lhs
  /// and out, O and I the output and input features of rhs; any other distinct letters name spatial dims,
  /// the same set in all three. Bad strings throw fluxion::Error.
  ConvDimensionNumbers(const char* lhs, const char* rhs, const char* out);
  bool is_default() const { return lhs_spec.empty() && rhs_spec.empty() && out_spec.empty(); }
};

/// JAX's jax.lax.conv_general_dilated with the default dimension numbers: lhs (N, C, spatial...), rhs (O, C /
/// feature_group_count, spatial...), output (N, O, spatial...). Empty dilations mean 1 per spatial dim.
Tensor conv_general_dilated(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& window_strides,
                            const ConvPadding& padding, const std::vector<int64_t>& lhs_dilation = {},
                            const std::vector<int64_t>& rhs_dilation = {}, int64_t feature_group_count = 1);
/// The general form: any dimension numbers, and batch_group_count (the lhs batch split into groups, each
/// convolved with its own slice of the output features; the weight gradient of a grouped convolution).
Tensor conv_general_dilated(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& window_strides,
                            const ConvPadding& padding, const std::vector<int64_t>& lhs_dilation,
                            const std::vector<int64_t>& rhs_dilation, const ConvDimensionNumbers& dimension_numbers,
                            int64_t feature_group_count = 1, int64_t batch_group_count = 1);

/// jax.lax.conv: NCHW input, OIHW kernel, no dilation, no groups.
Tensor conv(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& window_strides,
            const ConvPadding& padding);

/// jax.lax.conv_transpose: a fractionally strided convolution (the input dilated by `strides`). "SAME" and
/// "VALID" name the padding of the forward convolution it inverts (output size input * stride for "SAME");
/// explicit pairs pad the dilated input directly. Default dimension numbers are JAX's for this op: NHWC input,
/// HWIO kernel, NHWC output (N, spatial..., C for any rank). With transpose_kernel the kernel is flipped
/// spatially and its I and O dims swapped, which makes the result the gradient of conv with that kernel
/// (Keras' Conv2DTranspose).
Tensor conv_transpose(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& strides,
                      const ConvPadding& padding, const std::vector<int64_t>& rhs_dilation = {},
                      const ConvDimensionNumbers& dimension_numbers = {}, bool transpose_kernel = false);

}  // namespace fluxion
