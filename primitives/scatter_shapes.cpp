// The scatter family's params (printing, equality), shape rules with full validation of the
// dimension numbers (the checks of jax.lax's gather/scatter shape rules, with messages naming the
// offending list and values), the WindowSpec every kernel reads, and the gather <-> scatter
// dimension-number conversions of the transpose rules.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "primitives/elementwise.hpp"
#include "primitives/scatter.hpp"

namespace fluxion::primitives::scatter_family {

namespace scatter_shapes_detail {

const char* mode_name(GatherScatterMode m) { return m == GatherScatterMode::clip ? "clip" : "fill_or_drop"; }

uint64_t bits_of(double v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

size_t hash_ints(size_t h, const Ints& v) { return detail::hash_combine(h, detail::hash_param(v)); }

std::string str(const Ints& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

bool contains(const Ints& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// Every entry of list `what` in [0, bound), no repeats, and ascending when `sorted`.
void check_dim_list(const char* nm, const char* what, const Ints& v, int64_t bound, const char* bound_what,
                    bool sorted) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0 || v[i] >= bound)
      detail::fail<ShapeError>(nm, what, "=", str(v), " has entry ", v[i], " out of range for ", bound_what, " (",
                               bound, " dims). Name dims in [0, ", bound, ").");
    for (size_t j = 0; j < i; ++j)
      if (v[j] == v[i]) detail::fail<ShapeError>(nm, what, "=", str(v), " repeats dim ", v[i], ". Name each dim once.");
    if (sorted && i > 0 && v[i - 1] > v[i])
      detail::fail<ShapeError>(nm, what, "=", str(v), " must be sorted ascending. Sort it.");
  }
}

void check_disjoint(const char* nm, const char* a_what, const Ints& a, const char* b_what, const Ints& b) {
  for (int64_t x : a)
    if (contains(b, x))
      detail::fail<ShapeError>(nm, a_what, "=", str(a), " and ", b_what, "=", str(b), " both name operand dim ", x,
                               ". A dim is indexed, collapsed or batched, not two of these.");
}

/// The checks gather and scatter share: integer indices with the index vector last, the index map
/// and the batching pairs. Returns indices.shape without its last dim (the index batch shape).
Ints check_indices_and_maps(const char* nm, const AbstractValue& operand, const AbstractValue& indices,
                            const Ints& index_map, const char* index_map_what, const Ints& operand_batching,
                            const Ints& indices_batching, const char* indices_batching_what) {
  if (!kInteger.contains(indices.dtype))
    detail::fail<DTypeError>(nm, "indices have type ", indices, "; they must be i32 or i64. Convert with fx::astype.");
  if (indices.ndim() < 1)
    detail::fail<ShapeError>(nm, "indices ", indices,
                             " must have rank >= 1: the last dim is the index vector. Reshape a scalar to [1].");
  const int64_t r = operand.ndim(), k = indices.shape[indices.ndim() - 1];
  if (k != static_cast<int64_t>(index_map.size()))
    detail::fail<ShapeError>(nm, "indices ", indices, " hold index vectors of length ", k, " (their last dim) but ",
                             index_map_what, "=", str(index_map), " has ", index_map.size(),
                             " entries. Give one operand dim per index-vector entry.");
  check_dim_list(nm, index_map_what, index_map, r, "the operand", false);
  check_dim_list(nm, "operand_batching_dims", operand_batching, r, "the operand", true);
  check_disjoint(nm, index_map_what, index_map, "operand_batching_dims", operand_batching);
  const Ints batch(indices.shape.begin(), indices.shape.end() - 1);
  if (indices_batching.size() != operand_batching.size())
    detail::fail<ShapeError>(nm, "operand_batching_dims=", str(operand_batching), " and ", indices_batching_what, "=",
                             str(indices_batching),
                             " differ in length. Pair each operand batching dim with one "
                             "indices dim.");
  check_dim_list(nm, indices_batching_what, indices_batching, static_cast<int64_t>(batch.size()),
                 "the indices without their index-vector dim", false);
  for (size_t j = 0; j < operand_batching.size(); ++j)
    if (operand.shape[operand_batching[j]] != batch[static_cast<size_t>(indices_batching[j])])
      detail::fail<ShapeError>(nm, "batching dims differ in size: operand ", operand, " dim ", operand_batching[j],
                               " has ", operand.shape[operand_batching[j]], ", indices ", indices, " dim ",
                               indices_batching[j], " has ", batch[static_cast<size_t>(indices_batching[j])],
                               ". Paired batching dims must have equal sizes.");
  return batch;
}

/// The operand dims that are window dims on the side tensor: neither collapsed/inserted nor batching.
Ints window_operand_dims(int64_t rank, const Ints& dropped, const Ints& batching) {
  Ints out;
  for (int64_t d = 0; d < rank; ++d)
    if (!contains(dropped, d) && !contains(batching, d)) out.push_back(d);
  return out;
}

}  // namespace scatter_shapes_detail

namespace ssd = scatter_shapes_detail;

// ---- params ----

void GatherParams::print(std::ostream& os) const {
  os << "offset_dims=" << ssd::str(dnums.offset_dims)
     << " collapsed_slice_dims=" << ssd::str(dnums.collapsed_slice_dims)
     << " start_index_map=" << ssd::str(dnums.start_index_map)
     << " operand_batching_dims=" << ssd::str(dnums.operand_batching_dims)
     << " start_indices_batching_dims=" << ssd::str(dnums.start_indices_batching_dims)
     << " slice_sizes=" << ssd::str(slice_sizes) << " mode=" << ssd::mode_name(mode);
  if (mode == GatherScatterMode::fill_or_drop) {
    os << " fill_value=";
    detail::print_param(os, fill_value);
  }
}
bool GatherParams::equals(const Params& other) const {
  const auto* o = dynamic_cast<const GatherParams*>(&other);
  const auto& a = dnums;
  return o && a.offset_dims == o->dnums.offset_dims && a.collapsed_slice_dims == o->dnums.collapsed_slice_dims &&
         a.start_index_map == o->dnums.start_index_map && a.operand_batching_dims == o->dnums.operand_batching_dims &&
         a.start_indices_batching_dims == o->dnums.start_indices_batching_dims && slice_sizes == o->slice_sizes &&
         mode == o->mode && ssd::bits_of(fill_value) == ssd::bits_of(o->fill_value);
}
size_t GatherParams::hash() const {
  size_t h = typeid(GatherParams).hash_code();
  for (const Ints* v : {&dnums.offset_dims, &dnums.collapsed_slice_dims, &dnums.start_index_map,
                        &dnums.operand_batching_dims, &dnums.start_indices_batching_dims, &slice_sizes})
    h = ssd::hash_ints(h, *v);
  h = detail::hash_combine(h, static_cast<size_t>(mode));
  return detail::hash_combine(h, std::hash<uint64_t>()(ssd::bits_of(fill_value)));
}

void ScatterParams::print(std::ostream& os) const {
  os << "update_window_dims=" << ssd::str(dnums.update_window_dims)
     << " inserted_window_dims=" << ssd::str(dnums.inserted_window_dims)
     << " scatter_dims_to_operand_dims=" << ssd::str(dnums.scatter_dims_to_operand_dims)
     << " operand_batching_dims=" << ssd::str(dnums.operand_batching_dims)
     << " scatter_indices_batching_dims=" << ssd::str(dnums.scatter_indices_batching_dims)
     << " mode=" << ssd::mode_name(mode);
}
bool ScatterParams::equals(const Params& other) const {
  const auto* o = dynamic_cast<const ScatterParams*>(&other);
  const auto& a = dnums;
  return o && a.update_window_dims == o->dnums.update_window_dims &&
         a.inserted_window_dims == o->dnums.inserted_window_dims &&
         a.scatter_dims_to_operand_dims == o->dnums.scatter_dims_to_operand_dims &&
         a.operand_batching_dims == o->dnums.operand_batching_dims &&
         a.scatter_indices_batching_dims == o->dnums.scatter_indices_batching_dims && mode == o->mode;
}
size_t ScatterParams::hash() const {
  size_t h = typeid(ScatterParams).hash_code();
  for (const Ints* v : {&dnums.update_window_dims, &dnums.inserted_window_dims, &dnums.scatter_dims_to_operand_dims,
                        &dnums.operand_batching_dims, &dnums.scatter_indices_batching_dims})
    h = ssd::hash_ints(h, *v);
  return detail::hash_combine(h, static_cast<size_t>(mode));
}

double default_fill(DType dtype) {
  if (is_floating(dtype)) return std::numeric_limits<double>::quiet_NaN();
  if (dtype == i32) return std::numeric_limits<int32_t>::min();
  if (dtype == i64) return static_cast<double>(std::numeric_limits<int64_t>::min());
  return 1.0;  // bool: true
}

// ---- shape rules ----

Shape gather_shape(const char* nm, const AbstractValue& operand, const AbstractValue& indices, const GatherParams& p) {
  const auto& d = p.dnums;
  const Ints batch =
      ssd::check_indices_and_maps(nm, operand, indices, d.start_index_map, "start_index_map", d.operand_batching_dims,
                                  d.start_indices_batching_dims, "start_indices_batching_dims");
  const int64_t r = operand.ndim();
  ssd::check_dim_list(nm, "collapsed_slice_dims", d.collapsed_slice_dims, r, "the operand", true);
  ssd::check_disjoint(nm, "collapsed_slice_dims", d.collapsed_slice_dims, "operand_batching_dims",
                      d.operand_batching_dims);
  if (p.mode == GatherScatterMode::fill_or_drop && kInteger.contains(operand.dtype) &&
      !(std::floor(p.fill_value) == p.fill_value &&
        p.fill_value >= (operand.dtype == i32 ? -2147483648.0 : -9223372036854775808.0) &&
        p.fill_value < (operand.dtype == i32 ? 2147483648.0 : 9223372036854775808.0)))
    detail::fail<DTypeError>(nm, "fill_value ", p.fill_value, " is not a value of operand ", operand,
                             ". Give an integer in range (the default is the lowest value).");
  if (static_cast<int64_t>(p.slice_sizes.size()) != r)
    detail::fail<ShapeError>(nm, "slice_sizes=", ssd::str(p.slice_sizes), " has ", p.slice_sizes.size(),
                             " entries for operand ", operand, ". Give one slice size per operand dim.");
  for (int64_t k = 0; k < r; ++k) {
    const int64_t s = p.slice_sizes[static_cast<size_t>(k)];
    if (s < 0 || s > operand.shape[k])
      detail::fail<ShapeError>(nm, "slice_sizes=", ssd::str(p.slice_sizes), " asks for ", s, " elements of dim ", k,
                               " of operand ", operand, ". Slice sizes must lie in [0, operand.shape[d]].");
    // A batching dim of size 0 pairs with an empty index batch: its slice size is 0 (nothing is read).
    const int64_t one = ssd::contains(d.operand_batching_dims, k) ? std::min<int64_t>(1, operand.shape[k]) : 1;
    if ((ssd::contains(d.collapsed_slice_dims, k) || ssd::contains(d.operand_batching_dims, k)) && s != one)
      detail::fail<ShapeError>(nm, "operand dim ", k, " is collapsed or batching, so its slice size must be ", one,
                               ", got slice_sizes=", ssd::str(p.slice_sizes), ".");
  }
  const Ints window_dims = ssd::window_operand_dims(r, d.collapsed_slice_dims, d.operand_batching_dims);
  const int64_t out_rank = static_cast<int64_t>(window_dims.size() + batch.size());
  if (d.offset_dims.size() != window_dims.size())
    detail::fail<ShapeError>(nm, "offset_dims=", ssd::str(d.offset_dims), " has ", d.offset_dims.size(),
                             " entries but the slice keeps ", window_dims.size(), " operand dims (rank ", r,
                             " minus collapsed_slice_dims and operand_batching_dims). Give one output dim per kept "
                             "slice dim.");
  ssd::check_dim_list(nm, "offset_dims", d.offset_dims, out_rank, "the output", true);
  Shape out;
  size_t w = 0, b = 0;
  for (int64_t o = 0; o < out_rank; ++o)
    out.push_back(ssd::contains(d.offset_dims, o) ? p.slice_sizes[static_cast<size_t>(window_dims[w++])] : batch[b++]);
  return out;
}

void check_scatter(const char* nm, const AbstractValue& operand, const AbstractValue& indices,
                   const AbstractValue& updates, const ScatterParams& p) {
  const auto& d = p.dnums;
  if (updates.dtype != operand.dtype)
    detail::fail<DTypeError>(nm, "updates ", updates, " and operand ", operand,
                             " have different dtypes. Convert with fx::astype.");
  const Ints batch = ssd::check_indices_and_maps(nm, operand, indices, d.scatter_dims_to_operand_dims,
                                                 "scatter_dims_to_operand_dims", d.operand_batching_dims,
                                                 d.scatter_indices_batching_dims, "scatter_indices_batching_dims");
  const int64_t r = operand.ndim();
  ssd::check_dim_list(nm, "inserted_window_dims", d.inserted_window_dims, r, "the operand", true);
  ssd::check_disjoint(nm, "inserted_window_dims", d.inserted_window_dims, "operand_batching_dims",
                      d.operand_batching_dims);
  if (p.mode == GatherScatterMode::clip && updates.shape.num_elements() > 0)
    for (int64_t k : d.inserted_window_dims)
      if (operand.shape[k] == 0)
        detail::fail<ShapeError>(nm, "inserted window dim ", k, " of operand ", operand,
                                 " is empty, so clip mode has nowhere to put updates ", updates,
                                 ". Use fill_or_drop mode (updates dropped) or a non-empty operand.");
  const Ints window_dims = ssd::window_operand_dims(r, d.inserted_window_dims, d.operand_batching_dims);
  if (d.update_window_dims.size() != window_dims.size())
    detail::fail<ShapeError>(nm, "update_window_dims=", ssd::str(d.update_window_dims), " has ",
                             d.update_window_dims.size(), " entries but operand ", operand, " keeps ",
                             window_dims.size(),
                             " window dims (rank minus inserted_window_dims and "
                             "operand_batching_dims). Give one updates dim per window dim.");
  const int64_t want_rank = static_cast<int64_t>(window_dims.size() + batch.size());
  if (updates.ndim() != want_rank)
    detail::fail<ShapeError>(nm, "updates ", updates, " must have rank ", want_rank, " (", window_dims.size(),
                             " window dims + ", batch.size(), " index-batch dims of indices ", indices, ").");
  ssd::check_dim_list(nm, "update_window_dims", d.update_window_dims, want_rank, "the updates", true);
  size_t w = 0, b = 0;
  for (int64_t u = 0; u < want_rank; ++u) {
    if (ssd::contains(d.update_window_dims, u)) {
      const int64_t od = window_dims[w++];
      if (updates.shape[u] > operand.shape[od])
        detail::fail<ShapeError>(nm, "updates ", updates, " dim ", u, " is a window of ", updates.shape[u],
                                 " elements along operand ", operand, " dim ", od,
                                 ", which is shorter. Windows must fit in the operand.");
    } else if (updates.shape[u] != batch[b++]) {
      detail::fail<ShapeError>(nm, "updates ", updates, " dim ", u, " has ", updates.shape[u],
                               " elements but it pairs with index-batch dim ", b - 1, " of indices ", indices, " (",
                               batch[b - 1], "). Updates' non-window dims are the indices' leading dims.");
    }
  }
}

// ---- window specs and conversions ----

int64_t WindowSpec::batch_count() const {
  int64_t g = 1;
  for (int64_t s : index_batch_shape) g *= s;
  return g;
}

WindowSpec gather_window_spec(const Shape& operand, const Shape& indices, const GatherParams& p) {
  WindowSpec s;
  s.operand_shape = operand.dims();
  s.window = p.slice_sizes;
  s.side_shape = gather_shape("gather_general", AbstractValue{operand, f32}, AbstractValue{indices, i64}, p).dims();
  s.side_window_dims = p.dnums.offset_dims;
  s.window_operand_dims =
      ssd::window_operand_dims(operand.size(), p.dnums.collapsed_slice_dims, p.dnums.operand_batching_dims);
  s.index_batch_shape = Ints(indices.begin(), indices.end() - 1);
  s.start_index_map = p.dnums.start_index_map;
  s.operand_batching_dims = p.dnums.operand_batching_dims;
  s.indices_batching_dims = p.dnums.start_indices_batching_dims;
  s.clip = p.mode == GatherScatterMode::clip;
  return s;
}

WindowSpec scatter_window_spec(const Shape& operand, const Shape& indices, const Shape& updates,
                               const ScatterParams& p) {
  WindowSpec s;
  s.operand_shape = operand.dims();
  s.side_shape = updates.dims();
  s.side_window_dims = p.dnums.update_window_dims;
  s.window_operand_dims =
      ssd::window_operand_dims(operand.size(), p.dnums.inserted_window_dims, p.dnums.operand_batching_dims);
  s.window = Ints(operand.size(), 1);
  for (size_t w = 0; w < s.window_operand_dims.size(); ++w)
    s.window[static_cast<size_t>(s.window_operand_dims[w])] = updates[s.side_window_dims[w]];
  s.index_batch_shape = Ints(indices.begin(), indices.end() - 1);
  s.start_index_map = p.dnums.scatter_dims_to_operand_dims;
  s.operand_batching_dims = p.dnums.operand_batching_dims;
  s.indices_batching_dims = p.dnums.scatter_indices_batching_dims;
  s.clip = p.mode == GatherScatterMode::clip;
  return s;
}

GatherParams gather_of_scatter(const ScatterParams& p, const Shape& operand, const Shape& updates, double fill) {
  const auto& d = p.dnums;
  Ints sizes(operand.size(), 1);
  for (int64_t k : d.operand_batching_dims) sizes[static_cast<size_t>(k)] = std::min<int64_t>(1, operand[k]);
  const Ints window_dims = ssd::window_operand_dims(operand.size(), d.inserted_window_dims, d.operand_batching_dims);
  for (size_t w = 0; w < window_dims.size(); ++w)
    sizes[static_cast<size_t>(window_dims[w])] = updates[d.update_window_dims[w]];
  return GatherParams(
      lax::GatherDimensionNumbers{d.update_window_dims, d.inserted_window_dims, d.scatter_dims_to_operand_dims,
                                  d.operand_batching_dims, d.scatter_indices_batching_dims},
      sizes, p.mode, fill);
}

ScatterParams scatter_of_gather(const GatherParams& p) {
  const auto& d = p.dnums;
  return ScatterParams(lax::ScatterDimensionNumbers{d.offset_dims, d.collapsed_slice_dims, d.start_index_map,
                                                    d.operand_batching_dims, d.start_indices_batching_dims},
                       p.mode);
}

}  // namespace fluxion::primitives::scatter_family
