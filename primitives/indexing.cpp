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

Primitive make_indexing(const char* name, ShapeRule rule, Kernel cpu_kernel, Kernel reference_kernel, bool linear) {
  Primitive p;
  p.name = name;
  p.traits.linear = linear;
  p.shape_rule = rule;
  p.kernels[static_cast<size_t>(Backend::cpu)] = cpu_kernel;
  p.kernels[static_cast<size_t>(Backend::reference)] = reference_kernel;
  return p;
}

#define FLUXION_INDEXING_PRIMITIVE(name, linear)                                                       \
  const Primitive& name##_p() {                                                                       \
    static const Primitive p = make_indexing(#name, &name##_rule, &name##_cpu, &name##_reference, linear); \
    return p;                                                                                         \
  }
FLUXION_INDEXING_PRIMITIVE(slice, true)
FLUXION_INDEXING_PRIMITIVE(dynamic_slice, true)
FLUXION_INDEXING_PRIMITIVE(dynamic_update_slice, true)
FLUXION_INDEXING_PRIMITIVE(pad, true)
FLUXION_INDEXING_PRIMITIVE(concatenate, true)
FLUXION_INDEXING_PRIMITIVE(iota, false)
FLUXION_INDEXING_PRIMITIVE(gather, true)
FLUXION_INDEXING_PRIMITIVE(scatter_add, true)
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
