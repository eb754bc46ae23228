// Shape and movement primitives: broadcast_in_dim reshape transpose squeeze expand_dims. All are
// linear; reshape, squeeze and expand_dims are views (eager evaluation shares the operand's
// buffer), their kernels are plain copies kept for completeness. Params hold canonical
// (non-negative) axes: the lax wrappers normalise negative ones. Each primitive's shape rule,
// kernels, transpose, batching rule and declaration, in that order.
#include <algorithm>
#include <sstream>

#include "backends/cpu/shape.hpp"
#include "backends/reference/shape.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "primitives/shape.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace shape_family {

using Axes = std::vector<int64_t>;

/// "(0,2)" — axis lists in messages, printed like the Jaxpr params.
std::string axes_str(const Axes& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

// ---- shared by the five ----
// All five are linear in their single operand: the jvp applies the primitive to the tangent, the
// transpose undoes the movement (summing where broadcast_in_dim copied). Integer and bool operands
// have no tangents. The views' kernels are plain copies.

void copy_cpu(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  cpu::shape_kernels::copy_flat(in[0], out[0]);
}
void copy_reference(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  reference::shape_kernels::copy_flat(in[0], out[0]);
}

void movement_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                  const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(1, Tensor());
  if (tangents[0].defined() && is_floating(primals_out[0].dtype()))
    tangents_out[0] = fluxion::bind1(self, {tangents[0]}, params);
}

// The batched operand is always mapped (single input). Logical axis a of an operand mapped along
// bd sits at physical axis a < bd ? a : a + 1.
int64_t physical_axis(int64_t a, int64_t bd) { return a < bd ? a : a + 1; }

// ---- broadcast_in_dim ----

std::vector<AbstractValue> broadcast_in_dim_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                 const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<BroadcastInDimParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const Axes& bd = p.broadcast_dimensions;
  const int64_t out_rank = p.shape.size();
  checked_num_elements(nm, p.shape.dims());
  if (static_cast<int64_t>(bd.size()) != x.ndim())
    detail::fail<ShapeError>(nm, "broadcast_dimensions=", axes_str(bd), " has ", bd.size(), " entries for operand ", x,
                             " of rank ", x.ndim(), ". Give one output dimension per operand dimension.");
  for (size_t i = 0; i < bd.size(); ++i) {
    if (bd[i] < 0 || bd[i] >= out_rank)
      detail::fail<AxisError>(nm, "broadcast_dimensions=", axes_str(bd), " names dimension ", bd[i],
                              ", out of range for the output shape ", p.shape, " of rank ", out_rank,
                              ". Use dimensions in [0, ", out_rank, ").");
    if (i > 0 && bd[i] <= bd[i - 1])
      detail::fail<AxisError>(nm, "broadcast_dimensions=", axes_str(bd),
                              " must be strictly increasing. Reorder the operand with lax::transpose first.");
    const int64_t have = x.shape[static_cast<int64_t>(i)], want = p.shape[bd[i]];
    if (have != 1 && have != want)
      detail::fail<ShapeError>(nm, "operand ", x, " dimension ", i, " has size ", have,
                               ", which cannot broadcast to size ", want, " (dimension ", bd[i],
                               " of the output shape ", p.shape, "). Sizes must be equal or 1.");
  }
  return {AbstractValue{p.shape, x.dtype}};
}

void broadcast_in_dim_cpu(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  cpu::shape_kernels::broadcast_in_dim(in[0], p.as<BroadcastInDimParams>().broadcast_dimensions, out[0]);
}
void broadcast_in_dim_reference(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  reference::shape_kernels::broadcast_in_dim(in[0], p.as<BroadcastInDimParams>().broadcast_dimensions, out[0]);
}

// Sums the cotangent over the new output dims and over operand dims of size 1 that were expanded,
// then restores the operand's size-1 dims with a reshape.
void broadcast_in_dim_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                                const std::vector<AbstractValue>& in_avals, const Params& params,
                                std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined() || inputs[0].defined()) return;
  const auto& p = params.as<BroadcastInDimParams>();
  const AbstractValue& x = in_avals[0];
  const int64_t out_rank = p.shape.size();
  std::vector<int64_t> source(static_cast<size_t>(out_rank), -1);  // operand dim of each output dim
  for (size_t i = 0; i < p.broadcast_dimensions.size(); ++i)
    source[static_cast<size_t>(p.broadcast_dimensions[i])] = static_cast<int64_t>(i);
  Axes sum_axes;
  for (int64_t d = 0; d < out_rank; ++d) {
    const int64_t i = source[static_cast<size_t>(d)];
    if (i < 0 || (x.shape[i] == 1 && p.shape[d] != 1)) sum_axes.push_back(d);
  }
  Tensor r = sum_axes.empty() ? ct : lax::reduce_sum(ct, sum_axes);
  if (r.shape() != x.shape) r = lax::reshape(r, x.shape);
  cts_in[0] = r;
}

void broadcast_in_dim_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                            const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<BroadcastInDimParams>();
  const Tensor& v = values[0];
  const int64_t size = v.shape()[dims[0]];
  Tensor x = batching::move_axis(v, dims[0], 0);
  std::vector<int64_t> shape{size};
  shape.insert(shape.end(), p.shape.begin(), p.shape.end());
  Axes bdims{0};
  for (int64_t d : p.broadcast_dimensions) bdims.push_back(d + 1);
  out = {lax::broadcast_in_dim(x, Shape(shape), bdims)};
  out_dims = {0};
}

const Primitive& broadcast_in_dim_p() {
  static const Primitive& p = define_primitive("broadcast_in_dim")
                                  .params<BroadcastInDimParams>()
                                  .linear()
                                  .shape(&broadcast_in_dim_rule)
                                  .reference(&broadcast_in_dim_reference)
                                  .cpu(&broadcast_in_dim_cpu)
                                  .jvp(&movement_jvp)
                                  .transpose(&broadcast_in_dim_transpose)
                                  .batch(&broadcast_in_dim_batch)
                                  .build();
  return p;
}

// ---- reshape ----

std::vector<AbstractValue> reshape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                        const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<ReshapeParams>();
  const char* nm = self.name.c_str();
  const int64_t want = checked_num_elements(nm, p.new_sizes.dims());
  const int64_t have = in[0].shape.num_elements();
  if (want != have)
    detail::fail<ShapeError>(nm, "cannot reshape ", in[0], " (", have, " elements) to new_sizes ", p.new_sizes, " (",
                             want, " elements). The element count must stay the same.");
  return {AbstractValue{p.new_sizes, in[0].dtype}};
}

void reshape_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                       const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined() || inputs[0].defined()) return;
  cts_in[0] = lax::reshape(cts_out[0], in_avals[0].shape);
}

void reshape_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                   const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const Shape& to = params.as<ReshapeParams>().new_sizes;
  const Tensor& v = values[0];
  std::vector<int64_t> shape{v.shape()[dims[0]]};
  shape.insert(shape.end(), to.begin(), to.end());
  out = {lax::reshape(batching::move_axis(v, dims[0], 0), Shape(shape))};
  out_dims = {0};
}

const Primitive& reshape_p() {
  static const Primitive& p = define_primitive("reshape")
                                  .params<ReshapeParams>()
                                  .linear()
                                  .view()
                                  .shape(&reshape_rule)
                                  .reference(&copy_reference)
                                  .cpu(&copy_cpu)
                                  .jvp(&movement_jvp)
                                  .transpose(&reshape_transpose)
                                  .batch(&reshape_batch)
                                  .build();
  return p;
}

// ---- transpose ----

std::vector<AbstractValue> transpose_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<TransposeParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const int64_t rank = x.ndim();
  const Axes& perm = p.permutation;
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (size_t k = 0; ok && k < perm.size(); ++k) {
    ok = perm[k] >= 0 && perm[k] < rank && !seen[static_cast<size_t>(perm[k])];
    if (ok) seen[static_cast<size_t>(perm[k])] = 1;
  }
  if (!ok)
    detail::fail<AxisError>(nm, "permutation=", axes_str(perm), " is not a permutation of the ", rank,
                            " dimensions of operand ", x, ". List each of 0..", rank - 1, " exactly once.");
  Shape out;
  for (int64_t k : perm) out.push_back(x.shape[k]);
  return {AbstractValue{out, x.dtype}};
}

void transpose_cpu(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  cpu::shape_kernels::transpose(in[0], p.as<TransposeParams>().permutation, out[0]);
}
void transpose_reference(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  reference::shape_kernels::transpose(in[0], p.as<TransposeParams>().permutation, out[0]);
}

void transpose_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                         const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined() || inputs[0].defined()) return;
  const Axes& perm = params.as<TransposeParams>().permutation;
  Axes inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[static_cast<size_t>(perm[k])] = static_cast<int64_t>(k);
  cts_in[0] = lax::transpose(cts_out[0], inverse);
}

// One transpose: the batch axis goes first, the logical axes follow in permuted order.
void transpose_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                     const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t bd = dims[0];
  Axes perm{bd};
  for (int64_t a : params.as<TransposeParams>().permutation) perm.push_back(physical_axis(a, bd));
  out = {lax::transpose(values[0], perm)};
  out_dims = {0};
}

const Primitive& transpose_p() {
  static const Primitive& p = define_primitive("transpose")
                                  .params<TransposeParams>()
                                  .linear()
                                  .shape(&transpose_rule)
                                  .reference(&transpose_reference)
                                  .cpu(&transpose_cpu)
                                  .jvp(&movement_jvp)
                                  .transpose(&transpose_transpose)
                                  .batch(&transpose_batch)
                                  .build();
  return p;
}

// ---- squeeze ----

std::vector<AbstractValue> squeeze_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                        const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<SqueezeParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const int64_t rank = x.ndim();
  std::vector<char> drop(static_cast<size_t>(rank), 0);
  for (int64_t d : p.dimensions) {
    if (d < 0 || d >= rank)
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " names dimension ", d,
                              ", out of range for operand ", x, " of rank ", rank, ". Use dimensions in [0, ", rank,
                              ") (lax::squeeze also accepts negative ones).");
    if (drop[static_cast<size_t>(d)])
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " lists dimension ", d,
                              " twice. List each dimension once.");
    if (x.shape[d] != 1)
      detail::fail<ShapeError>(nm, "cannot squeeze dimension ", d, " of operand ", x, ": its size is ", x.shape[d],
                               ", not 1. Squeeze only size-1 dimensions (slice or reduce others).");
    drop[static_cast<size_t>(d)] = 1;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[static_cast<size_t>(d)]) out.push_back(x.shape[d]);
  return {AbstractValue{out, x.dtype}};
}

void squeeze_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                       const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined() || inputs[0].defined()) return;
  cts_in[0] = lax::expand_dims(cts_out[0], params.as<SqueezeParams>().dimensions);
}

// Squeezes the physical positions of the logical dims; the batch axis shifts left past them.
void squeeze_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                   const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t bd = dims[0];
  Axes phys;
  int64_t below = 0;
  for (int64_t d : params.as<SqueezeParams>().dimensions) {
    phys.push_back(physical_axis(d, bd));
    below += d < bd ? 1 : 0;
  }
  out = {lax::squeeze(values[0], phys)};
  out_dims = {bd - below};
}

const Primitive& squeeze_p() {
  static const Primitive& p = define_primitive("squeeze")
                                  .params<SqueezeParams>()
                                  .linear()
                                  .view()
                                  .shape(&squeeze_rule)
                                  .reference(&copy_reference)
                                  .cpu(&copy_cpu)
                                  .jvp(&movement_jvp)
                                  .transpose(&squeeze_transpose)
                                  .batch(&squeeze_batch)
                                  .build();
  return p;
}

// ---- expand_dims ----

std::vector<AbstractValue> expand_dims_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                            const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<ExpandDimsParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(p.dimensions.size());
  std::vector<char> added(static_cast<size_t>(out_rank), 0);
  for (int64_t d : p.dimensions) {
    if (d < 0 || d >= out_rank)
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " names output position ", d,
                              ", out of range for the rank-", out_rank, " result of expanding ", x,
                              ". Use positions in [0, ", out_rank, ").");
    if (added[static_cast<size_t>(d)])
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " lists position ", d,
                              " twice. List each new position once.");
    added[static_cast<size_t>(d)] = 1;
  }
  Shape out;
  int64_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(added[static_cast<size_t>(d)] ? 1 : x.shape[next++]);
  return {AbstractValue{out, x.dtype}};
}

void expand_dims_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                           const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined() || inputs[0].defined()) return;
  cts_in[0] = lax::squeeze(cts_out[0], params.as<ExpandDimsParams>().dimensions);
}

void expand_dims_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                       const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  Axes shifted;
  for (int64_t d : params.as<ExpandDimsParams>().dimensions) shifted.push_back(d + 1);
  out = {lax::expand_dims(batching::move_axis(values[0], dims[0], 0), shifted)};
  out_dims = {0};
}

const Primitive& expand_dims_p() {
  static const Primitive& p = define_primitive("expand_dims")
                                  .params<ExpandDimsParams>()
                                  .linear()
                                  .view()
                                  .shape(&expand_dims_rule)
                                  .reference(&copy_reference)
                                  .cpu(&copy_cpu)
                                  .jvp(&movement_jvp)
                                  .transpose(&expand_dims_transpose)
                                  .batch(&expand_dims_batch)
                                  .build();
  return p;
}

/// Negative axes counted from the end of a rank-`rank` shape, sorted (AxisError naming `where`).
/// rank < 0 (an empty handle) leaves them for bind to reject.
Axes normalized_sorted(const char* where, const Axes& axes, int64_t rank) {
  if (rank < 0) return axes;
  Axes out;
  out.reserve(axes.size());
  for (int64_t a : axes) out.push_back(normalize_axis(where, a, rank));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace shape_family

void register_shape(std::vector<const Primitive*>& list) {
  using namespace shape_family;
  list.insert(list.end(), {&broadcast_in_dim_p(), &reshape_p(), &transpose_p(), &squeeze_p(), &expand_dims_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {

Tensor broadcast_in_dim(const Tensor& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions) {
  namespace sf = primitives::shape_family;
  return bind1(sf::broadcast_in_dim_p(), {x}, sf::BroadcastInDimParams(shape, broadcast_dimensions));
}
Tensor reshape(const Tensor& x, const Shape& new_sizes) {
  namespace sf = primitives::shape_family;
  return bind1(sf::reshape_p(), {x}, sf::ReshapeParams(new_sizes));
}
Tensor transpose(const Tensor& x, const std::vector<int64_t>& permutation) {
  namespace sf = primitives::shape_family;
  return bind1(sf::transpose_p(), {x}, sf::TransposeParams(permutation));
}
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& dimensions) {
  namespace sf = primitives::shape_family;
  return bind1(sf::squeeze_p(), {x},
               sf::SqueezeParams(sf::normalized_sorted("squeeze", dimensions, x.defined() ? x.ndim() : -1)));
}
Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& dimensions) {
  namespace sf = primitives::shape_family;
  const int64_t out_rank = x.defined() ? x.ndim() + static_cast<int64_t>(dimensions.size()) : -1;
  return bind1(sf::expand_dims_p(), {x},
               sf::ExpandDimsParams(sf::normalized_sorted("expand_dims", dimensions, out_rank)));
}

}  // namespace fluxion::lax
