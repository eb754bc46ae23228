// The indexing family's shared pieces (indexing_shared.hpp): checks of the shape rules, helpers of
// the jvp, transpose and batching rules, the primitive builder and the registration.
#include <sstream>

#include "fluxion/lax.hpp"
#include "primitives/indexing_shared.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives::indexing_family {

/// "(0,2)" — integer lists in messages, printed like the Jaxpr params.
std::string ints_str(const Ints& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

// ---- shared checks ----

/// A per-dimension parameter list must have one entry per operand dimension.
void check_per_dim(const char* nm, const char* what, const Ints& v, const AbstractValue& x) {
  if (static_cast<int64_t>(v.size()) != x.ndim())
    detail::fail<ShapeError>(nm, what, "=", ints_str(v), " has ", v.size(), " entries for operand ", x, " of rank ",
                             x.ndim(), ". Give one entry per dimension.");
}

/// `axis` must name a dimension of the rank-`rank` value described by `of`.
void check_axis(const char* nm, const char* what, int64_t axis, int64_t rank, const AbstractValue& of) {
  if (axis < 0 || axis >= rank)
    detail::fail<AxisError>(nm, what, "=", axis, " is out of range for ", of, " of rank ", rank,
                            rank == 0 ? ". A rank-0 value has no dimension to use; reshape it first."
                                      : ". Use a value in [0, rank) (the lax wrapper accepts negative ones).");
}

/// Inputs [first, end) are rank-0 integer start indices, one per dimension of `x`.
void check_start_indices(const char* nm, const std::vector<AbstractValue>& in, size_t first, const AbstractValue& x) {
  const size_t got = in.size() - first;
  if (static_cast<int64_t>(got) != x.ndim())
    detail::fail<ShapeError>(nm, "got ", got, " start indices for operand ", x, " of rank ", x.ndim(),
                             ". Pass one rank-0 integer start index per dimension.");
  for (size_t i = first; i < in.size(); ++i) {
    if (!kInteger.contains(in[i].dtype))
      detail::fail<DTypeError>(nm, "start index ", i - first, " has type ", in[i],
                               "; start indices must be i32 or i64. Convert with fx::astype.");
    if (in[i].ndim() != 0)
      detail::fail<ShapeError>(nm, "start index ", i - first, " has type ", in[i],
                               "; each start index must be a rank-0 scalar.");
  }
}

std::vector<Tensor> tail(const std::vector<Tensor>& in, size_t first) {
  return {in.begin() + static_cast<std::ptrdiff_t>(first), in.end()};
}

// ---- helpers of the rules ----

/// `value` broadcast to `shape` (a staged op rather than a materialised constant).
Tensor filled(const Shape& shape, double value, DType dtype) {
  Tensor v = full(Shape{}, value, dtype);
  return shape.size() == 0 ? v : lax::broadcast_in_dim(v, shape, {});
}
Tensor zeros_of(const AbstractValue& a) { return filled(a.shape, 0.0, a.dtype); }

/// Integer `t` as i64 (index arithmetic never overflows i32 for the flattened batch trick).
Tensor as_i64(const Tensor& t) { return t.dtype() == i64 ? t : lax::convert_element_type(t, i64); }

/// i64 `t` clamped elementwise to [lo, hi] (callers ensure lo <= hi whenever t is non-empty).
Tensor clamp_i64(const Tensor& t, int64_t lo, int64_t hi) {
  return lax::min(lax::max(t, scalar<int64_t>(lo)), scalar<int64_t>(hi));
}

/// Index lists with `v` inserted at position `at`.
Ints inserted(Ints v, int64_t at, int64_t value) {
  v.insert(v.begin() + at, value);
  return v;
}

/// `x` (batch axis 0) with axis `a` >= 1 moved next to the batch axis and merged with it:
/// [B, ..., n, ...] -> [B*n, ...rest].
Tensor merge_batch_with(const Tensor& x, int64_t a) {
  Tensor m = batching::move_axis(x, a, 1);
  std::vector<int64_t> shape{m.shape()[0] * m.shape()[1]};
  shape.insert(shape.end(), m.shape().begin() + 2, m.shape().end());
  return lax::reshape(m, Shape(shape));
}

/// Per-example indices idx[b, ...] (i64, already clamped into [0, n)) shifted to index the merged
/// [B*n, ...] axis: idx + b*n.
Tensor offset_by_example(const Tensor& idx, int64_t n) {
  Tensor base = lax::mul(lax::iota(i64, idx.shape(), 0), scalar<int64_t>(n));
  return lax::add(idx, base);
}

/// Axis order taking [B, A (k dims), C...] to [B, C..., A]-style moves: the permutation that moves
/// the `count` axes starting at `from` so that they start at `to` (other axes keep their order).
Ints move_block(int64_t rank, int64_t from, int64_t count, int64_t to) {
  Ints rest, block;
  for (int64_t d = 0; d < rank; ++d) (d >= from && d < from + count ? block : rest).push_back(d);
  rest.insert(rest.begin() + to, block.begin(), block.end());
  return rest;
}
Tensor permuted(const Tensor& x, const Ints& perm) {
  for (size_t d = 0; d < perm.size(); ++d)
    if (perm[d] != static_cast<int64_t>(d)) return lax::transpose(x, perm);
  return x;
}

/// Per-example gather: x has its batch axis at 0, `a` >= 1 is the axis taken from, idx is
/// [B, I...] (i64, clamped into [0, x.shape[a])). Result [B, x[1:a], I..., x[a+1:]], batch axis 0.
/// Batch and axis are merged so a single gather serves every example.
Tensor batched_take(const Tensor& x, const Tensor& idx, int64_t a) {
  const int64_t n = x.shape()[a];
  Tensor g = lax::gather(merge_batch_with(x, a), offset_by_example(idx, n), 0);  // [B, I..., rest]
  const int64_t r = idx.ndim() - 1;
  return permuted(g, move_block(g.ndim(), 1, r, a));
}

/// Per-example scatter_add, the transpose of batched_take: operand o has its batch axis at 0 and
/// `a` >= 1 is the axis added into; idx [B, I...] clamped; updates [B, o[1:a], I..., o[a+1:]].
Tensor batched_scatter_add(const Tensor& o, const Tensor& idx, const Tensor& updates, int64_t a) {
  const int64_t n = o.shape()[a];
  const int64_t r = idx.ndim() - 1;
  Tensor u = permuted(updates, move_block(updates.ndim(), a, r, 1));                     // [B, I..., rest]
  Tensor s = lax::scatter_add(merge_batch_with(o, a), offset_by_example(idx, n), u, 0);  // [B*n, rest]
  std::vector<int64_t> shape{o.shape()[0], n};
  shape.insert(shape.end(), s.shape().begin() + 1, s.shape().end());
  return batching::move_axis(lax::reshape(s, Shape(shape)), 1, a);
}

/// Start indices: the inputs from `first` on.
std::vector<Tensor> starts_of(const std::vector<Tensor>& in, size_t first) { return tail(in, first); }

// ---- jvp rules ----
// Integer operands, start indices and gather/scatter indices carry no tangents: their tangents
// are ignored and the primal values are used.

/// The primal output; true when it is floating (integer/bool results have zero tangents).
bool float_primal_out(const Primitive& self, const std::vector<Tensor>& primals, const Params& params,
                      std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(1, Tensor());
  return is_floating(primals_out[0].dtype());
}

/// slice, pad, concatenate: linear in every input.
void all_linear_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                    const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  std::vector<Tensor> t = tangents;
  for (size_t i = 0; i < t.size(); ++i)
    if (!t[i].defined()) t[i] = zeros_of(primals[i].aval());
  tangents_out[0] = fluxion::bind1(self, t, params);
}

/// A mapped rank-0 start index (physical shape [B]) as i64 clamped to [0, hi].
Tensor batched_start(const Tensor& s, int64_t bd, int64_t hi) {
  return clamp_i64(as_i64(batching::move_axis(s, bd, 0)), 0, hi);
}

/// `axis` counted from the end when negative; AxisError naming `where` when out of range.
int64_t normalized_axis(const char* where, int64_t axis, int64_t rank) {
  if (axis < 0 && rank > 0) return normalize_axis(where, axis, rank);
  return axis;  // non-negative (or rank 0): the shape rule reports it
}

}  // namespace fluxion::primitives::indexing_family

namespace fluxion::primitives {

void register_indexing(std::vector<const Primitive*>& list) {
  using namespace indexing_family;
  list.insert(list.end(), {&slice_p(), &dynamic_slice_p(), &dynamic_update_slice_p(), &pad_p(), &concatenate_p(),
                           &iota_p(), &gather_p(), &scatter_add_p()});
}

}  // namespace fluxion::primitives
