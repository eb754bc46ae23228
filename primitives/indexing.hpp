/// The indexing primitives' handles and params (defined in indexing_*.cpp, one file per group
/// of primitives). Params hold canonical (non-negative) axes and explicit strides.
#pragma once
#include <tuple>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::indexing_family {

using Ints = std::vector<int64_t>;

struct SliceParams final : ParamsOf<SliceParams> {
  Ints start_indices, limit_indices, strides;
  SliceParams(Ints s, Ints l, Ints st)
      : start_indices(std::move(s)), limit_indices(std::move(l)), strides(std::move(st)) {}
  auto fields() const { return std::tie(start_indices, limit_indices, strides); }
  static constexpr const char* names[] = {"start_indices", "limit_indices", "strides"};
};
struct DynamicSliceParams final : ParamsOf<DynamicSliceParams> {
  Ints slice_sizes;
  explicit DynamicSliceParams(Ints s) : slice_sizes(std::move(s)) {}
  auto fields() const { return std::tie(slice_sizes); }
  static constexpr const char* names[] = {"slice_sizes"};
};
struct PadParams final : ParamsOf<PadParams> {
  Ints low, high, interior;
  PadParams(Ints l, Ints h, Ints i) : low(std::move(l)), high(std::move(h)), interior(std::move(i)) {}
  auto fields() const { return std::tie(low, high, interior); }
  static constexpr const char* names[] = {"low", "high", "interior"};
};
struct ConcatenateParams final : ParamsOf<ConcatenateParams> {
  int64_t dimension;
  explicit ConcatenateParams(int64_t d) : dimension(d) {}
  auto fields() const { return std::tie(dimension); }
  static constexpr const char* names[] = {"dimension"};
};
/// iota: `shape` of `dtype` counting 0, 1, ... along `dimension`.
struct IotaParams final : ParamsOf<IotaParams> {
  DType dtype;
  Shape shape;
  int64_t dimension;
  IotaParams(DType t, Shape s, int64_t d) : dtype(t), shape(std::move(s)), dimension(d) {}
  auto fields() const { return std::tie(dtype, shape, dimension); }
  static constexpr const char* names[] = {"dtype", "shape", "dimension"};
};
/// gather and scatter_add: the axis indexed.
struct AxisParams final : ParamsOf<AxisParams> {
  int64_t axis;
  explicit AxisParams(int64_t a) : axis(a) {}
  auto fields() const { return std::tie(axis); }
  static constexpr const char* names[] = {"axis"};
};

const Primitive& slice_p();                 // SliceParams
const Primitive& dynamic_slice_p();         // DynamicSliceParams; inputs: x, one start per dim
const Primitive& dynamic_update_slice_p();  // NoParams; inputs: x, update, one start per dim
const Primitive& pad_p();                   // PadParams; inputs: x, padding value
const Primitive& concatenate_p();           // ConcatenateParams
const Primitive& iota_p();                  // IotaParams; no inputs
const Primitive& gather_p();                // AxisParams; inputs: x, indices
const Primitive& scatter_add_p();           // AxisParams; inputs: operand, indices, updates

}  // namespace fluxion::primitives::indexing_family
