// Primitives of the scatter family: gather_general, scatter, scatter_add_general, scatter_mul,
// scatter_min, scatter_max (jax.lax's gather/scatter with dimension numbers; semantics, modes and
// duplicate-index order in include/fluxion/scatter.hpp). Shape rules: scatter_shapes.cpp; kernels:
// scatter_kernels.cpp; CUDA bodies: backends/cuda/kernels/scatter.hpp. Rules:
// - gather_general is linear in the operand (its jvp gathers the tangent with fill value 0); its
//   transpose is scatter_add_general with the mirrored dimension numbers.
// - scatter_add_general is linear in operand and updates; transpose: the cotangent, and its gather.
// - scatter (replace, last duplicate wins) is linear in operand and updates jointly (which update
//   lands where depends on the indices only); its transpose masks the operand cotangent where
//   overwritten and gives each update the cotangent only where it won (JAX's scatter-id trick:
//   scatter the index-batch ids, gather them back, compare).
// - scatter_mul: d out = t_op * scatter_mul(1, u) + sum_j t_u[j] * op * prod_{k != j} u[k]; the
//   exclusive product is exact with zeros (no division by a zero update).
// - scatter_min / scatter_max: the tangent of every element equal to the result (operand and
//   updates), averaged over ties (like lax.max's jvp and JAX's scatter extremal jvp).
// - Batching (all six): the batch axis becomes a window dim of the operand (operand mapped only) or
//   a paired operand/indices batching dim (indices mapped), as JAX's rules do; never a loop.
#include <vector>

#include "fluxion/cuda.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "primitives/scatter.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives::scatter_family {
namespace scatter_rules_detail {

Tensor filled(const Shape& shape, double value, DType dtype, Device device) {
  Tensor v = device_put(full(Shape{}, value, dtype), device);
  return shape.size() == 0 ? v : lax::broadcast_in_dim(v, shape, {});
}
Tensor zeros_of(const AbstractValue& a, Device device) { return filled(a.shape, 0.0, a.dtype, device); }

Ints shifted(Ints v) {
  for (int64_t& d : v) ++d;
  return v;
}
Ints front(int64_t first, const Ints& rest) {
  Ints v{first};
  v.insert(v.end(), rest.begin(), rest.end());
  return v;
}

Tensor gather_with(const Tensor& x, const Tensor& idx, const GatherParams& p) {
  return fluxion::bind1(gather_general_p(), {x, idx}, p);
}
Tensor scatter_with(Combine c, const Tensor& x, const Tensor& idx, const Tensor& u, const ScatterParams& p) {
  return fluxion::bind1(scatter_primitive(c), {x, idx, u}, p);
}

/// The primal output; true when it is floating (integer/bool results have zero tangents).
bool float_primal_out(const Primitive& self, const std::vector<Tensor>& primals, const Params& params,
                      std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(1, Tensor());
  return is_floating(primals_out[0].dtype());
}

// ---- gather_general ----

std::vector<AbstractValue> gather_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                       const Params& params) {
  check_arity(self, in, 2);
  return {AbstractValue{gather_shape(self.name.c_str(), in[0], in[1], params.as<GatherParams>()), in[0].dtype}};
}

void gather_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out) || !tangents[0].defined()) return;
  GatherParams p = params.as<GatherParams>();
  p.fill_value = 0.0;  // the fill is a constant: its tangent is zero
  tangents_out[0] = gather_with(tangents[0], primals[1], p);
}

void gather_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                      const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined() || inputs[0].defined()) return;
  cts_in[0] = scatter_with(Combine::add, zeros_of(in_avals[0], cts_out[0].device()), inputs[1], cts_out[0],
                           scatter_of_gather(params.as<GatherParams>()));
}

void gather_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                  const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  GatherParams p = params.as<GatherParams>();
  auto& d = p.dnums;
  Tensor x = values[0], idx = values[1];
  if (dims[0] != kNotMapped) {
    x = batching::move_axis(x, dims[0], 0);
    d.collapsed_slice_dims = shifted(d.collapsed_slice_dims);
    d.start_index_map = shifted(d.start_index_map);
  }
  if (dims[1] != kNotMapped) idx = batching::move_axis(idx, dims[1], 0);
  if (dims[1] == kNotMapped) {
    // Operand only: its batch axis is one more slice dim, taken whole, at output dim 0.
    d.offset_dims = front(0, shifted(d.offset_dims));
    d.operand_batching_dims = shifted(d.operand_batching_dims);
    p.slice_sizes = front(x.shape()[0], p.slice_sizes);
  } else if (dims[0] == kNotMapped) {
    // Indices only: their batch axis is the first index-batch dim, output dim 0.
    d.offset_dims = shifted(d.offset_dims);
    d.start_indices_batching_dims = shifted(d.start_indices_batching_dims);
  } else {
    // Both: example b of the operand is read by example b of the indices.
    d.offset_dims = shifted(d.offset_dims);
    d.operand_batching_dims = front(0, shifted(d.operand_batching_dims));
    d.start_indices_batching_dims = front(0, shifted(d.start_indices_batching_dims));
    p.slice_sizes = front(std::min<int64_t>(1, x.shape()[0]), p.slice_sizes);
  }
  out = {fluxion::bind1(self, {x, idx}, p)};
  out_dims = {0};
}

// ---- the scatters ----

template <Combine C> std::vector<AbstractValue> scatter_rule(const Primitive& self,
                                                             const std::vector<AbstractValue>& in,
                                                             const Params& params) {
  check_arity(self, in, 3);
  if (C != Combine::replace) check_dtype_in(self, in[0], kNumeric);
  check_scatter(self.name.c_str(), in[0], in[1], in[2], params.as<ScatterParams>());
  return {in[0]};
}

/// The updates' dims that are not window dims (they pair with the indices' leading dims).
Ints update_scatter_dims(const ScatterParams& p, int64_t updates_rank) {
  Ints out;
  const Ints& w = p.dnums.update_window_dims;
  for (int64_t d = 0; d < updates_rank; ++d)
    if (std::find(w.begin(), w.end(), d) == w.end()) out.push_back(d);
  return out;
}

/// The gather reading back what the scatter wrote, per update element (fill where dropped).
Tensor gather_back(const Tensor& x, const Tensor& idx, const AbstractValue& operand, const AbstractValue& updates,
                   const ScatterParams& p, double fill) {
  // An empty inserted dim drops every window (clip mode refuses it): all fill, nothing to gather.
  for (int64_t k : p.dnums.inserted_window_dims)
    if (operand.shape[k] == 0) return filled(updates.shape, fill, x.dtype(), x.device());
  return gather_with(x, idx, gather_of_scatter(p, operand.shape, updates.shape, fill));
}

/// True at the update elements that win their target under scatter (replace): the last duplicate.
Tensor winner_mask(const Tensor& idx, const AbstractValue& operand, const AbstractValue& updates,
                   const ScatterParams& p) {
  Shape batch(idx.shape().begin(), idx.shape().end() - 1);
  const int64_t g = batch.num_elements();
  const DType dt = g > 2147483647 ? i64 : i32;
  // The ids are a constant made where the indices live (an iota would run on the CPU).
  Tensor ids;
  if (dt == i32) {
    std::vector<int32_t> count(static_cast<size_t>(g));
    for (int64_t i = 0; i < g; ++i) count[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    ids = from_vector(count);
  } else {
    std::vector<int64_t> count(static_cast<size_t>(g));
    for (int64_t i = 0; i < g; ++i) count[static_cast<size_t>(i)] = i;
    ids = from_vector(count);
  }
  ids = lax::reshape(device_put(ids, idx.device()), batch);
  ids = lax::broadcast_in_dim(ids, updates.shape, update_scatter_dims(p, updates.ndim()));
  Tensor winner = scatter_with(Combine::replace, filled(operand.shape, -1.0, dt, idx.device()), idx, ids, p);
  return lax::eq(gather_back(winner, idx, operand, updates, p, -1.0), ids);
}

// scatter_add and scatter (replace) are linear: the tangent is the same scatter of the tangents.
void linear_scatter_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                        const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &t_op = tangents[0], &t_upd = tangents[2];
  if (!t_op.defined() && !t_upd.defined()) return;
  if (!t_upd.defined() && &self == &scatter_add_general_p()) {
    tangents_out[0] = t_op;  // adding nothing
    return;
  }
  tangents_out[0] =
      fluxion::bind1(self,
                     {t_op.defined() ? t_op : zeros_of(primals[0].aval(), primals[0].device()), primals[1],
                      t_upd.defined() ? t_upd : zeros_of(primals[2].aval(), primals[0].device())},
                     params);
}

void scatter_add_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                           const std::vector<AbstractValue>& in_avals, const Params& params,
                           std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  const auto& p = params.as<ScatterParams>();
  if (!inputs[0].defined()) cts_in[0] = ct;
  if (!inputs[2].defined()) cts_in[2] = gather_back(ct, inputs[1], in_avals[0], in_avals[2], p, 0.0);
}

void scatter_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                       const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  const auto& p = params.as<ScatterParams>();
  if (!inputs[0].defined())
    cts_in[0] = scatter_with(Combine::replace, ct, inputs[1], zeros_of(in_avals[2], ct.device()), p);
  if (!inputs[2].defined())
    cts_in[2] =
        lax::select(winner_mask(inputs[1], in_avals[0], in_avals[2], p),
                    gather_back(ct, inputs[1], in_avals[0], in_avals[2], p, 0.0), zeros_of(in_avals[2], ct.device()));
}

// out = op * prod_j u[j] over the updates hitting each element. The operand's tangent is scaled by
// the product of the updates; update j's by op * prod_{k != j} u[k]: with Z the count of zero
// updates at the target and P = op * (product of the nonzero updates), that is P / u[j] when Z = 0,
// P for the single zero update when Z = 1, and 0 otherwise.
void scatter_mul_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                     const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &op = primals[0], &idx = primals[1], &u = primals[2];
  const Tensor &t_op = tangents[0], &t_u = tangents[2];
  const auto& p = params.as<ScatterParams>();
  Tensor t;
  if (t_op.defined())
    t = lax::mul(t_op, scatter_with(Combine::mul, filled(op.shape(), 1.0, op.dtype(), op.device()), idx, u, p));
  if (t_u.defined()) {
    const Tensor zero_u = lax::eq(u, zeros_of(u.aval(), op.device())),
                 one = filled(u.shape(), 1.0, u.dtype(), op.device());
    const Tensor nz = lax::select(zero_u, one, u);
    const Tensor zeros_count = scatter_with(Combine::add, zeros_of(op.aval(), op.device()), idx,
                                            lax::convert_element_type(zero_u, op.dtype()), p);
    const Tensor prod_nz = scatter_with(Combine::mul, op, idx, nz, p);
    const Tensor gz = gather_back(zeros_count, idx, op.aval(), u.aval(), p, 0.0);
    const Tensor gp = gather_back(prod_nz, idx, op.aval(), u.aval(), p, 0.0);
    const Tensor zero = zeros_of(u.aval(), op.device());
    const Tensor others = lax::select(zero_u, lax::select(lax::eq(gz, one), gp, zero),
                                      lax::select(lax::eq(gz, zero), lax::div(gp, nz), zero));
    Tensor tu = scatter_with(Combine::add, zeros_of(op.aval(), op.device()), idx, lax::mul(t_u, others), p);
    t = t.defined() ? lax::add(t, tu) : tu;
  }
  tangents_out[0] = t;
}

// Every element equal to the result shares the tangent: the operand's where it survived, each
// update's where it equals the result at its target; ties are averaged.
void scatter_extremal_jvp(const Primitive& self, const std::vector<Tensor>& primals,
                          const std::vector<Tensor>& tangents, const Params& params, std::vector<Tensor>& primals_out,
                          std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  if (!tangents[0].defined() && !tangents[2].defined()) return;
  const Tensor &op = primals[0], &idx = primals[1], &u = primals[2], &out = primals_out[0];
  const auto& p = params.as<ScatterParams>();
  const Tensor t_op = tangents[0].defined() ? tangents[0] : zeros_of(op.aval(), op.device());
  const Tensor t_u = tangents[2].defined() ? tangents[2] : zeros_of(u.aval(), op.device());
  const Tensor op_won = lax::eq(op, out);
  const Tensor u_won = lax::eq(u, gather_back(out, idx, op.aval(), u.aval(), p, default_fill(u.dtype())));
  const Tensor zop = zeros_of(op.aval(), op.device()), zu = zeros_of(u.aval(), op.device());
  const Tensor count = lax::add(lax::convert_element_type(op_won, op.dtype()),
                                scatter_with(Combine::add, zop, idx, lax::convert_element_type(u_won, u.dtype()), p));
  const Tensor sum =
      lax::add(lax::select(op_won, t_op, zop), scatter_with(Combine::add, zop, idx, lax::select(u_won, t_u, zu), p));
  tangents_out[0] = lax::div(sum, lax::max(count, filled(op.shape(), 1.0, op.dtype(), op.device())));
}

void scatter_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                   const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  ScatterParams p = params.as<ScatterParams>();
  auto& d = p.dnums;
  const int64_t size = batching::batch_size(values, dims);
  Tensor x = batching::materialize(values[0], dims[0], size, 0);
  Tensor u = batching::materialize(values[2], dims[2], size, 0);
  Tensor idx = values[1];
  d.inserted_window_dims = shifted(d.inserted_window_dims);
  d.scatter_dims_to_operand_dims = shifted(d.scatter_dims_to_operand_dims);
  if (dims[1] == kNotMapped) {
    // The batch axis is one more window dim, updates dim 0 spanning operand dim 0.
    d.update_window_dims = front(0, shifted(d.update_window_dims));
    d.operand_batching_dims = shifted(d.operand_batching_dims);
  } else {
    // Example b of the indices scatters example b of the updates into example b of the operand.
    idx = batching::move_axis(idx, dims[1], 0);
    d.update_window_dims = shifted(d.update_window_dims);
    d.operand_batching_dims = front(0, shifted(d.operand_batching_dims));
    d.scatter_indices_batching_dims = front(0, shifted(d.scatter_indices_batching_dims));
  }
  out = {fluxion::bind1(self, {x, idx, u}, p)};
  out_dims = {0};
}

template <Combine C> const Primitive& define_scatter(const char* name, JvpRule jvp, TransposeRule transpose) {
  PrimitiveBuilder b = define_primitive(name);
  b.params<ScatterParams>();
  b.shape(&scatter_rule<C>)
      .reference(&scatter_kernel<C, true>)
      .cpu(&scatter_kernel<C, false>)
      .jvp(jvp)
      .batch(&scatter_batch);
  if (transpose) b.linear().transpose(transpose);
  return b.build();
}

}  // namespace scatter_rules_detail

namespace srd = scatter_rules_detail;

const Primitive& gather_general_p() {
  static const Primitive& p = define_primitive("gather_general")
                                  .params<GatherParams>()
                                  .linear()
                                  .shape(&srd::gather_rule)
                                  .reference(&gather_kernel<true>)
                                  .cpu(&gather_kernel<false>)
                                  .jvp(&srd::gather_jvp)
                                  .transpose(&srd::gather_transpose)
                                  .batch(&srd::gather_batch)
                                  .build();
  return p;
}
const Primitive& scatter_p() {
  static const Primitive& p =
      srd::define_scatter<Combine::replace>("scatter", &srd::linear_scatter_jvp, &srd::scatter_transpose);
  return p;
}
const Primitive& scatter_add_general_p() {
  static const Primitive& p =
      srd::define_scatter<Combine::add>("scatter_add_general", &srd::linear_scatter_jvp, &srd::scatter_add_transpose);
  return p;
}
const Primitive& scatter_mul_p() {
  static const Primitive& p = srd::define_scatter<Combine::mul>("scatter_mul", &srd::scatter_mul_jvp, nullptr);
  return p;
}
const Primitive& scatter_min_p() {
  static const Primitive& p = srd::define_scatter<Combine::min>("scatter_min", &srd::scatter_extremal_jvp, nullptr);
  return p;
}
const Primitive& scatter_max_p() {
  static const Primitive& p = srd::define_scatter<Combine::max>("scatter_max", &srd::scatter_extremal_jvp, nullptr);
  return p;
}
const Primitive& scatter_primitive(Combine c) {
  switch (c) {
    case Combine::replace: return scatter_p();
    case Combine::add: return scatter_add_general_p();
    case Combine::mul: return scatter_mul_p();
    case Combine::min: return scatter_min_p();
    default: return scatter_max_p();
  }
}

}  // namespace fluxion::primitives::scatter_family

namespace fluxion::primitives {

void register_scatter(std::vector<const Primitive*>& list) {
  namespace sf = scatter_family;
  for (const Primitive* p : {&sf::gather_general_p(), &sf::scatter_p(), &sf::scatter_add_general_p(),
                             &sf::scatter_mul_p(), &sf::scatter_min_p(), &sf::scatter_max_p()})
    list.push_back(p);
}

}  // namespace fluxion::primitives

namespace fluxion::lax {

Tensor gather(const Tensor& operand, const Tensor& start_indices, const GatherDimensionNumbers& dimension_numbers,
              const std::vector<int64_t>& slice_sizes, GatherScatterMode mode, std::optional<double> fill_value) {
  namespace sf = primitives::scatter_family;
  const double fill = fill_value ? *fill_value : sf::default_fill(operand.defined() ? operand.dtype() : f64);
  return bind1(sf::gather_general_p(), {operand, start_indices},
               sf::GatherParams(dimension_numbers, slice_sizes, mode, fill));
}

#define FLUXION_LAX_SCATTER(fn, combine)                                                 \
  Tensor fn(const Tensor& operand, const Tensor& scatter_indices, const Tensor& updates, \
            const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {  \
    namespace sf = primitives::scatter_family;                                           \
    return bind1(sf::scatter_primitive(combine), {operand, scatter_indices, updates},    \
                 sf::ScatterParams(dimension_numbers, mode));                            \
  }
FLUXION_LAX_SCATTER(scatter, primitives::scatter_family::Combine::replace)
FLUXION_LAX_SCATTER(scatter_add, primitives::scatter_family::Combine::add)
FLUXION_LAX_SCATTER(scatter_mul, primitives::scatter_family::Combine::mul)
FLUXION_LAX_SCATTER(scatter_min, primitives::scatter_family::Combine::min)
FLUXION_LAX_SCATTER(scatter_max, primitives::scatter_family::Combine::max)
#undef FLUXION_LAX_SCATTER

}  // namespace fluxion::lax
