// slice, dynamic_slice and dynamic_update_slice: a strided window of an operand, a window at
// runtime start indices (clamped so that it fits, like XLA), and that window overwritten. Each
// primitive's shape rule, kernels, jvp, transpose and batching rule, in that order.
#include "fluxion/lax.hpp"
#include "primitives/indexing_shared.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives::indexing_family {

// ---- slice ----

std::vector<AbstractValue> slice_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                      const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<SliceParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  check_per_dim(nm, "start_indices", p.start_indices, x);
  check_per_dim(nm, "limit_indices", p.limit_indices, x);
  check_per_dim(nm, "strides", p.strides, x);
  Shape out;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t s = p.start_indices[d], l = p.limit_indices[d], st = p.strides[d], n = x.shape[d];
    if (!(0 <= s && s <= l && l <= n))
      detail::fail<ShapeError>(nm, "start_indices=", ints_str(p.start_indices),
                               " limit_indices=", ints_str(p.limit_indices), " are out of bounds for operand ", x,
                               " in dimension ", d, ": need 0 <= start (", s, ") <= limit (", l, ") <= size (", n,
                               ").");
    if (st < 1)
      detail::fail<ShapeError>(nm, "strides=", ints_str(p.strides), " has stride ", st, " in dimension ", d,
                               ". Strides must be >= 1 (use lax::rev to reverse).");
    out.push_back(l == s ? 0 : (l - s - 1) / st + 1);
  }
  return {AbstractValue{out, x.dtype}};
}

FLUXION_INDEXING_KERNELS(slice, {
  const auto& p = params.as<SliceParams>();
  k::slice(in[0], p.start_indices, p.strides, out[0]);
})

// slice -> pad with zeros: low = start, interior = stride - 1, high = what is left after the last
// element taken (start + (m - 1) * stride + 1 for m > 0 elements, start for none).
void slice_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                     const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined() || inputs[0].defined()) return;
  const auto& p = params.as<SliceParams>();
  const AbstractValue& x = in_avals[0];
  Ints low, high, interior;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t m = ct.shape()[d], st = p.strides[d], s = p.start_indices[d];
    const int64_t real_limit = m == 0 ? s : s + (m - 1) * st + 1;
    low.push_back(s);
    high.push_back(x.shape[d] - real_limit);
    interior.push_back(m == 0 ? 0 : st - 1);
  }
  cts_in[0] = lax::pad(ct, scalar_like(ct, 0), low, high, interior);
}

void slice_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                 const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<SliceParams>();
  const int64_t bd = dims[0], size = values[0].shape()[bd];
  out = {lax::slice(values[0], inserted(p.start_indices, bd, 0), inserted(p.limit_indices, bd, size),
                    inserted(p.strides, bd, 1))};
  out_dims = {bd};
}

const Primitive& slice_p() {
  static const Primitive& p = define_primitive("slice")
                                  .params<SliceParams>()
                                  .linear()
                                  .shape(&slice_rule)
                                  .reference(&slice_reference)
                                  .cpu(&slice_cpu)
                                  .jvp(&all_linear_jvp)
                                  .transpose(&slice_transpose)
                                  .batch(&slice_batch)
                                  .build();
  return p;
}

// ---- dynamic_slice ----

std::vector<AbstractValue> dynamic_slice_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                              const Params& params) {
  const char* nm = self.name.c_str();
  if (in.empty()) detail::fail<ShapeError>(nm, "takes an operand and one start index per dimension, got no inputs.");
  const auto& p = params.as<DynamicSliceParams>();
  const AbstractValue& x = in[0];
  check_start_indices(nm, in, 1, x);
  check_per_dim(nm, "slice_sizes", p.slice_sizes, x);
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (p.slice_sizes[d] < 0 || p.slice_sizes[d] > x.shape[d])
      detail::fail<ShapeError>(nm, "slice_sizes=", ints_str(p.slice_sizes), " asks for ", p.slice_sizes[d],
                               " elements of dimension ", d, " of operand ", x, ", which has ", x.shape[d],
                               ". Each size must be in [0, dimension size].");
  return {AbstractValue{Shape(p.slice_sizes), x.dtype}};
}

FLUXION_INDEXING_KERNELS(dynamic_slice, (void)params; k::dynamic_slice(in[0], tail(in, 1), out[0]))

void dynamic_slice_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                       const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out) || !tangents[0].defined()) return;
  std::vector<Tensor> in = primals;
  in[0] = tangents[0];
  tangents_out[0] = fluxion::bind1(self, in, params);
}

// dynamic_slice -> the cotangent written into zeros at the same (clamped) starts.
void dynamic_slice_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                             const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined() || inputs[0].defined()) return;
  cts_in[0] = lax::dynamic_update_slice(zeros_of(in_avals[0]), ct, starts_of(inputs, 1));
}

// Unmapped starts: one dynamic_slice with the batch axis taken whole. Mapped starts: first the
// unmapped starts as above (dims with mapped starts kept whole), then per mapped dim k a gather of
// each example's window [start_b, start_b + size) (clamped like dynamic_slice).
void dynamic_slice_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                         const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const Ints& sizes = params.as<DynamicSliceParams>().slice_sizes;
  const int64_t size = batching::batch_size(values, dims);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  Tensor cur = values[0];
  int64_t bd = dims[0];
  const Shape logical = [&] {
    Shape s = cur.shape();
    if (bd != kNotMapped) s.dims().erase(s.dims().begin() + bd);
    return s;
  }();
  bool any_unmapped_start = false, any_mapped_start = false;
  for (int64_t k = 0; k < rank; ++k) (dims[k + 1] == kNotMapped ? any_unmapped_start : any_mapped_start) = true;
  if (any_unmapped_start || !any_mapped_start) {
    std::vector<Tensor> starts;
    Ints sz;
    for (int64_t k = 0; k < rank; ++k) {
      const bool mapped = dims[k + 1] != kNotMapped;
      starts.push_back(mapped ? scalar<int32_t>(0) : values[k + 1]);
      sz.push_back(mapped ? logical[k] : sizes[k]);
    }
    if (bd != kNotMapped) {
      starts.insert(starts.begin() + bd, scalar<int32_t>(0));
      sz.insert(sz.begin() + bd, size);
    }
    cur = lax::dynamic_slice(cur, starts, sz);
  }
  for (int64_t k = 0; k < rank; ++k) {
    if (dims[k + 1] == kNotMapped) continue;
    Tensor s = batched_start(values[k + 1], dims[k + 1], logical[k] - sizes[k]);
    const Shape idx_shape{size, sizes[k]};
    Tensor idx = lax::add(lax::broadcast_in_dim(s, idx_shape, {0}), lax::iota(i64, idx_shape, 1));
    if (bd == kNotMapped) {
      cur = lax::gather(cur, idx, k);  // [x[:k], B, size_k, x[k+1:]]: the batch axis is k
      bd = k;
    } else {
      cur = batched_take(batching::move_axis(cur, bd, 0), idx, k + 1);
      bd = 0;
    }
  }
  out = {cur};
  out_dims = {bd};
}

const Primitive& dynamic_slice_p() {
  static const Primitive& p = define_primitive("dynamic_slice")
                                  .params<DynamicSliceParams>()
                                  .linear()
                                  .shape(&dynamic_slice_rule)
                                  .reference(&dynamic_slice_reference)
                                  .cpu(&dynamic_slice_cpu)
                                  .jvp(&dynamic_slice_jvp)
                                  .transpose(&dynamic_slice_transpose)
                                  .batch(&dynamic_slice_batch)
                                  .build();
  return p;
}

// ---- dynamic_update_slice ----

std::vector<AbstractValue> dynamic_update_slice_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                     const Params&) {
  const char* nm = self.name.c_str();
  if (in.size() < 2)
    detail::fail<ShapeError>(nm, "takes an operand, an update and one start index per dimension, got ", in.size(),
                             " input(s).");
  const AbstractValue &x = in[0], &u = in[1];
  if (u.dtype != x.dtype)
    detail::fail<DTypeError>(nm, "update ", u, " and operand ", x,
                             " have different dtypes. Convert one with fx::astype.");
  if (u.ndim() != x.ndim())
    detail::fail<ShapeError>(nm, "update ", u, " has rank ", u.ndim(), " but operand ", x, " has rank ", x.ndim(),
                             ". Reshape the update to the operand's rank.");
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (u.shape[d] > x.shape[d])
      detail::fail<ShapeError>(nm, "update ", u, " is larger than operand ", x, " in dimension ", d, " (", u.shape[d],
                               " > ", x.shape[d], "). The update must fit inside the operand.");
  check_start_indices(nm, in, 2, x);
  return {x};
}

FLUXION_INDEXING_KERNELS(dynamic_update_slice, (void)params; k::dynamic_update_slice(in[0], in[1], tail(in, 2), out[0]))

void dynamic_update_slice_jvp(const Primitive& self, const std::vector<Tensor>& primals,
                              const std::vector<Tensor>& tangents, const Params& params,
                              std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  if (!tangents[0].defined() && !tangents[1].defined()) return;
  std::vector<Tensor> in = primals;
  for (size_t i = 0; i < 2; ++i) in[i] = tangents[i].defined() ? tangents[i] : zeros_of(primals[i].aval());
  tangents_out[0] = fluxion::bind1(self, in, params);
}

// dynamic_update_slice -> operand: the cotangent with the overwritten window zeroed; update: the
// window of the cotangent.
void dynamic_update_slice_transpose(const Primitive&, const std::vector<Tensor>& cts_out,
                                    const std::vector<Tensor>& inputs, const std::vector<AbstractValue>& in_avals,
                                    const Params&, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  const std::vector<Tensor> starts = starts_of(inputs, 2);
  if (!inputs[0].defined()) cts_in[0] = lax::dynamic_update_slice(ct, zeros_of(in_avals[1]), starts);
  if (!inputs[1].defined()) cts_in[1] = lax::dynamic_slice(ct, starts, in_avals[1].shape.dims());
}

// Unmapped starts: one dynamic_update_slice with the batch axis written whole. Mapped starts:
// per dim, the window test lo_b <= i < lo_b + size and the update element i - lo_b (gathered with
// clamped indices) give a mask and an operand-shaped update; select combines them.
void dynamic_update_slice_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                                const Params&, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t size = batching::batch_size(values, dims);
  Tensor x = batching::materialize(values[0], dims[0], size, 0);
  Tensor u = batching::materialize(values[1], dims[1], size, 0);
  const int64_t rank = x.ndim() - 1;
  bool any_mapped_start = false;
  for (int64_t k = 0; k < rank; ++k) any_mapped_start = any_mapped_start || dims[k + 2] != kNotMapped;
  out_dims = {0};
  if (!any_mapped_start) {
    std::vector<Tensor> starts{scalar<int32_t>(0)};
    for (int64_t k = 0; k < rank; ++k) starts.push_back(values[k + 2]);
    out = {lax::dynamic_update_slice(x, u, starts)};
    return;
  }
  for (int64_t k = 0; k < rank; ++k)
    if (u.shape()[k + 1] == 0) {  // an empty update writes nothing
      out = {x};
      return;
    }
  Tensor g = u, mask;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t n = x.shape()[k + 1], m = u.shape()[k + 1];
    const bool mapped = dims[k + 2] != kNotMapped;
    Tensor rel;  // position relative to the window start: [B, n] when mapped, else [n]
    if (mapped) {
      Tensor lo = batched_start(values[k + 2], dims[k + 2], n - m);
      const Shape shape{size, n};
      rel = lax::sub(lax::iota(i64, shape, 1), lax::broadcast_in_dim(lo, shape, {0}));
    } else {
      Tensor lo = clamp_i64(as_i64(values[k + 2]), 0, n - m);
      rel = lax::sub(lax::iota(i64, Shape{n}, 0), lo);
    }
    Tensor inside = lax::logical_and(lax::ge(rel, scalar<int64_t>(0)), lax::lt(rel, scalar<int64_t>(m)));
    Tensor src = clamp_i64(rel, 0, m - 1);
    g = mapped ? batched_take(g, src, k + 1) : lax::gather(g, src, k + 1);
    Tensor m_k = lax::broadcast_in_dim(inside, x.shape(), mapped ? Ints{0, k + 1} : Ints{k + 1});
    mask = mask.defined() ? lax::logical_and(mask, m_k) : m_k;
  }
  out = {lax::select(mask, g, x)};
}

const Primitive& dynamic_update_slice_p() {
  static const Primitive& p = define_primitive("dynamic_update_slice")
                                  .linear()
                                  .shape(&dynamic_update_slice_rule)
                                  .reference(&dynamic_update_slice_reference)
                                  .cpu(&dynamic_update_slice_cpu)
                                  .jvp(&dynamic_update_slice_jvp)
                                  .transpose(&dynamic_update_slice_transpose)
                                  .batch(&dynamic_update_slice_batch)
                                  .build();
  return p;
}

}  // namespace fluxion::primitives::indexing_family

namespace fluxion::lax {

Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& limit_indices,
             const std::vector<int64_t>& strides) {
  namespace ix = primitives::indexing_family;
  std::vector<int64_t> st = strides.empty() ? std::vector<int64_t>(start_indices.size(), 1) : strides;
  return bind1(ix::slice_p(), {x}, ix::SliceParams(start_indices, limit_indices, std::move(st)));
}
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& start_indices,
                     const std::vector<int64_t>& slice_sizes) {
  namespace ix = primitives::indexing_family;
  std::vector<Tensor> in{x};
  in.insert(in.end(), start_indices.begin(), start_indices.end());
  return bind1(ix::dynamic_slice_p(), in, ix::DynamicSliceParams(slice_sizes));
}
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& start_indices) {
  namespace ix = primitives::indexing_family;
  std::vector<Tensor> in{x, update};
  in.insert(in.end(), start_indices.begin(), start_indices.end());
  return bind1(ix::dynamic_update_slice_p(), in);
}

}  // namespace fluxion::lax
