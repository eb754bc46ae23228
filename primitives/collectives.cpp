// Collectives over named axes: all_sum, all_mean, all_max, all_min, pvary, all_gather, reduce_scatter,
// all_to_all, broadcast and axis_index, with every rule.
//
// Derivatives follow jax.shard_map's pairs (also inside a named vmap, where jax.vmap differs). A collective's
// result on one rank is a function of every rank's operand, so its transpose is the global one, with one
// convention for values every rank holds alike (the output of all_sum, all_mean, all_max, all_min): their
// cotangent is held once, not once per rank, so the transpose of all_sum is pvary (each rank's operand gets the
// cotangent) and pvary's transpose is all_sum. all_gather and reduce_scatter transpose into each other,
// all_to_all into the all_to_all with its axes swapped, and broadcast into the masked all_sum that delivers every
// rank's cotangent to the root. In data-parallel code the gradient with respect to a rank's own operand is thus
// that rank's share; summing the shares of a replicated parameter is the caller's
// (fx::distributed::all_mean_gradients), while the shards of an all_gather'd parameter get theirs through
// reduce_scatter by autodiff alone.
#include "primitives/collectives.hpp"

#include <numeric>

#include "fluxion/collectives.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "backends/distributed/transport.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives::collectives_detail {

using batching::materialize;
using batching::move_axis;

template <class P> const std::string& axis_name_of(const Params& params) { return params.as<P>().axis_name; }

// ---- shape rules ----

void check_operand(const Primitive& self, const std::vector<AbstractValue>& in, bool floating_only) {
  check_arity(self, in, 1);
  if (in[0].dtype == boolean || (floating_only && !is_floating(in[0].dtype)))
    detail::fail<DTypeError>(self.name.c_str(), "does not take ", in[0], floating_only ? "; it needs f32 or f64" : "",
                             ". Convert with fx::astype first.");
}

void check_axis(const Primitive& self, const char* what, int64_t axis, int64_t rank, const AbstractValue& a) {
  if (axis < 0 || axis >= rank)
    detail::fail<AxisError>(self.name.c_str(), what, " ", axis, " is out of range for ", a, ". Use an axis in [0, ",
                            rank, ").");
}

// The axis size in params is never user input, but a loaded file (fx::load_exported) can hold any value:
// the rules divide by it and multiply sizes by it.
void check_axis_size(const Primitive& self, int64_t size, const std::string& name) {
  if (size < 1)
    detail::fail<AxisError>(self.name.c_str(), "axis '", name, "' has size ", size, ". Axis sizes are at least 1.");
}
int64_t times_axis_size(const Primitive& self, int64_t dim, int64_t size) {
  int64_t r = 0;
  if (__builtin_mul_overflow(dim, size, &r))
    detail::fail<ShapeError>(self.name.c_str(), "a dimension of ", dim, " times the axis size ", size,
                             " overflows. Use a smaller axis.");
  return r;
}

template <bool FloatingOnly>
std::vector<AbstractValue> same_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params&) {
  check_operand(self, in, FloatingOnly);
  return {in[0]};
}

std::vector<AbstractValue> pvary_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                            const Params&) {
  check_arity(self, in, 1);
  return {in[0]};
}

std::vector<AbstractValue> axis_index_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                 const Params&) {
  check_arity(self, in, 0);
  return {AbstractValue{Shape{}, i32}};
}

std::vector<AbstractValue> all_gather_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                 const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<GatherParams>();
  check_axis_size(self, p.axis_size, p.axis_name);
  AbstractValue out = in[0];
  std::vector<int64_t>& dims = out.shape.dims();
  if (p.tiled) {
    check_axis(self, "axis", p.axis, in[0].ndim(), in[0]);
    dims[p.axis] = times_axis_size(self, dims[p.axis], p.axis_size);
  } else {
    check_axis(self, "axis", p.axis, in[0].ndim() + 1, in[0]);
    dims.insert(dims.begin() + p.axis, p.axis_size);
  }
  return {out};
}

std::vector<AbstractValue> reduce_scatter_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                     const Params& params) {
  check_operand(self, in, false);
  const auto& p = params.as<GatherParams>();
  check_axis_size(self, p.axis_size, p.axis_name);
  check_axis(self, "axis", p.axis, in[0].ndim(), in[0]);
  AbstractValue out = in[0];
  std::vector<int64_t>& dims = out.shape.dims();
  const int64_t n = dims[p.axis];
  if (p.tiled ? n % p.axis_size != 0 : n != p.axis_size)
    detail::fail<ShapeError>(self.name.c_str(), "axis ", p.axis, " of ", in[0], " has size ", n, ", which ",
                             p.tiled ? "is not a multiple of" : "is not", " the size ", p.axis_size, " of axis '",
                             p.axis_name, "'. ",
                             p.tiled ? "Pad it to a multiple." : "Give one block per member, or use tiled=true.");
  if (p.tiled) dims[p.axis] /= p.axis_size;
  else dims.erase(dims.begin() + p.axis);
  return {out};
}

std::vector<AbstractValue> all_to_all_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                 const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<AllToAllParams>();
  check_axis_size(self, p.axis_size, p.axis_name);
  check_axis(self, "split_axis", p.split_axis, in[0].ndim(), in[0]);
  check_axis(self, "concat_axis", p.concat_axis, in[0].ndim(), in[0]);
  AbstractValue out = in[0];
  std::vector<int64_t>& dims = out.shape.dims();
  if (dims[p.split_axis] % p.axis_size != 0)
    detail::fail<ShapeError>(self.name.c_str(), "split_axis ", p.split_axis, " of ", in[0], " has size ",
                             dims[p.split_axis], ", which is not a multiple of the size ", p.axis_size, " of axis '",
                             p.axis_name, "'. Pad it to a multiple.");
  dims[p.split_axis] /= p.axis_size;
  dims[p.concat_axis] = times_axis_size(self, dims[p.concat_axis], p.axis_size);
  return {out};
}

std::vector<AbstractValue> broadcast_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<BroadcastParams>();
  if (p.root < 0 || p.root >= p.axis_size)
    detail::fail<AxisError>(self.name.c_str(), "root ", p.root, " is not a member of axis '", p.axis_name, "' of size ",
                            p.axis_size, ". Use a root in [0, ", p.axis_size, ").");
  return {in[0]};
}

// ---- jvp and transpose rules ----

// all_max/all_min: the tangent of the selected operand, split evenly between ranks that tie.
template <bool IsMax> void extremum_jvp(const Primitive& self, const std::vector<Tensor>& primals,
                                        const std::vector<Tensor>& tangents, const Params& params,
                                        std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out = {Tensor()};
  if (!tangents[0].defined() || !is_floating(primals[0].dtype())) return;
  const std::string& name = params.as<NamedAxisParams>().axis_name;
  Tensor selected =
      lax::stop_gradient(lax::convert_element_type(lax::eq(primals[0], primals_out[0]), primals[0].dtype()));
  tangents_out[0] = lax::div(all_sum(lax::mul(selected, tangents[0]), name), all_sum(selected, name));
}

void all_sum_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                       const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  cts_in = {cts[0].defined() ? pvary(cts[0], params.as<NamedAxisParams>().axis_name) : Tensor()};
}

void all_mean_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                        const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<NamedAxisParams>();
  cts_in = {cts[0].defined() ? lax::div(pvary(cts[0], p.axis_name), scalar_like(cts[0], double(p.axis_size)))
                             : Tensor()};
}

void pvary_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                     const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  cts_in = {cts[0].defined() ? all_sum(cts[0], params.as<NamedAxisParams>().axis_name) : Tensor()};
}

void all_gather_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                          const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<GatherParams>();
  cts_in = {cts[0].defined() ? reduce_scatter(cts[0], p.axis_name, p.axis, p.tiled) : Tensor()};
}

void reduce_scatter_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                              const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<GatherParams>();
  cts_in = {cts[0].defined() ? all_gather(cts[0], p.axis_name, p.axis, p.tiled) : Tensor()};
}

void all_to_all_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                          const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<AllToAllParams>();
  cts_in = {cts[0].defined() ? all_to_all(cts[0], p.axis_name, p.concat_axis, p.split_axis) : Tensor()};
}

// Every rank's cotangent flows back to the root's operand; the other ranks' operands get zero.
void broadcast_transpose(const Primitive&, const std::vector<Tensor>& cts, const std::vector<Tensor>&,
                         const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<BroadcastParams>();
  if (!cts[0].defined()) return void(cts_in = {Tensor()});
  Tensor total = all_sum(cts[0], p.axis_name);
  Tensor is_root = lax::eq(axis_index(p.axis_name), scalar<int32_t>(static_cast<int32_t>(p.root)));
  cts_in = {lax::mul(total, lax::convert_element_type(is_root, total.dtype()))};
}

// ---- batching under a vmap of another name: the batch axis comes along ----

// Elementwise across ranks (all_sum, all_mean, all_max, all_min, pvary, broadcast): the batch axis stays.
void same_axis_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                     const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = fluxion::bind(self, values, params);
  out_dims = {dims[0]};
}

// Axis-moving collectives: the batch axis goes first and the collective's axes shift by one.
void leading_axis_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                        const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  Tensor x = move_axis(values[0], dims[0], 0);
  if (const auto* g = dynamic_cast<const GatherParams*>(&params)) {
    out = fluxion::bind(self, {x}, GatherParams(g->axis_name, g->axis_size, g->axis + 1, g->tiled));
  } else {
    const auto& a = params.as<AllToAllParams>();
    out = fluxion::bind(self, {x}, AllToAllParams(a.axis_name, a.axis_size, a.split_axis + 1, a.concat_axis + 1));
  }
  out_dims = {0};
}

// ---- under the vmap that binds the axis name: array work across the batch axis ----

void all_sum_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t n,
                   const Params&, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = {d[0] == kNotMapped ? lax::mul(v[0], full(Shape{}, n, v[0].dtype())) : lax::reduce_sum(v[0], {d[0]})};
  out_dims = {kNotMapped};
}

void all_mean_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t n,
                    const Params&, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = {d[0] == kNotMapped ? v[0] : lax::div(lax::reduce_sum(v[0], {d[0]}), scalar_like(v[0], double(n)))};
  out_dims = {kNotMapped};
}

template <bool IsMax> void extremum_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d,
                                          int64_t, const Params&, std::vector<Tensor>& out,
                                          std::vector<int64_t>& out_dims) {
  out = {d[0] == kNotMapped ? v[0] : IsMax ? lax::reduce_max(v[0], {d[0]}) : lax::reduce_min(v[0], {d[0]})};
  out_dims = {kNotMapped};
}

void pvary_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t, const Params&,
                 std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = {v[0]};
  out_dims = {d[0]};
}

void axis_index_named(const Primitive&, const std::vector<Tensor>&, const std::vector<int64_t>&, int64_t n,
                      const Params&, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = {lax::iota(i32, Shape({n}), 0)};
  out_dims = {0};
}

// Stacked: the batch axis becomes the gathered axis; tiled: merged into the axis that follows it.
void all_gather_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t n,
                      const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<GatherParams>();
  Tensor g = materialize(v[0], d[0], n, p.axis);
  if (p.tiled) {
    std::vector<int64_t> dims = g.shape().dims();
    dims[p.axis] *= dims[p.axis + 1];
    dims.erase(dims.begin() + p.axis + 1);
    g = lax::reshape(g, Shape(dims));
  }
  out = {g};
  out_dims = {kNotMapped};
}

// Member r keeps block r of the sum: the block index becomes the batch axis.
void reduce_scatter_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t n,
                          const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<GatherParams>();
  Tensor s = d[0] == kNotMapped ? lax::mul(v[0], full(Shape{}, n, v[0].dtype())) : lax::reduce_sum(v[0], {d[0]});
  if (p.tiled) {
    std::vector<int64_t> dims = s.shape().dims();
    const int64_t m = dims[p.axis] / n;
    dims[p.axis] = m;
    dims.insert(dims.begin() + p.axis, n);
    s = lax::reshape(s, Shape(dims));
  }
  out = {s};
  out_dims = {p.axis};
}

// Member j receives block j of every member's split axis, concatenated in member order along the concat
// axis: with the members on a leading axis s and the split axis cut into (j, m), the result is j first and
// s merged into the concat axis as its major part.
void all_to_all_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t n,
                      const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<AllToAllParams>();
  Tensor x = materialize(v[0], d[0], n, 0);  // [s, S...]
  std::vector<int64_t> dims = x.shape().dims();
  const int64_t rank = static_cast<int64_t>(dims.size()) - 1;
  const int64_t m = dims[p.split_axis + 1] / n;
  // Axes of x after splitting: 0 = s, then S with the split axis as (j, m).
  std::vector<int64_t> split_dims = {n};
  std::vector<int64_t> position(static_cast<size_t>(rank));  // where each axis of S lands
  int64_t j_axis = -1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k == p.split_axis) {
      j_axis = static_cast<int64_t>(split_dims.size());
      split_dims.push_back(n);
      split_dims.push_back(m);
      position[static_cast<size_t>(k)] = j_axis + 1;
    } else {
      position[static_cast<size_t>(k)] = static_cast<int64_t>(split_dims.size());
      split_dims.push_back(dims[static_cast<size_t>(k) + 1]);
    }
  }
  x = lax::reshape(x, Shape(split_dims));
  std::vector<int64_t> perm = {j_axis};
  std::vector<int64_t> result_dims;
  for (int64_t k = 0; k < rank; ++k) {
    if (k == p.concat_axis) perm.push_back(0);
    perm.push_back(position[static_cast<size_t>(k)]);
    const int64_t size = split_dims[static_cast<size_t>(position[static_cast<size_t>(k)])];
    result_dims.push_back(k == p.concat_axis ? n * size : size);
  }
  x = lax::transpose(x, perm);
  result_dims.insert(result_dims.begin(), n);
  out = {lax::reshape(x, Shape(result_dims))};
  out_dims = {0};
}

void broadcast_named(const Primitive&, const std::vector<Tensor>& v, const std::vector<int64_t>& d, int64_t,
                     const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t root = params.as<BroadcastParams>().root;
  if (d[0] == kNotMapped) {
    out = {v[0]};
  } else {
    std::vector<int64_t> start(static_cast<size_t>(v[0].ndim()), 0), limit = v[0].shape().dims();
    start[static_cast<size_t>(d[0])] = root;
    limit[static_cast<size_t>(d[0])] = root + 1;
    out = {lax::squeeze(lax::slice(v[0], start, limit), {d[0]})};
  }
  out_dims = {kNotMapped};
}

// ---- the primitives ----

const Primitive& all_sum_p() {
  static const Primitive& p = define_primitive("all_sum")
                                  .cpu(&collective_kernel<CollectiveOp::sum>)
                                  .reference(&collective_kernel<CollectiveOp::sum>)
                                  .linear()
                                  .shape(&same_shape_rule<false>)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&all_sum_transpose)
                                  .batch(&same_axis_batch)
                                  .params<NamedAxisParams>()
                                  .collective(&axis_name_of<NamedAxisParams>, &all_sum_named)
                                  .build();
  return p;
}

const Primitive& all_mean_p() {
  static const Primitive& p = define_primitive("all_mean")
                                  .cpu(&collective_kernel<CollectiveOp::mean>)
                                  .reference(&collective_kernel<CollectiveOp::mean>)
                                  .linear()
                                  .shape(&same_shape_rule<true>)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&all_mean_transpose)
                                  .batch(&same_axis_batch)
                                  .params<NamedAxisParams>()
                                  .collective(&axis_name_of<NamedAxisParams>, &all_mean_named)
                                  .build();
  return p;
}

const Primitive& all_max_p() {
  static const Primitive& p = define_primitive("all_max")
                                  .cpu(&collective_kernel<CollectiveOp::max>)
                                  .reference(&collective_kernel<CollectiveOp::max>)
                                  .shape(&same_shape_rule<false>)
                                  .jvp(&extremum_jvp<true>)
                                  .batch(&same_axis_batch)
                                  .params<NamedAxisParams>()
                                  .collective(&axis_name_of<NamedAxisParams>, &extremum_named<true>)
                                  .build();
  return p;
}

const Primitive& all_min_p() {
  static const Primitive& p = define_primitive("all_min")
                                  .cpu(&collective_kernel<CollectiveOp::min>)
                                  .reference(&collective_kernel<CollectiveOp::min>)
                                  .shape(&same_shape_rule<false>)
                                  .jvp(&extremum_jvp<false>)
                                  .batch(&same_axis_batch)
                                  .params<NamedAxisParams>()
                                  .collective(&axis_name_of<NamedAxisParams>, &extremum_named<false>)
                                  .build();
  return p;
}

const Primitive& pvary_p() {
  static const Primitive& p = define_primitive("pvary")
                                  .cpu(&collective_kernel<CollectiveOp::pvary>)
                                  .reference(&collective_kernel<CollectiveOp::pvary>)
                                  .linear()
                                  .shape(&pvary_shape_rule)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&pvary_transpose)
                                  .batch(&same_axis_batch)
                                  .params<NamedAxisParams>()
                                  .collective(&axis_name_of<NamedAxisParams>, &pvary_named)
                                  .build();
  return p;
}

const Primitive& all_gather_p() {
  static const Primitive& p = define_primitive("all_gather")
                                  .cpu(&collective_kernel<CollectiveOp::gather>)
                                  .reference(&collective_kernel<CollectiveOp::gather>)
                                  .linear()
                                  .shape(&all_gather_shape_rule)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&all_gather_transpose)
                                  .batch(&leading_axis_batch)
                                  .params<GatherParams>()
                                  .collective(&axis_name_of<GatherParams>, &all_gather_named)
                                  .build();
  return p;
}

const Primitive& reduce_scatter_p() {
  static const Primitive& p = define_primitive("reduce_scatter")
                                  .cpu(&collective_kernel<CollectiveOp::scatter>)
                                  .reference(&collective_kernel<CollectiveOp::scatter>)
                                  .linear()
                                  .shape(&reduce_scatter_shape_rule)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&reduce_scatter_transpose)
                                  .batch(&leading_axis_batch)
                                  .params<GatherParams>()
                                  .collective(&axis_name_of<GatherParams>, &reduce_scatter_named)
                                  .build();
  return p;
}

const Primitive& all_to_all_p() {
  static const Primitive& p = define_primitive("all_to_all")
                                  .cpu(&collective_kernel<CollectiveOp::to_all>)
                                  .reference(&collective_kernel<CollectiveOp::to_all>)
                                  .linear()
                                  .shape(&all_to_all_shape_rule)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&all_to_all_transpose)
                                  .batch(&leading_axis_batch)
                                  .params<AllToAllParams>()
                                  .collective(&axis_name_of<AllToAllParams>, &all_to_all_named)
                                  .build();
  return p;
}

const Primitive& broadcast_p() {
  static const Primitive& p = define_primitive("broadcast")
                                  .cpu(&collective_kernel<CollectiveOp::broadcast>)
                                  .reference(&collective_kernel<CollectiveOp::broadcast>)
                                  .linear()
                                  .shape(&broadcast_shape_rule)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&broadcast_transpose)
                                  .batch(&same_axis_batch)
                                  .params<BroadcastParams>()
                                  .collective(&axis_name_of<BroadcastParams>, &broadcast_named)
                                  .build();
  return p;
}

const Primitive& axis_index_p() {
  static const Primitive& p = define_primitive("axis_index")
                                  .cpu(&collective_kernel<CollectiveOp::index>)
                                  .reference(&collective_kernel<CollectiveOp::index>)
                                  .shape(&axis_index_shape_rule)
                                  .batch(&same_axis_batch)
                                  .params<NamedAxisParams>()
                                  .collective(&axis_name_of<NamedAxisParams>, &axis_index_named)
                                  .missing_rule("not differentiable: integer output with no inputs")
                                  .build();
  return p;
}

}  // namespace fluxion::primitives::collectives_detail

namespace fluxion::primitives {

void register_collectives(std::vector<const Primitive*>& list) {
  using namespace collectives_detail;
  for (const Primitive* p : {&all_sum_p(), &all_mean_p(), &all_max_p(), &all_min_p(), &pvary_p(), &all_gather_p(),
                             &reduce_scatter_p(), &all_to_all_p(), &broadcast_p(), &axis_index_p()})
    list.push_back(p);
}

}  // namespace fluxion::primitives

namespace fluxion {

namespace collectives_op_detail {
// Normalizes a possibly negative axis of an operand of rank `rank` (rank + 1 positions when `insert`).
int64_t normalized_axis(const char* op, const char* what, int64_t axis, int64_t rank, const Tensor& x) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    detail::fail<AxisError>(op, what, " ", axis, " is out of range for ", x.aval(), ". Use an axis in [", -rank, ", ",
                            rank, ").");
  return a;
}

// The size of the named axis at bind time: the enclosing vmap's, else the process group's.
int64_t bound_axis_size(const std::string& name, const char* op) {
  const int64_t n = batching::named_axis_size(name);
  return n >= 0 ? n : distributed_detail::transport_for_axis(name, op).size();
}
}  // namespace collectives_op_detail

int64_t axis_size(const std::string& axis_name) {
  return collectives_op_detail::bound_axis_size(axis_name, "axis_size");
}

namespace collectives_op_detail {
Tensor bind_named(const Primitive& p, const Tensor& x, const std::string& axis_name) {
  return bind1(p, {x},
               primitives::collectives_detail::NamedAxisParams(axis_name, bound_axis_size(axis_name, p.name.c_str())));
}
}  // namespace collectives_op_detail

Tensor all_sum(const Tensor& x, const std::string& axis_name) {
  return collectives_op_detail::bind_named(primitives::collectives_detail::all_sum_p(), x, axis_name);
}
Tensor all_max(const Tensor& x, const std::string& axis_name) {
  return collectives_op_detail::bind_named(primitives::collectives_detail::all_max_p(), x, axis_name);
}
Tensor all_min(const Tensor& x, const std::string& axis_name) {
  return collectives_op_detail::bind_named(primitives::collectives_detail::all_min_p(), x, axis_name);
}
Tensor pvary(const Tensor& x, const std::string& axis_name) {
  return collectives_op_detail::bind_named(primitives::collectives_detail::pvary_p(), x, axis_name);
}

Tensor all_mean(const Tensor& x, const std::string& axis_name) {
  const int64_t n = collectives_op_detail::bound_axis_size(axis_name, "all_mean");
  const Tensor f = is_floating(x.dtype()) ? x : lax::convert_element_type(x, f64);
  return bind1(primitives::collectives_detail::all_mean_p(), {f},
               primitives::collectives_detail::NamedAxisParams(axis_name, n));
}

Tensor axis_index(const std::string& axis_name) {
  const int64_t n = collectives_op_detail::bound_axis_size(axis_name, "axis_index");
  return bind1(primitives::collectives_detail::axis_index_p(), {},
               primitives::collectives_detail::NamedAxisParams(axis_name, n));
}

Tensor all_gather(const Tensor& x, const std::string& axis_name, int64_t axis, bool tiled) {
  const int64_t n = collectives_op_detail::bound_axis_size(axis_name, "all_gather");
  const int64_t a = collectives_op_detail::normalized_axis("all_gather", "axis", axis, x.ndim() + (tiled ? 0 : 1), x);
  return bind1(primitives::collectives_detail::all_gather_p(), {x},
               primitives::collectives_detail::GatherParams(axis_name, n, a, tiled));
}

Tensor reduce_scatter(const Tensor& x, const std::string& axis_name, int64_t axis, bool tiled) {
  const int64_t n = collectives_op_detail::bound_axis_size(axis_name, "reduce_scatter");
  const int64_t a = collectives_op_detail::normalized_axis("reduce_scatter", "axis", axis, x.ndim(), x);
  return bind1(primitives::collectives_detail::reduce_scatter_p(), {x},
               primitives::collectives_detail::GatherParams(axis_name, n, a, tiled));
}

Tensor all_to_all(const Tensor& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis) {
  const int64_t n = collectives_op_detail::bound_axis_size(axis_name, "all_to_all");
  const int64_t s = collectives_op_detail::normalized_axis("all_to_all", "split_axis", split_axis, x.ndim(), x);
  const int64_t c = collectives_op_detail::normalized_axis("all_to_all", "concat_axis", concat_axis, x.ndim(), x);
  return bind1(primitives::collectives_detail::all_to_all_p(), {x},
               primitives::collectives_detail::AllToAllParams(axis_name, n, s, c));
}

Tensor broadcast(const Tensor& x, const std::string& axis_name, int64_t root) {
  const int64_t n = collectives_op_detail::bound_axis_size(axis_name, "broadcast");
  return bind1(primitives::collectives_detail::broadcast_p(), {x},
               primitives::collectives_detail::BroadcastParams(axis_name, n, root));
}

}  // namespace fluxion
