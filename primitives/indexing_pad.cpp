// pad, concatenate and iota: values built around or from operands (iota from none). Each
// primitive's shape rule, kernels, transpose and batching rule, in that order.
#include "fluxion/lax.hpp"
#include "primitives/indexing_shared.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives::indexing_family {

// ---- pad ----

std::vector<AbstractValue> pad_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params& params) {
  check_arity(self, in, 2);
  const auto& p = params.as<PadParams>();
  const char* nm = self.name.c_str();
  const AbstractValue &x = in[0], &v = in[1];
  if (v.dtype != x.dtype)
    detail::fail<DTypeError>(nm, "padding value ", v, " and operand ", x,
                             " have different dtypes. Convert the padding value with fx::astype.");
  if (v.ndim() != 0) detail::fail<ShapeError>(nm, "padding value has type ", v, "; it must be a rank-0 scalar.");
  check_per_dim(nm, "low", p.low, x);
  check_per_dim(nm, "high", p.high, x);
  check_per_dim(nm, "interior", p.interior, x);
  Shape out;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t n = x.shape[d], lo = p.low[d], hi = p.high[d], mid = p.interior[d];
    if (mid < 0)
      detail::fail<ShapeError>(nm, "interior=", ints_str(p.interior), " is negative in dimension ", d,
                               ". Interior padding must be >= 0.");
    int64_t size = 0;
    bool overflow = __builtin_mul_overflow(n > 0 ? n - 1 : 0, mid, &size);
    overflow = overflow || __builtin_add_overflow(size, n, &size);
    overflow = overflow || __builtin_add_overflow(size, lo, &size);
    overflow = overflow || __builtin_add_overflow(size, hi, &size);
    if (overflow)
      detail::fail<ShapeError>(nm, "padding low=", ints_str(p.low), " high=", ints_str(p.high),
                               " interior=", ints_str(p.interior), " overflows in dimension ", d, " of ", x, ".");
    if (size < 0)
      detail::fail<ShapeError>(nm, "low=", ints_str(p.low), " high=", ints_str(p.high), " crop more than dimension ", d,
                               " of ", x, " holds (result size ", size, "). Make the negative padding smaller.");
    out.push_back(size);
  }
  checked_num_elements(nm, out.dims());
  return {AbstractValue{out, x.dtype}};
}

FLUXION_INDEXING_KERNELS(pad, {
  const auto& p = params.as<PadParams>();
  k::pad(in[0], in[1], p.low, p.high, p.interior, out[0]);
})

// pad -> the operand's cotangent undoes the padding: pad with the negated low/high (restoring
// cropped elements as zeros, cropping the added ones), then keep every (interior+1)-th element.
// The padding value's cotangent is what is left: sum(ct) - sum(operand's cotangent).
void pad_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  const auto& p = params.as<PadParams>();
  const int64_t rank = in_avals[0].ndim();
  Ints neg_low, neg_high, zero(static_cast<size_t>(rank), 0), starts(static_cast<size_t>(rank), 0), step;
  for (int64_t d = 0; d < rank; ++d) {
    neg_low.push_back(-p.low[d]);
    neg_high.push_back(-p.high[d]);
    step.push_back(p.interior[d] + 1);
  }
  Tensor unpadded = lax::pad(ct, scalar_like(ct, 0), neg_low, neg_high, zero);
  Tensor t_operand = lax::slice(unpadded, starts, unpadded.shape().dims(), step);
  if (!inputs[0].defined()) cts_in[0] = t_operand;
  if (!inputs[1].defined()) {
    auto total = [rank](const Tensor& t) {
      Ints all;
      for (int64_t d = 0; d < rank; ++d) all.push_back(d);
      return rank == 0 ? t : lax::reduce_sum(t, all);
    };
    cts_in[1] = lax::sub(total(ct), total(t_operand));
  }
}

// An unmapped padding value pads around the batch axis; a mapped one pads with zeros and then
// selects each example's value where the mask says "padding" (like JAX).
void pad_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
               const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<PadParams>();
  const int64_t size = batching::batch_size(values, dims);
  if (dims[1] == kNotMapped) {
    const int64_t bd = dims[0];
    out = {
        lax::pad(values[0], values[1], inserted(p.low, bd, 0), inserted(p.high, bd, 0), inserted(p.interior, bd, 0))};
    out_dims = {bd};
    return;
  }
  Tensor x = batching::materialize(values[0], dims[0], size, 0);
  Tensor v = batching::move_axis(values[1], dims[1], 0);
  const Ints low = inserted(p.low, 0, 0), high = inserted(p.high, 0, 0), interior = inserted(p.interior, 0, 0);
  Tensor padded = lax::pad(x, scalar_like(x, 0), low, high, interior);
  Tensor mask = lax::pad(filled(x.shape(), 1.0, boolean), full(Shape{}, 0.0, boolean), low, high, interior);
  Tensor fill = lax::broadcast_in_dim(v, padded.shape(), {0});
  out = {lax::select(mask, padded, fill)};
  out_dims = {0};
}

const Primitive& pad_p() {
  static const Primitive& p = define_primitive("pad")
                                  .params<PadParams>()
                                  .linear()
                                  .shape(&pad_rule)
                                  .reference(&pad_reference)
                                  .cpu(&pad_cpu)
                                  .jvp(&all_linear_jvp)
                                  .transpose(&pad_transpose)
                                  .batch(&pad_batch)
                                  .build();
  return p;
}

// ---- concatenate ----

std::vector<AbstractValue> concatenate_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                            const Params& params) {
  const char* nm = self.name.c_str();
  if (in.empty()) detail::fail<ShapeError>(nm, "takes at least one operand, got none.");
  const int64_t k = params.as<ConcatenateParams>().dimension;
  const AbstractValue& x = in[0];
  check_axis(nm, "dimension", k, x.ndim(), x);
  Shape out = x.shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const AbstractValue& y = in[i];
    if (y.dtype != x.dtype)
      detail::fail<DTypeError>(nm, "operand ", i, " is ", y, " but operand 0 is ", x,
                               "; all operands need the same dtype. Convert with fx::astype.");
    bool same = y.ndim() == x.ndim();
    for (int64_t d = 0; same && d < x.ndim(); ++d) same = d == k || y.shape[d] == x.shape[d];
    if (!same)
      detail::fail<ShapeError>(nm, "operand ", i, " is ", y, " but operand 0 is ", x,
                               "; shapes must agree except in dimension ", k, ".");
    out[k] += y.shape[k];
  }
  checked_num_elements(nm, out.dims());
  return {AbstractValue{out, x.dtype}};
}

FLUXION_INDEXING_KERNELS(concatenate, k::concatenate(in, params.as<ConcatenateParams>().dimension, out[0]))

// concatenate -> each linear operand's slice of the cotangent.
void concatenate_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                           const std::vector<AbstractValue>& in_avals, const Params& params,
                           std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  const int64_t k = params.as<ConcatenateParams>().dimension;
  Ints start(static_cast<size_t>(ct.ndim()), 0), limit = ct.shape().dims();
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t size = in_avals[i].shape[k];
    if (!inputs[i].defined()) {
      start[static_cast<size_t>(k)] = offset;
      limit[static_cast<size_t>(k)] = offset + size;
      cts_in[i] = lax::slice(ct, start, limit);
    }
    offset += size;
  }
}

void concatenate_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                       const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t size = batching::batch_size(values, dims);
  std::vector<Tensor> xs;
  xs.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) xs.push_back(batching::materialize(values[i], dims[i], size, 0));
  out = {lax::concatenate(xs, params.as<ConcatenateParams>().dimension + 1)};
  out_dims = {0};
}

const Primitive& concatenate_p() {
  static const Primitive& p = define_primitive("concatenate")
                                  .params<ConcatenateParams>()
                                  .linear()
                                  .shape(&concatenate_rule)
                                  .reference(&concatenate_reference)
                                  .cpu(&concatenate_cpu)
                                  .jvp(&all_linear_jvp)
                                  .transpose(&concatenate_transpose)
                                  .batch(&concatenate_batch)
                                  .build();
  return p;
}

// ---- iota ----

std::vector<AbstractValue> iota_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                     const Params& params) {
  check_arity(self, in, 0);
  const auto& p = params.as<IotaParams>();
  const char* nm = self.name.c_str();
  if (!kNumeric.contains(p.dtype))
    detail::fail<DTypeError>(nm, "dtype=", p.dtype, " is not supported; iota makes ", kNumeric.describe(), ".");
  checked_num_elements(nm, p.shape.dims());
  const AbstractValue out{p.shape, p.dtype};
  check_axis(nm, "dimension", p.dimension, p.shape.size(), out);
  return {out};
}

FLUXION_INDEXING_KERNELS(iota, (void)in; k::iota(params.as<IotaParams>().dimension, out[0]))

// iota has no inputs, so the batch interpreter never calls this; it is here for completeness.
void iota_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>&,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = fluxion::bind(self, values, params);
  out_dims.assign(out.size(), kNotMapped);
}

const Primitive& iota_p() {
  static const Primitive& p = define_primitive("iota")
                                  .params<IotaParams>()
                                  .shape(&iota_rule)
                                  .reference(&iota_reference)
                                  .cpu(&iota_cpu)
                                  .jvp(&zero_jvp_rule)
                                  .batch(&iota_batch)
                                  .build();
  return p;
}

}  // namespace fluxion::primitives::indexing_family

namespace fluxion::lax {

Tensor pad(const Tensor& x, const Tensor& padding_value, const std::vector<int64_t>& low,
           const std::vector<int64_t>& high, const std::vector<int64_t>& interior) {
  namespace ix = primitives::indexing_family;
  return bind1(ix::pad_p(), {x, padding_value}, ix::PadParams(low, high, interior));
}
Tensor concatenate(const std::vector<Tensor>& xs, int64_t dimension) {
  namespace ix = primitives::indexing_family;
  const int64_t rank = xs.empty() || !xs[0].defined() ? 0 : xs[0].ndim();
  return bind1(ix::concatenate_p(), xs, ix::ConcatenateParams(ix::normalized_axis("concatenate", dimension, rank)));
}
Tensor iota(DType dtype, const Shape& shape, int64_t dimension) {
  namespace ix = primitives::indexing_family;
  return bind1(ix::iota_p(), {}, ix::IotaParams(dtype, shape, ix::normalized_axis("iota", dimension, shape.size())));
}

}  // namespace fluxion::lax
