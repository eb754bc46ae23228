/// The shape/movement primitives' handles and params (defined in shape.cpp). Params hold
/// canonical (non-negative, sorted where a set) axes.
#pragma once
#include <tuple>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::shape_family {

/// Operand dim i becomes output dim broadcast_dimensions[i] (increasing); `shape` is the output's.
struct BroadcastInDimParams final : ParamsOf<BroadcastInDimParams> {
  Shape shape;
  std::vector<int64_t> broadcast_dimensions;
  BroadcastInDimParams(Shape s, std::vector<int64_t> b) : shape(std::move(s)), broadcast_dimensions(std::move(b)) {}
  auto fields() const { return std::tie(shape, broadcast_dimensions); }
  static constexpr const char* names[] = {"shape", "broadcast_dimensions"};
};
struct ReshapeParams final : ParamsOf<ReshapeParams> {
  Shape new_sizes;
  explicit ReshapeParams(Shape s) : new_sizes(std::move(s)) {}
  auto fields() const { return std::tie(new_sizes); }
  static constexpr const char* names[] = {"new_sizes"};
};
/// Output dim k is operand dim permutation[k].
struct TransposeParams final : ParamsOf<TransposeParams> {
  std::vector<int64_t> permutation;
  explicit TransposeParams(std::vector<int64_t> p) : permutation(std::move(p)) {}
  auto fields() const { return std::tie(permutation); }
  static constexpr const char* names[] = {"permutation"};
};
struct SqueezeParams final : ParamsOf<SqueezeParams> {
  std::vector<int64_t> dimensions;
  explicit SqueezeParams(std::vector<int64_t> d) : dimensions(std::move(d)) {}
  auto fields() const { return std::tie(dimensions); }
  static constexpr const char* names[] = {"dimensions"};
};
struct ExpandDimsParams final : ParamsOf<ExpandDimsParams> {
  std::vector<int64_t> dimensions;
  explicit ExpandDimsParams(std::vector<int64_t> d) : dimensions(std::move(d)) {}
  auto fields() const { return std::tie(dimensions); }
  static constexpr const char* names[] = {"dimensions"};
};

const Primitive& broadcast_in_dim_p();  // BroadcastInDimParams
const Primitive& reshape_p();           // ReshapeParams
const Primitive& transpose_p();         // TransposeParams
const Primitive& squeeze_p();           // SqueezeParams
const Primitive& expand_dims_p();       // ExpandDimsParams

}  // namespace fluxion::primitives::shape_family
