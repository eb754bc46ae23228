// conv_general_dilated: JAX's general convolution (jax.lax.conv_general_dilated) over any number of spatial
// dims, with window strides, (lo, hi) padding (negative crops), lhs and rhs dilation, feature or batch groups
// and dimension numbers (ConvParams in convolution.hpp). Operands are one floating dtype (f32 or f64). The CPU
// kernel is im2col + GEMM (backends/cpu/convolution.hpp); the reference sums directly in long double
// (backends/reference/convolution.hpp). Bilinear, hence Traits.linear.
// Rules: jvp conv(dl, r) + conv(l, dr); transposes are convolutions, as in JAX: for the lhs, the cotangent
// convolved with the spatially reversed kernel, strides and lhs dilation swapping roles; for the rhs, the lhs
// convolved with the cotangent, strides and rhs dilation swapping roles, feature groups becoming batch groups
// and back. Batching folds the mapped axis into the lhs batch (lhs mapped), the rhs output features (rhs
// mapped) or the groups (both mapped), never a loop over examples.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "backends/cpu/convolution.hpp"
#include "backends/reference/convolution.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/convolution.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace convolution_detail {

/// A dilated extent: s elements with d - 1 holes between neighbours (0 stays 0).
int64_t dilate(int64_t s, int64_t d) { return s == 0 ? 0 : 1 + d * (s - 1); }

std::string list_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

/// `spec` is a permutation of [0, rank) (its `what` names it in the error).
void check_spec(const char* name, const char* what, const std::vector<int64_t>& spec, int64_t rank) {
  std::vector<int64_t> sorted = spec;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int64_t>(spec.size()) == rank;
  for (int64_t i = 0; ok && i < rank; ++i) ok = sorted[static_cast<size_t>(i)] == i;
  if (!ok)
    detail::fail<AxisError>(name, what, " ", list_str(spec), " must list each of the ", rank,
                            " dims of the operands exactly once (batch or out feature, feature, spatial...). Use "
                            "layout strings like (\"NHWC\", \"HWIO\", \"NHWC\") to build the dimension numbers.");
}

/// A per-spatial-dim list of length `ns` with entries >= `least`.
void check_list(const char* name, const char* what, const std::vector<int64_t>& v, int64_t ns, int64_t least) {
  if (static_cast<int64_t>(v.size()) != ns)
    detail::fail<ShapeError>(name, what, " ", list_str(v), " has ", v.size(), " entries but the convolution has ", ns,
                             " spatial dims. Give one entry per spatial dim.");
  for (int64_t x : v)
    if (x < least)
      detail::fail<ShapeError>(name, what, " ", list_str(v), " has an entry ", x, " below ", least, ". Entries of ",
                               what, " must be positive integers.");
}

std::vector<AbstractValue> conv_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                           const Params& params) {
  check_arity(self, in, 2);
  const auto& p = params.as<ConvParams>();
  const AbstractValue &lhs = in[0], &rhs = in[1];
  const char* name = self.name.c_str();
  if (!kFloating.contains(lhs.dtype) || !kFloating.contains(rhs.dtype))
    detail::fail<DTypeError>(name, "needs floating operands (f32 or f64), got lhs ", lhs, " and rhs ", rhs,
                             ". Convert them with fx::astype.");
  if (lhs.dtype != rhs.dtype)
    detail::fail<DTypeError>(name, "operand dtypes differ: lhs ", lhs, " and rhs ", rhs,
                             ". Convert one with fx::astype (fx::conv_general_dilated promotes automatically).");
  const int64_t rank = lhs.ndim();
  if (rhs.ndim() != rank || rank < 2)
    detail::fail<ShapeError>(name, "lhs ", lhs, " and rhs ", rhs,
                             " must have the same rank, at least 2 (batch, feature, spatial dims...); got ", rank,
                             " and ", rhs.ndim(), ". A 2-d convolution takes rank-4 operands.");
  check_spec(name, "lhs_spec", p.lhs_spec, rank);
  check_spec(name, "rhs_spec", p.rhs_spec, rank);
  check_spec(name, "out_spec", p.out_spec, rank);
  const int64_t ns = rank - 2;
  check_list(name, "window_strides", p.window_strides, ns, 1);
  check_list(name, "lhs_dilation", p.lhs_dilation, ns, 1);
  check_list(name, "rhs_dilation", p.rhs_dilation, ns, 1);
  check_list(name, "padding_lo", p.padding_lo, ns, INT64_MIN);
  check_list(name, "padding_hi", p.padding_hi, ns, INT64_MIN);
  const int64_t fgc = p.feature_group_count, bgc = p.batch_group_count;
  if (fgc < 1 || bgc < 1 || (fgc > 1 && bgc > 1))
    detail::fail<ShapeError>(name, "feature_group_count ", fgc, " and batch_group_count ", bgc,
                             " must be positive, and at most one of them may exceed 1.");
  const int64_t batch = lhs.shape[p.lhs_spec[0]], features = lhs.shape[p.lhs_spec[1]];
  const int64_t out_features = rhs.shape[p.rhs_spec[0]], in_features = rhs.shape[p.rhs_spec[1]];
  if (features % fgc != 0)
    detail::fail<ShapeError>(name, "feature_group_count ", fgc, " does not divide the ", features, " features of lhs ",
                             lhs, ". Choose a group count that divides the feature dim.");
  if (features / fgc != in_features)
    detail::fail<ShapeError>(name, "lhs ", lhs, " has ", features, " features",
                             fgc > 1 ? " per group count " + std::to_string(fgc) : std::string(), ", so rhs ", rhs,
                             " needs ", features / fgc, " input features (dim ", p.rhs_spec[1], "), not ", in_features,
                             ". The rhs input-feature dim is the lhs feature dim divided by feature_group_count.");
  if (out_features % fgc != 0 || out_features % bgc != 0)
    detail::fail<ShapeError>(name, "the ", out_features, " output features of rhs ", rhs,
                             " are not a multiple of the group count ", std::max(fgc, bgc),
                             ". Each group needs the same number of output features.");
  if (batch % bgc != 0)
    detail::fail<ShapeError>(name, "batch_group_count ", bgc, " does not divide the batch ", batch, " of lhs ", lhs,
                             ". Choose a group count that divides the batch dim.");
  Shape out(std::vector<int64_t>(static_cast<size_t>(rank), 0));
  out[p.out_spec[0]] = batch / bgc;
  out[p.out_spec[1]] = out_features;
  for (int64_t d = 0; d < ns; ++d) {
    const size_t u = static_cast<size_t>(d);
    const int64_t padded = dilate(lhs.shape[p.lhs_spec[u + 2]], p.lhs_dilation[u]) + p.padding_lo[u] + p.padding_hi[u];
    if (padded < 0)
      detail::fail<ShapeError>(name, "padding (", p.padding_lo[u], ", ", p.padding_hi[u], ") of spatial dim ", d,
                               " crops more than the ", lhs.shape[p.lhs_spec[u + 2]], " elements of lhs ", lhs,
                               " there. Negative padding may at most remove the whole dim.");
    const int64_t window = dilate(rhs.shape[p.rhs_spec[u + 2]], p.rhs_dilation[u]);
    out[p.out_spec[u + 2]] = padded < window ? 0 : (padded - window) / p.window_strides[u] + 1;
  }
  return {AbstractValue{std::move(out), lhs.dtype}};
}

template <bool Reference>
void conv_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto g = reference::convolution_detail::conv_geometry(in[0].shape(), in[1].shape(), out[0].shape(),
                                                              params.as<ConvParams>());
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Reference)
        reference::conv_general_dilated(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), g);
      else cpu::conv_general_dilated(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), g);
    }
  });
}

// ---- differentiation and batching rules ----

Tensor conv(const Tensor& lhs, const Tensor& rhs, const ConvParams& p) {
  return fluxion::bind1(conv_general_dilated_p(), {lhs, rhs}, p);
}

/// The spec with its first two entries swapped (batch <-> feature roles).
std::vector<int64_t> swap_roles(std::vector<int64_t> spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

/// x with axis `src` merged into axis `dst` (numbered after removing src) as its major part, like JAX's
/// _reshape_axis_into.
Tensor reshape_axis_into(int64_t src, int64_t dst, const Tensor& x) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  std::vector<int64_t> shape;
  for (int64_t i : perm) shape.push_back(x.shape()[i]);
  shape[static_cast<size_t>(dst + 1)] *= shape[static_cast<size_t>(dst)];
  shape.erase(shape.begin() + dst);
  return lax::reshape(lax::transpose(x, perm), Shape(shape));
}

/// x with axis `src` split into (size1, rest), like JAX's _reshape_axis_out_of.
Tensor reshape_axis_out_of(int64_t src, int64_t size1, const Tensor& x) {
  std::vector<int64_t> shape = x.shape().dims();
  const int64_t rest = shape[static_cast<size_t>(src)] / size1;
  shape[static_cast<size_t>(src)] = rest;
  shape.insert(shape.begin() + src, size1);
  return lax::reshape(x, Shape(shape));
}

/// x reversed along `axes` (a gather of descending indices per axis of size > 1).
Tensor reverse(const Tensor& x, const std::vector<int64_t>& axes) {
  Tensor r = x;
  for (int64_t a : axes) {
    const int64_t n = x.shape()[a];
    if (n < 2) continue;
    std::vector<int32_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(n - 1 - i);
    r = lax::gather(r, device_put(from_vector(idx), x.device()), a);  // indices where x is
  }
  return r;
}

std::vector<int64_t> spatial_sizes(const Shape& s, const std::vector<int64_t>& spec) {
  std::vector<int64_t> out;
  for (size_t d = 2; d < spec.size(); ++d) out.push_back(s[spec[d]]);
  return out;
}

// Bilinear: d conv(l, r) = conv(dl, r) + conv(l, dr), zero terms skipped.
void conv_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  Tensor t;
  if (tangents[0].defined()) t = fluxion::bind1(self, {tangents[0], primals[1]}, params);
  if (tangents[1].defined()) {
    Tensor tr = fluxion::bind1(self, {primals[0], tangents[1]}, params);
    t = t.defined() ? lax::add(t, tr) : tr;
  }
  tangents_out = {t};
}

// Cotangent of the lhs: ct convolved with the kernel reversed spatially and its feature roles swapped (groups
// moved from rhs output into rhs input features); window strides become lhs dilation and vice versa, and the
// padding makes the result exactly lhs-sized. Batch groups come back out of the result's feature dim.
Tensor transpose_lhs(const Tensor& ct, const AbstractValue& lhs, const Tensor& rhs, const ConvParams& p) {
  const std::vector<int64_t> in = spatial_sizes(lhs.shape, p.lhs_spec), kernel = spatial_sizes(rhs.shape(), p.rhs_spec),
                             out = spatial_sizes(ct.shape(), p.out_spec);
  ConvParams t;
  const int64_t groups = std::max(p.feature_group_count, p.batch_group_count);
  Tensor r = rhs;
  if (groups > 1) r = reshape_axis_into(p.rhs_spec[0], p.rhs_spec[1], reshape_axis_out_of(p.rhs_spec[0], groups, r));
  t.window_strides = p.lhs_dilation, t.lhs_dilation = p.window_strides, t.rhs_dilation = p.rhs_dilation;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t window = dilate(kernel[d], p.rhs_dilation[d]);
    const int64_t before = window - p.padding_lo[d] - 1;
    t.padding_lo.push_back(before);
    t.padding_hi.push_back(dilate(in[d], p.lhs_dilation[d]) + window - 1 - dilate(out[d], p.window_strides[d]) -
                           before);
  }
  t.lhs_spec = p.out_spec, t.rhs_spec = swap_roles(p.rhs_spec), t.out_spec = p.lhs_spec;
  t.feature_group_count = groups;
  const std::vector<int64_t> taps(p.rhs_spec.begin() + 2, p.rhs_spec.end());
  Tensor x = conv(ct, reverse(r, taps), t);
  if (p.batch_group_count > 1)
    x = reshape_axis_into(p.lhs_spec[1], p.lhs_spec[0], reshape_axis_out_of(p.lhs_spec[1], p.batch_group_count, x));
  return x;
}

// Cotangent of the rhs: lhs (batch and feature roles swapped) convolved with ct as the kernel; window strides
// and rhs dilation swap roles; feature groups become batch groups and back.
Tensor transpose_rhs(const Tensor& ct, const Tensor& lhs, const AbstractValue& rhs, const ConvParams& p) {
  const std::vector<int64_t> in = spatial_sizes(lhs.shape(), p.lhs_spec), kernel = spatial_sizes(rhs.shape, p.rhs_spec),
                             out = spatial_sizes(ct.shape(), p.out_spec);
  ConvParams t;
  t.window_strides = p.rhs_dilation, t.lhs_dilation = p.lhs_dilation, t.rhs_dilation = p.window_strides;
  for (size_t d = 0; d < in.size(); ++d) {
    t.padding_lo.push_back(p.padding_lo[d]);
    t.padding_hi.push_back(dilate(out[d], p.window_strides[d]) - dilate(in[d], p.lhs_dilation[d]) +
                           dilate(kernel[d], p.rhs_dilation[d]) - p.padding_lo[d] - 1);
  }
  t.lhs_spec = swap_roles(p.lhs_spec), t.rhs_spec = swap_roles(p.out_spec), t.out_spec = swap_roles(p.rhs_spec);
  t.feature_group_count = p.batch_group_count, t.batch_group_count = p.feature_group_count;
  return conv(lhs, ct, t);
}

// Linear in each operand separately: called with one undefined (linear) operand. Empty operands give zeros
// (their degenerate transposed convolutions would have empty kernels).
void conv_transpose_rule(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                         const std::vector<AbstractValue>& in_avals, const Params& params,
                         std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  const auto& p = params.as<ConvParams>();
  if (!inputs[0].defined() && !inputs[1].defined())
    detail::fail<Error>(self.name.c_str(),
                        "internal: transpose with both operands linear (the product is not linear).");
  const bool empty = ct.size() == 0 || in_avals[0].shape.num_elements() == 0 || in_avals[1].shape.num_elements() == 0;
  for (int k = 0; k < 2; ++k) {
    if (inputs[static_cast<size_t>(k)].defined()) continue;
    const AbstractValue& a = in_avals[static_cast<size_t>(k)];
    if (empty) cts_in[static_cast<size_t>(k)] = device_put(zeros(a.shape, a.dtype), ct.device());
    else if (k == 0) cts_in[0] = transpose_lhs(ct, a, inputs[1], p);
    else cts_in[1] = transpose_rhs(ct, inputs[0], a, p);
  }
}

// The mapped axis folds into a dim the convolution already has (JAX's batching rule): lhs mapped -> the lhs
// batch (inside each batch group), rhs mapped -> the rhs output features (inside each group), both -> one more
// factor of the group count. The output's batch axis is split back out where it was folded. A size-0 mapped
// axis gives zeros directly (the group count would be 0).
void conv_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  ConvParams p = params.as<ConvParams>();
  const Tensor &lhs = values[0], &rhs = values[1];
  const int64_t lb = dims[0], rb = dims[1];
  const int64_t size = batching::batch_size(values, dims);
  if (size == 0) {
    std::vector<AbstractValue> avals;
    for (int k = 0; k < 2; ++k) {
      Shape s = values[static_cast<size_t>(k)].shape();
      std::vector<int64_t> d = s.dims();
      if (dims[static_cast<size_t>(k)] != kNotMapped) d.erase(d.begin() + dims[static_cast<size_t>(k)]);
      avals.push_back(AbstractValue{Shape(d), values[static_cast<size_t>(k)].dtype()});
    }
    const AbstractValue o = self.abstract_eval(avals, p)[0];
    std::vector<int64_t> shape = o.shape.dims();
    shape.insert(shape.begin(), 0);
    out = {device_put(zeros(Shape(shape), o.dtype), values[dims[0] != kNotMapped ? 0 : 1].device())};
    out_dims = {0};
    return;
  }
  const ConvParams q = p;
  if (lb != kNotMapped && rb != kNotMapped) {
    Tensor l;
    if (q.batch_group_count > 1) {
      l = reshape_axis_into(lb, q.lhs_spec[0], lhs);
      p.batch_group_count *= size;
    } else {
      l = reshape_axis_into(lb, q.lhs_spec[1], lhs);
      p.feature_group_count *= size;
    }
    Tensor y = conv(l, reshape_axis_into(rb, q.rhs_spec[0], rhs), p);
    out = {reshape_axis_out_of(q.out_spec[1], size, y)};
    out_dims = {q.out_spec[1]};
  } else if (lb != kNotMapped) {
    Tensor l;
    if (q.batch_group_count == 1) {
      l = reshape_axis_into(lb, q.lhs_spec[0], lhs);
    } else {  // (groups, per group) -> (groups, mapped, per group), so each group keeps its own examples
      const int64_t b = q.lhs_spec[0];
      l = reshape_axis_out_of(b + (lb <= b ? 1 : 0), q.batch_group_count, lhs);
      l = reshape_axis_into(lb + (b < lb ? 1 : 0), b + 1, l);
      l = reshape_axis_into(b, b, l);
    }
    out = {reshape_axis_out_of(q.out_spec[0], size, conv(l, rhs, p))};
    out_dims = {q.out_spec[0]};
  } else {
    const int64_t groups = std::max(q.feature_group_count, q.batch_group_count), o = q.rhs_spec[0];
    Tensor r;
    if (groups == 1) {
      r = reshape_axis_into(rb, o, rhs);
    } else {  // the mapped axis goes inside each group's output features
      r = reshape_axis_out_of(o + (rb <= o ? 1 : 0), groups, rhs);
      r = reshape_axis_into(rb + (o < rb ? 1 : 0), o + 1, r);
      r = reshape_axis_into(o, o, r);
    }
    Tensor y = conv(lhs, r, p);
    const int64_t f = q.out_spec[1];
    if (groups == 1) {
      y = reshape_axis_out_of(f, size, y);
    } else {
      y = reshape_axis_out_of(f, groups, y);
      y = reshape_axis_out_of(f + 1, size, y);
      y = reshape_axis_into(f, f + 1, y);
    }
    out = {y};
    out_dims = {f};
  }
}

}  // namespace convolution_detail

const Primitive& convolution_detail::conv_general_dilated_p() {
  static const Primitive& p = define_primitive("conv_general_dilated")
                                  .params<ConvParams>()
                                  .linear()  // bilinear: linear in each operand
                                  .shape(&conv_shape_rule)
                                  .reference(&conv_kernel<true>)
                                  .cpu(&conv_kernel<kLightKernels>)
                                  .jvp(&conv_jvp)
                                  .transpose(&conv_transpose_rule)
                                  .batch(&conv_batch)
                                  .build();
  return p;
}

void register_convolution(std::vector<const Primitive*>& list) {
  list.push_back(&convolution_detail::conv_general_dilated_p());
}

}  // namespace fluxion::primitives
