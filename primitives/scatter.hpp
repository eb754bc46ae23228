/// The scatter family's handles and params (general gather/scatter with JAX's dimension numbers),
/// and WindowSpec: the one description of "which operand element each gathered / scattered element
/// is" that every kernel (reference, CPU, CUDA) reads. Defined in scatter*.cpp.
#pragma once
#include <cstdint>
#include <ostream>
#include <vector>

#include "fluxion/primitive.hpp"
#include "fluxion/scatter.hpp"

namespace fluxion::primitives::scatter_family {

using Ints = std::vector<int64_t>;

/// gather_general: dimension numbers, slice sizes, mode and fill value (fill_or_drop only).
struct GatherParams final : Params {
  lax::GatherDimensionNumbers dnums;
  Ints slice_sizes;
  GatherScatterMode mode;
  double fill_value;  // compared and hashed by its bits: NaN fills equal NaN fills
  GatherParams(lax::GatherDimensionNumbers d, Ints s, GatherScatterMode m, double fill)
      : dnums(std::move(d)), slice_sizes(std::move(s)), mode(m), fill_value(fill) {}
  void print(std::ostream& os) const override;
  bool equals(const Params& other) const override;
  size_t hash() const override;
  std::shared_ptr<const Params> clone() const override { return std::make_shared<GatherParams>(*this); }
  std::shared_ptr<const Params> with_half_as_f32() const override { return clone(); }  // no dtype fields
  // save and load: src/export_params_special.cpp
  void save(ParamsWriter& w) const override;
  static std::shared_ptr<const Params> load(ParamsReader& r);
};

/// scatter, scatter_add_general, scatter_mul, scatter_min, scatter_max: dimension numbers and mode.
struct ScatterParams final : Params {
  lax::ScatterDimensionNumbers dnums;
  GatherScatterMode mode;
  ScatterParams(lax::ScatterDimensionNumbers d, GatherScatterMode m) : dnums(std::move(d)), mode(m) {}
  void print(std::ostream& os) const override;
  bool equals(const Params& other) const override;
  size_t hash() const override;
  std::shared_ptr<const Params> clone() const override { return std::make_shared<ScatterParams>(*this); }
  std::shared_ptr<const Params> with_half_as_f32() const override { return clone(); }  // no dtype fields
  // save and load: src/export_params_special.cpp
  void save(ParamsWriter& w) const override;
  static std::shared_ptr<const Params> load(ParamsReader& r);
};

/// How a scatter combines an update u with the current value v.
enum class Combine { replace, add, mul, min, max };

const Primitive& gather_general_p();       // GatherParams; inputs: operand, start_indices
const Primitive& scatter_p();              // ScatterParams; inputs: operand, indices, updates
const Primitive& scatter_add_general_p();  // ScatterParams
const Primitive& scatter_mul_p();          // ScatterParams
const Primitive& scatter_min_p();          // ScatterParams
const Primitive& scatter_max_p();          // ScatterParams
/// The scatter primitive combining with `c`.
const Primitive& scatter_primitive(Combine c);

/// One gather or scatter seen from both ends. The "side" tensor is gather's output or scatter's
/// updates: its dims are index-batch dims (in indices' order) and window dims (side_window_dims[w]
/// walks operand dim window_operand_dims[w]). Index-batch position g (row-major over
/// index_batch_shape) starts its window at start[d] = indices[g, k] for d = start_index_map[k],
/// start[d] = g's coordinate along indices dim indices_batching_dims[j] for d =
/// operand_batching_dims[j], and 0 elsewhere; the window covers [start[d], start[d] + window[d]).
/// In clip mode starts are clamped to [0, operand_shape[d] - window[d]]; in fill_or_drop mode a
/// window that does not fit is out (filled or dropped).
struct WindowSpec {
  Ints operand_shape, window, side_shape, side_window_dims, window_operand_dims, index_batch_shape, start_index_map,
      operand_batching_dims, indices_batching_dims;
  bool clip = true;
  int64_t batch_count() const;  // G: the number of index-batch positions
};
WindowSpec gather_window_spec(const Shape& operand, const Shape& indices, const GatherParams& p);
WindowSpec scatter_window_spec(const Shape& operand, const Shape& indices, const Shape& updates,
                               const ScatterParams& p);

/// The gather that reads what a scatter with `p` writes (scatter_add's transpose), and back.
GatherParams gather_of_scatter(const ScatterParams& p, const Shape& operand, const Shape& updates, double fill);
ScatterParams scatter_of_gather(const GatherParams& p);
/// JAX's default fill value of gather in fill_or_drop mode for `dtype`.
double default_fill(DType dtype);

}  // namespace fluxion::primitives::scatter_family

// ---- internal to the family (scatter*.cpp) ----
namespace fluxion::primitives::scatter_family {

/// Output shape of gather_general after validating everything (ShapeError / DTypeError naming `nm`).
Shape gather_shape(const char* nm, const AbstractValue& operand, const AbstractValue& indices, const GatherParams& p);
/// Validates a scatter's operand, indices and updates against its dimension numbers.
void check_scatter(const char* nm, const AbstractValue& operand, const AbstractValue& indices,
                   const AbstractValue& updates, const ScatterParams& p);

/// Kernels (scatter_kernels.cpp). Reference: one output element (gather) or one update element
/// (scatter) at a time, decoded from its multi-index. CPU: the same order, with per-window offset tables.
template <bool Reference> void gather_kernel(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out);
template <Combine C, bool Reference>
void scatter_kernel(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out);

}  // namespace fluxion::primitives::scatter_family
