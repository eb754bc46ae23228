// numpy-style helpers over the general gather/scatter primitives (include/fluxion/scatter.hpp):
// take with a mode, take_along_axis, put_along_axis, integer-array indexing and the segment
// reductions. Each is one gather or scatter with dimension numbers; the batching dims pair the
// index array with the operand in take_along_axis/put_along_axis (no iota index grids).
#include <limits>
#include <numeric>

#include "fluxion/cuda.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "fluxion/scatter.hpp"

namespace fluxion {
namespace ops_scatter_detail {

using Ints = std::vector<int64_t>;

void check_integer(const char* op, const Tensor& indices) {
  if (!is_integer(indices.dtype()))
    detail::fail<DTypeError>(op, "indices must be i32 or i64, got ", indices.aval(),
                             ". Convert them with fx::astype(indices, fx::i32).");
}

/// numpy's negative indices: i < 0 counts from the end of a dim of size n.
Tensor from_end(const Tensor& indices, int64_t n) { return where(indices < 0, indices + n, indices); }

/// 0, 1, ..., n-1 without `skip`.
Ints all_but(int64_t n, int64_t skip) {
  Ints v;
  for (int64_t d = 0; d < n; ++d)
    if (d != skip) v.push_back(d);
  return v;
}

Ints range(int64_t from, int64_t to) {
  Ints v;
  for (int64_t d = from; d < to; ++d) v.push_back(d);
  return v;
}

/// Along-axis helpers: indices of x's rank whose dims off `axis` equal x's or are 1.
void check_along_axis(const char* op, const Tensor& x, const Tensor& indices, int64_t a, bool broadcast_x) {
  check_integer(op, indices);
  if (indices.ndim() != x.ndim())
    detail::fail<ShapeError>(op, "indices ", indices.aval(), " must have the rank of x ", x.aval(), " (", x.ndim(),
                             "). Add size-1 dims with fx::expand_dims.");
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (d == a) continue;
    const int64_t xi = x.shape()[d], ii = indices.shape()[d];
    if (xi != ii && ii != 1 && !(broadcast_x && xi == 1))
      detail::fail<ShapeError>(op, "indices ", indices.aval(), " and x ", x.aval(), " differ in dim ", d, " (", ii,
                               " vs ", xi, ") off axis ", a, ". Off the axis their dims must match or be 1.");
  }
  if (x.shape()[a] == 0 && indices.size() > 0)
    detail::fail<ShapeError>(op, "cannot index axis ", a, " of ", x.aval(), ": it has size 0, but indices ",
                             indices.aval(), " ask for elements. Index a non-empty axis or pass empty indices.");
}

/// Empty outputs need no gather (which cannot slice a size-0 axis).
bool empty_shape(const Shape& s) { return s.num_elements() == 0; }

}  // namespace ops_scatter_detail

namespace osd = ops_scatter_detail;

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, GatherScatterMode mode,
            std::optional<double> fill_value) {
  osd::check_integer("take", indices);
  const int64_t a = normalize_axis("take", axis, x.ndim()), n = x.shape()[a], k = indices.ndim();
  Shape out(x.shape().begin(), x.shape().begin() + a);
  for (int64_t d : indices.shape()) out.push_back(d);
  for (int64_t d = a + 1; d < x.ndim(); ++d) out.push_back(x.shape()[d]);
  if (osd::empty_shape(out)) return device_put(zeros(out, x.dtype()), x.device());
  if (n == 0)
    detail::fail<ShapeError>("take", "cannot take indices ", indices.aval(), " from axis ", a, " of ", x.aval(),
                             ", which is empty.");
  osd::Ints offset_dims = osd::range(0, a), sizes = x.shape().dims();
  for (int64_t d = a + 1; d < x.ndim(); ++d) offset_dims.push_back(d - 1 + k);
  sizes[static_cast<size_t>(a)] = 1;
  return lax::gather(x, expand_dims(osd::from_end(indices, n), k), {offset_dims, {a}, {a}, {}, {}}, sizes, mode,
                     fill_value);
}

Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis, GatherScatterMode mode,
                       std::optional<double> fill_value) {
  const int64_t r = x.ndim(), a = normalize_axis("take_along_axis", axis, r);
  osd::check_along_axis("take_along_axis", x, indices, a, true);
  // Off the axis both broadcast to the larger dim; on it x keeps its length, indices theirs.
  Shape xs = x.shape(), is = indices.shape();
  for (int64_t d = 0; d < r; ++d)
    if (d != a) xs[d] = is[d] = x.shape()[d] == 1 ? indices.shape()[d] : x.shape()[d];
  if (osd::empty_shape(is)) return device_put(zeros(is, x.dtype()), x.device());
  const Tensor xb = broadcast_to(x, xs), ib = broadcast_to(osd::from_end(indices, x.shape()[a]), is);
  const osd::Ints others = osd::all_but(r, a);
  return lax::gather(xb, expand_dims(ib, r), {{}, {a}, {a}, others, others}, osd::Ints(static_cast<size_t>(r), 1), mode,
                     fill_value);
}

Tensor put_along_axis(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis, PutMode how,
                      GatherScatterMode mode) {
  const int64_t r = x.ndim(), a = normalize_axis("put_along_axis", axis, r);
  osd::check_along_axis("put_along_axis", x, indices, a, false);
  Shape is = x.shape();
  is[a] = indices.shape()[a];
  if (osd::empty_shape(is)) return x;
  const Tensor ib = broadcast_to(osd::from_end(indices, x.shape()[a]), is);
  // A concrete rank-0 value follows x to its device before it is broadcast (like a literal).
  const Tensor v = values.ndim() == 0 && !values.is_tracer() ? device_put(values, x.device()) : values;
  const Tensor vb = broadcast_to(astype(v, x.dtype()), is);
  const osd::Ints others = osd::all_but(r, a);
  const lax::ScatterDimensionNumbers dn{{}, {a}, {a}, others, others};
  return how == PutMode::add ? lax::scatter_add(x, expand_dims(ib, r), vb, dn, mode)
                             : lax::scatter(x, expand_dims(ib, r), vb, dn, mode);
}

Tensor index(const Tensor& x, const std::vector<Tensor>& indices, GatherScatterMode mode,
             std::optional<double> fill_value) {
  const int64_t k = static_cast<int64_t>(indices.size()), r = x.ndim();
  if (k == 0 || k > r)
    detail::fail<ShapeError>("index", "got ", k, " index arrays for ", x.aval(), "; give between 1 and ", r,
                             " (one per leading axis).");
  Shape batch;
  DType dt = i32;
  for (int64_t i = 0; i < k; ++i) {
    osd::check_integer("index", indices[static_cast<size_t>(i)]);
    batch = i == 0 ? indices[0].shape() : broadcast_shapes("index", batch, indices[static_cast<size_t>(i)].shape());
    if (indices[static_cast<size_t>(i)].dtype() == i64) dt = i64;
  }
  Shape out = batch;
  for (int64_t d = k; d < r; ++d) out.push_back(x.shape()[d]);
  if (osd::empty_shape(out)) return device_put(zeros(out, x.dtype()), x.device());
  std::vector<Tensor> columns;
  for (int64_t i = 0; i < k; ++i) {
    if (x.shape()[i] == 0)
      detail::fail<ShapeError>("index", "cannot index axis ", i, " of ", x.aval(), ", which is empty.");
    const Tensor c = astype(indices[static_cast<size_t>(i)], dt);
    columns.push_back(broadcast_to(osd::from_end(c, x.shape()[i]), batch));
  }
  const int64_t b = batch.size();
  osd::Ints sizes(static_cast<size_t>(k), 1);
  for (int64_t d = k; d < r; ++d) sizes.push_back(x.shape()[d]);
  return lax::gather(x, stack(columns, b), {osd::range(b, b + r - k), osd::range(0, k), osd::range(0, k), {}, {}},
                     sizes, mode, fill_value);
}

namespace ops_scatter_detail {

enum class SegmentOp { sum, prod, max, min };

/// The identity of `how` in `dt`: empty segments hold it (like jax.ops.segment_*).
Tensor segment_identity(SegmentOp how, DType dt) {
  if (how == SegmentOp::sum) return full(Shape{}, 0.0, dt);
  if (how == SegmentOp::prod) return full(Shape{}, 1.0, dt);
  const bool low = how == SegmentOp::max;
  if (dt == i32)
    return full<int64_t>(Shape{}, low ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max(), dt);
  if (dt == i64)
    return full<int64_t>(Shape{}, low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max(), dt);
  return full(Shape{}, low ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(), dt);
}

/// One scatter of `data` rows into `num_segments` rows holding the identity, dropping bad ids.
Tensor segment(const char* op, const Tensor& data, const Tensor& ids, int64_t num_segments, SegmentOp how) {
  check_integer(op, ids);
  if (data.ndim() < 1)
    detail::fail<ShapeError>(op, "data ", data.aval(), " must have rank >= 1 (segments of its rows).");
  if (ids.ndim() != 1 || ids.shape()[0] != data.shape()[0])
    detail::fail<ShapeError>(op, "segment_ids ", ids.aval(), " must be 1-d with one id per row of data ", data.aval(),
                             " (", data.shape()[0], "). Flatten both first.");
  if (num_segments < 0) detail::fail<ShapeError>(op, "num_segments must be >= 0, got ", num_segments, ".");
  Shape out = data.shape();
  out[0] = num_segments;
  const Tensor base = lax::broadcast_in_dim(device_put(segment_identity(how, data.dtype()), data.device()), out, {});
  const Tensor idx = expand_dims(ids, 1);
  const lax::ScatterDimensionNumbers dn{range(1, data.ndim()), {0}, {0}, {}, {}};
  const GatherScatterMode drop = GatherScatterMode::fill_or_drop;
  switch (how) {
    case SegmentOp::sum: return lax::scatter_add(base, idx, data, dn, drop);
    case SegmentOp::prod: return lax::scatter_mul(base, idx, data, dn, drop);
    case SegmentOp::max: return lax::scatter_max(base, idx, data, dn, drop);
    default: return lax::scatter_min(base, idx, data, dn, drop);
  }
}

}  // namespace ops_scatter_detail

Tensor segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  return osd::segment("segment_sum", data, segment_ids, num_segments, osd::SegmentOp::sum);
}
Tensor segment_prod(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  return osd::segment("segment_prod", data, segment_ids, num_segments, osd::SegmentOp::prod);
}
Tensor segment_max(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  return osd::segment("segment_max", data, segment_ids, num_segments, osd::SegmentOp::max);
}
Tensor segment_min(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  return osd::segment("segment_min", data, segment_ids, num_segments, osd::SegmentOp::min);
}

}  // namespace fluxion
