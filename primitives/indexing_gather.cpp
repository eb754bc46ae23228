// gather and scatter_add along one axis (indices clamped into range, like XLA): scatter_add is
// gather's transpose. Each primitive's shape rule, kernels, jvp, transpose and batching rule.
#include "fluxion/lax.hpp"
#include "primitives/indexing_shared.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives::indexing_family {

/// Output shape of gather: x.shape[:axis] ++ indices.shape ++ x.shape[axis+1:].
Shape gather_shape(const char* nm, const AbstractValue& x, const AbstractValue& indices, int64_t axis) {
  check_axis(nm, "axis", axis, x.ndim(), x);
  if (!kInteger.contains(indices.dtype))
    detail::fail<DTypeError>(nm, "indices have type ", indices,
                             "; indices must be i32 or i64. Convert with fx::astype.");
  if (x.shape[axis] == 0 && indices.shape.num_elements() > 0)
    detail::fail<ShapeError>(nm, "cannot index axis ", axis, " of ", x, ": it has size 0, but ", indices,
                             " asks for elements. Index a non-empty axis or pass empty indices.");
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  for (int64_t d : indices.shape) out.push_back(d);
  for (int64_t d = axis + 1; d < x.ndim(); ++d) out.push_back(x.shape[d]);
  checked_num_elements(nm, out.dims());
  return out;
}

// ---- gather ----

std::vector<AbstractValue> gather_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                       const Params& params) {
  check_arity(self, in, 2);
  return {AbstractValue{gather_shape(self.name.c_str(), in[0], in[1], params.as<AxisParams>().axis), in[0].dtype}};
}

FLUXION_INDEXING_KERNELS(gather, k::gather(in[0], in[1], params.as<AxisParams>().axis, out[0]))

void gather_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out) || !tangents[0].defined()) return;
  tangents_out[0] = fluxion::bind1(self, {tangents[0], primals[1]}, params);
}

// gather -> scatter_add of the cotangent into zeros (clamped indices agree).
void gather_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                      const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined() || inputs[0].defined()) return;
  cts_in[0] = lax::scatter_add(zeros_of(in_avals[0]), inputs[1], ct, params.as<AxisParams>().axis);
}

// Only x mapped: gather along the shifted axis. Only indices mapped: the indices' batch axis lands
// inside the output's index dims. Both: the per-example gather.
void gather_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                  const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t axis = params.as<AxisParams>().axis;
  const Tensor &x = values[0], &idx = values[1];
  if (dims[1] == kNotMapped) {
    const int64_t bd = dims[0];
    if (bd <= axis) {
      out = {lax::gather(x, idx, axis + 1)};
      out_dims = {bd};
    } else {
      out = {lax::gather(x, idx, axis)};
      out_dims = {bd - 1 + idx.ndim()};
    }
    return;
  }
  if (dims[0] == kNotMapped) {
    out = {lax::gather(x, idx, axis)};
    out_dims = {axis + dims[1]};
    return;
  }
  Tensor xb = batching::move_axis(x, dims[0], 0);
  const int64_t n = xb.shape()[axis + 1];
  Tensor ib = clamp_i64(as_i64(batching::move_axis(idx, dims[1], 0)), 0, n - 1);
  out = {batched_take(xb, ib, axis + 1)};
  out_dims = {0};
}

const Primitive& gather_p() {
  static const Primitive& p = define_primitive("gather")
                                  .params<AxisParams>()
                                  .linear()
                                  .shape(&gather_rule)
                                  .reference(&gather_reference)
                                  .cpu(&gather_cpu)
                                  .jvp(&gather_jvp)
                                  .transpose(&gather_transpose)
                                  .batch(&gather_batch)
                                  .build();
  return p;
}

// ---- scatter_add ----

std::vector<AbstractValue> scatter_add_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                            const Params& params) {
  check_arity(self, in, 3);
  const char* nm = self.name.c_str();
  const AbstractValue &x = in[0], &u = in[2];
  check_dtype_in(self, x, kNumeric);
  if (u.dtype != x.dtype)
    detail::fail<DTypeError>(nm, "updates ", u, " and operand ", x, " have different dtypes. Convert with fx::astype.");
  const Shape want = gather_shape(nm, x, in[1], params.as<AxisParams>().axis);
  if (u.shape != want)
    detail::fail<ShapeError>(nm, "updates have shape ", u.shape, " but operand ", x, " indexed by ", in[1],
                             " along axis ", params.as<AxisParams>().axis, " needs ", want,
                             " (operand.shape[:axis] ++ indices.shape ++ operand.shape[axis+1:]).");
  return {x};
}

FLUXION_INDEXING_KERNELS(scatter_add, k::scatter_add(in[0], in[1], in[2], params.as<AxisParams>().axis, out[0]))

void scatter_add_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                     const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &t_op = tangents[0], &t_upd = tangents[2];
  if (!t_op.defined() && !t_upd.defined()) return;
  if (!t_upd.defined()) {
    tangents_out[0] = t_op;  // adding nothing
    return;
  }
  Tensor op = t_op.defined() ? t_op : zeros_of(primals[0].aval());
  tangents_out[0] = fluxion::bind1(self, {op, primals[1], t_upd}, params);
}

// scatter_add -> operand: the cotangent; updates: the cotangent gathered at the indices.
void scatter_add_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                           const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  if (!inputs[0].defined()) cts_in[0] = ct;
  if (!inputs[2].defined()) cts_in[2] = lax::gather(ct, inputs[1], params.as<AxisParams>().axis);
}

// Unmapped indices: scatter along the shifted axis with operand and updates batched first.
// Mapped indices: the per-example scatter.
void scatter_add_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                       const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t axis = params.as<AxisParams>().axis;
  const int64_t size = batching::batch_size(values, dims);
  Tensor o = batching::materialize(values[0], dims[0], size, 0);
  Tensor u = batching::materialize(values[2], dims[2], size, 0);
  out_dims = {0};
  if (dims[1] == kNotMapped) {
    out = {lax::scatter_add(o, values[1], u, axis + 1)};
    return;
  }
  const int64_t n = o.shape()[axis + 1];
  Tensor ib = clamp_i64(as_i64(batching::move_axis(values[1], dims[1], 0)), 0, n - 1);
  out = {batched_scatter_add(o, ib, u, axis + 1)};
}

const Primitive& scatter_add_p() {
  static const Primitive& p = define_primitive("scatter_add")
                                  .params<AxisParams>()
                                  .linear()
                                  .shape(&scatter_add_rule)
                                  .reference(&scatter_add_reference)
                                  .cpu(&scatter_add_cpu)
                                  .jvp(&scatter_add_jvp)
                                  .transpose(&scatter_add_transpose)
                                  .batch(&scatter_add_batch)
                                  .build();
  return p;
}

}  // namespace fluxion::primitives::indexing_family

namespace fluxion::lax {

Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis) {
  namespace ix = primitives::indexing_family;
  const int64_t rank = x.defined() ? x.ndim() : 0;
  return bind1(ix::gather_p(), {x, indices}, ix::AxisParams(ix::normalized_axis("gather", axis, rank)));
}
Tensor scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates, int64_t axis) {
  namespace ix = primitives::indexing_family;
  const int64_t rank = operand.defined() ? operand.ndim() : 0;
  return bind1(ix::scatter_add_p(), {operand, indices, updates},
               ix::AxisParams(ix::normalized_axis("scatter_add", axis, rank)));
}

}  // namespace fluxion::lax
