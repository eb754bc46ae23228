// Indexing primitives: slice dynamic_slice dynamic_update_slice pad concatenate iota gather
// scatter_add. All but iota are linear in their floating inputs (integer start indices and
// gather/scatter indices are not differentiable). Params hold canonical (non-negative) axes: the
// lax wrappers normalise negative ones and fill default strides.
#include <sstream>

#include "backends/cpu/indexing.hpp"
#include "backends/reference/indexing.hpp"
#include "fluxion/lax.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace indexing_family {

using Ints = std::vector<int64_t>;

/// "(0,2)" — integer lists in messages, printed like the Jaxpr params.
std::string ints_str(const Ints& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

struct SliceParams final : ParamsOf<SliceParams> {
  Ints start_indices, limit_indices, strides;
  SliceParams(Ints s, Ints l, Ints st) : start_indices(std::move(s)), limit_indices(std::move(l)), strides(std::move(st)) {}
  auto fields() const { return std::tie(start_indices, limit_indices, strides); }
  static constexpr const char* names[] = {"start_indices", "limit_indices", "strides"};
};
struct DynamicSliceParams final : ParamsOf<DynamicSliceParams> {
  Ints slice_sizes;
  explicit DynamicSliceParams(Ints s) : slice_sizes(std::move(s)) {}
  auto fields() const { return std::tie(slice_sizes); }
  static constexpr const char* names[] = {"slice_sizes"};
};
struct PadParams final : ParamsOf<PadParams> {
  Ints low, high, interior;
  PadParams(Ints l, Ints h, Ints i) : low(std::move(l)), high(std::move(h)), interior(std::move(i)) {}
  auto fields() const { return std::tie(low, high, interior); }
  static constexpr const char* names[] = {"low", "high", "interior"};
};
struct ConcatenateParams final : ParamsOf<ConcatenateParams> {
  int64_t dimension;
  explicit ConcatenateParams(int64_t d) : dimension(d) {}
  auto fields() const { return std::tie(dimension); }
  static constexpr const char* names[] = {"dimension"};
};
struct IotaParams final : ParamsOf<IotaParams> {
  DType dtype;
  Shape shape;
  int64_t dimension;
  IotaParams(DType t, Shape s, int64_t d) : dtype(t), shape(std::move(s)), dimension(d) {}
  auto fields() const { return std::tie(dtype, shape, dimension); }
  static constexpr const char* names[] = {"dtype", "shape", "dimension"};
};
/// gather and scatter_add: the axis indexed.
struct AxisParams final : ParamsOf<AxisParams> {
  int64_t axis;
  explicit AxisParams(int64_t a) : axis(a) {}
  auto fields() const { return std::tie(axis); }
  static constexpr const char* names[] = {"axis"};
};

// ---- shared checks ----

/// A per-dimension parameter list must have one entry per operand dimension.
void check_per_dim(const char* nm, const char* what, const Ints& v, const AbstractValue& x) {
  if (static_cast<int64_t>(v.size()) != x.ndim())
    detail::fail<ShapeError>(nm, what, "=", ints_str(v), " has ", v.size(), " entries for operand ", x,
                             " of rank ", x.ndim(), ". Give one entry per dimension.");
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

/// Output shape of gather: x.shape[:axis] ++ indices.shape ++ x.shape[axis+1:].
Shape gather_shape(const char* nm, const AbstractValue& x, const AbstractValue& indices, int64_t axis) {
  check_axis(nm, "axis", axis, x.ndim(), x);
  if (!kInteger.contains(indices.dtype))
    detail::fail<DTypeError>(nm, "indices have type ", indices, "; indices must be i32 or i64. Convert with fx::astype.");
  if (x.shape[axis] == 0 && indices.shape.num_elements() > 0)
    detail::fail<ShapeError>(nm, "cannot index axis ", axis, " of ", x, ": it has size 0, but ", indices,
                             " asks for elements. Index a non-empty axis or pass empty indices.");
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  for (int64_t d : indices.shape) out.push_back(d);
  for (int64_t d = axis + 1; d < x.ndim(); ++d) out.push_back(x.shape[d]);
  checked_num_elements(nm, out.dims());
  return out;
}

// ---- shape rules ----

std::vector<AbstractValue> slice_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params& params) {
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
      detail::fail<ShapeError>(nm, "start_indices=", ints_str(p.start_indices), " limit_indices=",
                               ints_str(p.limit_indices), " are out of bounds for operand ", x, " in dimension ", d,
                               ": need 0 <= start (", s, ") <= limit (", l, ") <= size (", n, ").");
    if (st < 1)
      detail::fail<ShapeError>(nm, "strides=", ints_str(p.strides), " has stride ", st, " in dimension ", d,
                               ". Strides must be >= 1 (use lax::rev to reverse).");
    out.push_back(l == s ? 0 : (l - s - 1) / st + 1);
  }
  return {AbstractValue{out, x.dtype}};
}

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

std::vector<AbstractValue> dynamic_update_slice_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                     const Params&) {
  const char* nm = self.name.c_str();
  if (in.size() < 2)
    detail::fail<ShapeError>(nm, "takes an operand, an update and one start index per dimension, got ", in.size(),
                             " input(s).");
  const AbstractValue &x = in[0], &u = in[1];
  if (u.dtype != x.dtype)
    detail::fail<DTypeError>(nm, "update ", u, " and operand ", x, " have different dtypes. Convert one with fx::astype.");
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

std::vector<AbstractValue> pad_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params& params) {
  check_arity(self, in, 2);
  const auto& p = params.as<PadParams>();
  const char* nm = self.name.c_str();
  const AbstractValue &x = in[0], &v = in[1];
  if (v.dtype != x.dtype)
    detail::fail<DTypeError>(nm, "padding value ", v, " and operand ", x,
                             " have different dtypes. Convert the padding value with fx::astype.");
  if (v.ndim() != 0)
    detail::fail<ShapeError>(nm, "padding value has type ", v, "; it must be a rank-0 scalar.");
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
      detail::fail<ShapeError>(nm, "padding low=", ints_str(p.low), " high=", ints_str(p.high), " interior=",
                               ints_str(p.interior), " overflows in dimension ", d, " of ", x, ".");
    if (size < 0)
      detail::fail<ShapeError>(nm, "low=", ints_str(p.low), " high=", ints_str(p.high),
                               " crop more than dimension ", d, " of ", x, " holds (result size ", size,
                               "). Make the negative padding smaller.");
    out.push_back(size);
  }
  checked_num_elements(nm, out.dims());
  return {AbstractValue{out, x.dtype}};
}

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

std::vector<AbstractValue> iota_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params& params) {
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

std::vector<AbstractValue> gather_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params& params) {
  check_arity(self, in, 2);
  return {AbstractValue{gather_shape(self.name.c_str(), in[0], in[1], params.as<AxisParams>().axis), in[0].dtype}};
}

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

// ---- kernels: unpack params, call the backend ----

std::vector<Tensor> tail(const std::vector<Tensor>& in, size_t first) { return {in.begin() + static_cast<std::ptrdiff_t>(first), in.end()}; }

#define FLUXION_INDEXING_KERNELS(name, ...)                                                            \
  void name##_cpu(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {        \
    namespace k = cpu::indexing_kernels;                                                                 \
    __VA_ARGS__;                                                                                         \
  }                                                                                                      \
  void name##_reference(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {  \
    namespace k = reference::indexing_kernels;                                                           \
    __VA_ARGS__;                                                                                         \
  }
FLUXION_INDEXING_KERNELS(slice, {
  const auto& p = params.as<SliceParams>();
  k::slice(in[0], p.start_indices, p.strides, out[0]);
})
FLUXION_INDEXING_KERNELS(dynamic_slice, (void)params; k::dynamic_slice(in[0], tail(in, 1), out[0]))
FLUXION_INDEXING_KERNELS(dynamic_update_slice, (void)params; k::dynamic_update_slice(in[0], in[1], tail(in, 2), out[0]))
FLUXION_INDEXING_KERNELS(pad, {
  const auto& p = params.as<PadParams>();
  k::pad(in[0], in[1], p.low, p.high, p.interior, out[0]);
})
FLUXION_INDEXING_KERNELS(concatenate, k::concatenate(in, params.as<ConcatenateParams>().dimension, out[0]))
FLUXION_INDEXING_KERNELS(iota, (void)in; k::iota(params.as<IotaParams>().dimension, out[0]))
FLUXION_INDEXING_KERNELS(gather, k::gather(in[0], in[1], params.as<AxisParams>().axis, out[0]))
FLUXION_INDEXING_KERNELS(scatter_add, k::scatter_add(in[0], in[1], in[2], params.as<AxisParams>().axis, out[0]))
#undef FLUXION_INDEXING_KERNELS

// The primitives' own handles, for rules that bind them (defined below).
const Primitive& slice_p();
const Primitive& dynamic_slice_p();
const Primitive& dynamic_update_slice_p();
const Primitive& pad_p();
const Primitive& concatenate_p();
const Primitive& iota_p();
const Primitive& gather_p();
const Primitive& scatter_add_p();

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
  Tensor u = permuted(updates, move_block(updates.ndim(), a, r, 1));  // [B, I..., rest]
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

void dynamic_slice_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                       const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out) || !tangents[0].defined()) return;
  std::vector<Tensor> in = primals;
  in[0] = tangents[0];
  tangents_out[0] = fluxion::bind1(self, in, params);
}

void dynamic_update_slice_jvp(const Primitive& self, const std::vector<Tensor>& primals,
                              const std::vector<Tensor>& tangents, const Params& params,
                              std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out)) return;
  if (!tangents[0].defined() && !tangents[1].defined()) return;
  std::vector<Tensor> in = primals;
  for (size_t i = 0; i < 2; ++i) in[i] = tangents[i].defined() ? tangents[i] : zeros_of(primals[i].aval());
  tangents_out[0] = fluxion::bind1(self, in, params);
}

void gather_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!float_primal_out(self, primals, params, primals_out, tangents_out) || !tangents[0].defined()) return;
  tangents_out[0] = fluxion::bind1(self, {tangents[0], primals[1]}, params);
}

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

// ---- transpose rules ----
// `inputs[i]` undefined marks the linear inputs; integer inputs always hold their values.

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

// dynamic_slice -> the cotangent written into zeros at the same (clamped) starts.
void dynamic_slice_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                             const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined() || inputs[0].defined()) return;
  cts_in[0] = lax::dynamic_update_slice(zeros_of(in_avals[0]), ct, starts_of(inputs, 1));
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

// gather -> scatter_add of the cotangent into zeros (clamped indices agree).
void gather_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                      const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined() || inputs[0].defined()) return;
  cts_in[0] = lax::scatter_add(zeros_of(in_avals[0]), inputs[1], ct, params.as<AxisParams>().axis);
}

// scatter_add -> operand: the cotangent; updates: the cotangent gathered at the indices.
void scatter_add_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                           const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  if (!inputs[0].defined()) cts_in[0] = ct;
  if (!inputs[2].defined()) cts_in[2] = lax::gather(ct, inputs[1], params.as<AxisParams>().axis);
}

// ---- batching rules ----
// Logical axis a of a value mapped along bd sits at physical axis a < bd ? a : a + 1.

void slice_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                 const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<SliceParams>();
  const int64_t bd = dims[0], size = values[0].shape()[bd];
  out = {lax::slice(values[0], inserted(p.start_indices, bd, 0), inserted(p.limit_indices, bd, size),
                    inserted(p.strides, bd, 1))};
  out_dims = {bd};
}

// An unmapped padding value pads around the batch axis; a mapped one pads with zeros and then
// selects each example's value where the mask says "padding" (like JAX).
void pad_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
               const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<PadParams>();
  const int64_t size = batching::batch_size(values, dims);
  if (dims[1] == kNotMapped) {
    const int64_t bd = dims[0];
    out = {lax::pad(values[0], values[1], inserted(p.low, bd, 0), inserted(p.high, bd, 0), inserted(p.interior, bd, 0))};
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

void concatenate_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                       const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t size = batching::batch_size(values, dims);
  std::vector<Tensor> xs;
  xs.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) xs.push_back(batching::materialize(values[i], dims[i], size, 0));
  out = {lax::concatenate(xs, params.as<ConcatenateParams>().dimension + 1)};
  out_dims = {0};
}

// iota has no inputs, so the batch interpreter never calls this; it is here for completeness.
void iota_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>&,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = fluxion::bind(self, values, params);
  out_dims.assign(out.size(), kNotMapped);
}

/// A mapped rank-0 start index (physical shape [B]) as i64 clamped to [0, hi].
Tensor batched_start(const Tensor& s, int64_t bd, int64_t hi) {
  return clamp_i64(as_i64(batching::move_axis(s, bd, 0)), 0, hi);
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

Primitive make_indexing(const char* name, ShapeRule rule, Kernel cpu_kernel, Kernel reference_kernel, bool linear,
                        JvpRule jvp, TransposeRule transpose, BatchRule batch) {
  Primitive p;
  p.name = name;
  p.traits.linear = linear;
  p.shape_rule = rule;
  p.kernels[static_cast<size_t>(Backend::cpu)] = cpu_kernel;
  p.kernels[static_cast<size_t>(Backend::reference)] = reference_kernel;
  p.jvp = jvp;
  p.transpose = transpose;
  p.batch = batch;
  return p;
}

#define FLUXION_INDEXING_PRIMITIVE(name, linear, jvp, transpose)                                        \
  const Primitive& name##_p() {                                                                       \
    static const Primitive p =                                                                        \
        make_indexing(#name, &name##_rule, &name##_cpu, &name##_reference, linear, jvp, transpose, &name##_batch); \
    return p;                                                                                         \
  }
FLUXION_INDEXING_PRIMITIVE(slice, true, &all_linear_jvp, &slice_transpose)
FLUXION_INDEXING_PRIMITIVE(dynamic_slice, true, &dynamic_slice_jvp, &dynamic_slice_transpose)
FLUXION_INDEXING_PRIMITIVE(dynamic_update_slice, true, &dynamic_update_slice_jvp, &dynamic_update_slice_transpose)
FLUXION_INDEXING_PRIMITIVE(pad, true, &all_linear_jvp, &pad_transpose)
FLUXION_INDEXING_PRIMITIVE(concatenate, true, &all_linear_jvp, &concatenate_transpose)
FLUXION_INDEXING_PRIMITIVE(iota, false, &zero_jvp_rule, nullptr)
FLUXION_INDEXING_PRIMITIVE(gather, true, &gather_jvp, &gather_transpose)
FLUXION_INDEXING_PRIMITIVE(scatter_add, true, &scatter_add_jvp, &scatter_add_transpose)
#undef FLUXION_INDEXING_PRIMITIVE

/// `axis` counted from the end when negative; AxisError naming `where` when out of range.
int64_t normalized_axis(const char* where, int64_t axis, int64_t rank) {
  if (axis < 0 && rank > 0) return normalize_axis(where, axis, rank);
  return axis;  // non-negative (or rank 0): the shape rule reports it
}

}  // namespace indexing_family

void register_indexing(std::vector<const Primitive*>& list) {
  using namespace indexing_family;
  list.insert(list.end(), {&slice_p(), &dynamic_slice_p(), &dynamic_update_slice_p(), &pad_p(), &concatenate_p(),
                           &iota_p(), &gather_p(), &scatter_add_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {

Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& limit_indices,
             const std::vector<int64_t>& strides) {
  namespace ix = primitives::indexing_family;
  std::vector<int64_t> st = strides.empty() ? std::vector<int64_t>(start_indices.size(), 1) : strides;
  return bind1(ix::slice_p(), {x}, ix::SliceParams(start_indices, limit_indices, std::move(st)));
}
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& start_indices, const std::vector<int64_t>& slice_sizes) {
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
