// The numpy-style op layer, shapes and indexing: reshape transpose expand_dims squeeze concatenate
// stack ravel slice take nonzero (and the one-argument where). Ops that would not change anything return their input (no equation).
#include <algorithm>
#include <cstdint>
#include <limits>

#include "fluxion/interpreter.hpp"
#include "fluxion/ops.hpp"

namespace fluxion {
namespace ops_shape_detail {

/// The operands converted to their common dtype; ShapeError naming `op` for an empty list.
std::vector<Tensor> promote_all(const char* op, const std::vector<Tensor>& xs) {
  if (xs.empty()) detail::fail<ShapeError>(op, "needs at least one tensor, got none.");
  DType d = xs[0].dtype();
  for (const Tensor& x : xs) d = promote_types(d, x.dtype());
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(astype(x, d));
  return out;
}

/// Clamps a numpy slice bound (negative counts from the end) into [0, dim].
int64_t clamp_bound(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return std::clamp<int64_t>(v, 0, dim);
}

/// Indices of `n` elements (and the fill sentinel n): i32 unless they need i64.
DType index_dtype(int64_t n) { return n < std::numeric_limits<int32_t>::max() ? i32 : i64; }

/// ShapeError naming `op` for a rank-0 argument (numpy and JAX refuse it too).
void check_nonzero_rank(const char* op, const Tensor& x) {
  if (x.ndim() == 0)
    detail::fail<ShapeError>(op, "needs a tensor of rank >= 1, got ", x.aval(), ". Use fx::reshape(x, {1}).");
}

/// The concrete value of `x`; a traced one is a ConcretizationError that names the alternatives.
Tensor concrete_condition(const char* op, const Tensor& x) {
  if (!x.is_tracer()) return x;
  try {
    return x.concrete(op);
  } catch (const ConcretizationError&) {
    const char* transform = static_cast<const TracerImpl&>(*x.impl()).owner()->transform;
    detail::fail<ConcretizationError>(
        op, "the number of indices depends on the values of ", x.aval(), ", which are traced by ", transform,
        ", so the result has no static shape. Use the three-argument fx::where(cond, a, b), or ",
        "fx::nonzero(cond, size) with a static size (padded with fill_value).");
  }
}

/// Eager nonzero: one index tensor per dimension of x.
std::vector<Tensor> nonzero_concrete(const char* op, const Tensor& x0) {
  check_nonzero_rank(op, x0);
  Tensor x = concrete_condition(op, x0);
  std::vector<int64_t> flags = astype(x, boolean).to_vector<int64_t>();
  const std::vector<int64_t> strides = x.shape().strides();
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(x.ndim()));
  for (int64_t p = 0; p < static_cast<int64_t>(flags.size()); ++p)
    if (flags[static_cast<size_t>(p)])
      for (int64_t d = 0; d < x.ndim(); ++d) idx[d].push_back(p / strides[d] % x.shape()[d]);
  std::vector<Tensor> out;
  for (const std::vector<int64_t>& v : idx) out.push_back(astype(from_vector(v), index_dtype(x.size())));
  return out;
}

}  // namespace ops_shape_detail

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  int64_t inferred = -1;
  std::vector<int64_t> known;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0)
        detail::fail<ShapeError>("reshape", "more than one -1 in ", Shape(shape), " (reshaping ", x.aval(),
                                 "). At most one dimension can be inferred.");
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      detail::fail<ShapeError>("reshape", "negative dimension ", shape[i], " in ", Shape(shape),
                               ". Dimensions must be >= 0, or -1 for one inferred dimension.");
    } else {
      known.push_back(shape[i]);
    }
  }
  int64_t n = checked_num_elements("reshape", known);
  Shape out(shape);
  if (inferred >= 0 && n > 0 && x.size() % n == 0) out[inferred] = x.size() / n;
  if ((inferred >= 0 && out[inferred] < 0) || out.num_elements() != x.size())
    detail::fail<ShapeError>("reshape", "cannot reshape ", x.aval(), " (", x.size(), " elements) into ", Shape(shape),
                             ". The new shape must hold the same number of elements.");
  return out == x.shape() ? x : lax::reshape(x, out);
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> perm;
  if (axes.empty()) {
    for (int64_t i = x.ndim(); i-- > 0;) perm.push_back(i);
  } else {
    if (static_cast<int64_t>(axes.size()) != x.ndim())
      detail::fail<AxisError>("transpose", "axes ", Shape(axes), " are not a permutation of the ", x.ndim(),
                              " axes of ", x.aval(), ". Name every axis exactly once.");
    for (int64_t a : axes) perm.push_back(normalize_axis("transpose", a, x.ndim()));
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      detail::fail<AxisError>("transpose", "axes ", Shape(axes), " are not a permutation of the ", x.ndim(),
                              " axes of ", x.aval(), ". Name every axis exactly once.");
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? x : lax::transpose(x, perm);
}

Tensor expand_dims(const Tensor& x, int64_t axis) { return expand_dims(x, std::vector<int64_t>{axis}); }

Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& axes) {
  // Axes count in the output rank, so -1 appends a trailing dimension.
  int64_t rank = x.ndim() + static_cast<int64_t>(axes.size());
  std::vector<int64_t> dims = normalize_axes("expand_dims", axes, rank);
  return dims.empty() ? x : lax::expand_dims(x, dims);
}

Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> dims;
  if (axes.empty()) {
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (x.shape()[i] == 1) dims.push_back(i);
  } else {
    dims = normalize_axes("squeeze", axes, x.ndim());
    for (int64_t d : dims)
      if (x.shape()[d] != 1)
        detail::fail<ShapeError>("squeeze", "axis ", d, " of ", x.aval(), " has size ", x.shape()[d],
                                 ", not 1. Only size-1 axes can be squeezed.");
  }
  return dims.empty() ? x : lax::squeeze(x, dims);
}

Tensor concatenate(const std::vector<Tensor>& xs0, int64_t axis) {
  std::vector<Tensor> xs = ops_shape_detail::promote_all("concatenate", xs0);
  const Tensor& first = xs0[0];
  if (first.ndim() == 0)
    detail::fail<ShapeError>("concatenate", "cannot concatenate rank-0 tensors (", first.aval(),
                             "). Use fx::stack, or reshape them to 1-d.");
  int64_t a = normalize_axis("concatenate", axis, first.ndim());
  for (size_t i = 1; i < xs0.size(); ++i) {
    const Tensor& x = xs0[i];
    bool ok = x.ndim() == first.ndim();
    for (int64_t d = 0; ok && d < x.ndim(); ++d) ok = d == a || x.shape()[d] == first.shape()[d];
    if (!ok)
      detail::fail<ShapeError>("concatenate", "shapes ", first.aval(), " (argument 0) and ", x.aval(), " (argument ", i,
                               ") differ outside axis ", a, ". Every dimension but the concatenated one must match.");
  }
  return xs.size() == 1 ? xs[0] : lax::concatenate(xs, a);
}

Tensor stack(const std::vector<Tensor>& xs0, int64_t axis) {
  std::vector<Tensor> xs = ops_shape_detail::promote_all("stack", xs0);
  int64_t a = normalize_axis("stack", axis, xs0[0].ndim() + 1);
  for (size_t i = 1; i < xs0.size(); ++i)
    if (xs0[i].shape() != xs0[0].shape())
      detail::fail<ShapeError>("stack", "shapes ", xs0[0].aval(), " (argument 0) and ", xs0[i].aval(), " (argument ", i,
                               ") differ. Stacked tensors must have equal shapes.");
  for (Tensor& x : xs) x = lax::expand_dims(x, {a});
  return xs.size() == 1 ? xs[0] : lax::concatenate(xs, a);
}

Tensor ravel(const Tensor& x) { return reshape(x, {-1}); }

Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& limits,
             const std::vector<int64_t>& strides) {
  int64_t n = static_cast<int64_t>(starts.size());
  if (static_cast<int64_t>(limits.size()) != n || (!strides.empty() && static_cast<int64_t>(strides.size()) != n) ||
      n > x.ndim())
    detail::fail<ShapeError>("slice", "starts ", Shape(starts), ", limits ", Shape(limits), " and strides ",
                             Shape(strides), " must have one entry per sliced axis (at most ", x.ndim(), " for ",
                             x.aval(), "; strides may be empty).");
  // Axes past the given ones are taken whole, like numpy's x[a:b] on a matrix.
  std::vector<int64_t> lo(static_cast<size_t>(x.ndim()), 0), hi = x.shape().dims(), st(lo.size(), 1);
  bool whole = true;
  for (int64_t d = 0; d < n; ++d) {
    int64_t dim = x.shape()[d];
    st[d] = strides.empty() ? 1 : strides[d];
    if (st[d] < 1)
      detail::fail<ShapeError>("slice", "stride ", st[d], " for axis ", d, " of ", x.aval(),
                               " must be >= 1. Reverse with fx::take and descending indices.");
    lo[d] = ops_shape_detail::clamp_bound(starts[d], dim);
    hi[d] = std::max(lo[d], ops_shape_detail::clamp_bound(limits[d], dim));
    whole = whole && lo[d] == 0 && hi[d] == dim && (st[d] == 1 || dim <= 1);
  }
  if (whole) return x;
  bool unit = std::all_of(st.begin(), st.end(), [](int64_t s) { return s == 1; });
  return lax::slice(x, lo, hi, unit ? std::vector<int64_t>{} : st);
}

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis) {
  if (!is_integer(indices.dtype()))
    detail::fail<DTypeError>("take", "indices must be integers, got ", indices.aval(),
                             ". Convert them with fx::astype(indices, fx::i32).");
  int64_t a = normalize_axis("take", axis, x.ndim());
  int64_t dim = x.shape()[a];
  if (dim == 0 && indices.size() > 0)
    detail::fail<ShapeError>("take", "cannot take indices from axis ", a, " of ", x.aval(), ", which is empty.");
  // Negative indices count from the end; gather clamps what is still out of range. Concrete
  // indices that are all non-negative skip the fix-up.
  bool any_negative = indices.is_tracer();
  if (!any_negative) {
    std::vector<int64_t> v = indices.to_vector<int64_t>();
    any_negative = std::any_of(v.begin(), v.end(), [](int64_t i) { return i < 0; });
  }
  Tensor idx = indices;
  if (any_negative) {
    Tensor negative = indices < 0;
    idx = where(negative, indices + dim, indices);
  }
  return lax::gather(x, idx, a);
}

Tensor take(const Tensor& x, const Tensor& indices) { return take(ravel(x), indices, 0); }

}  // namespace fluxion

namespace fluxion {

std::vector<Tensor> where(const Tensor& cond) { return ops_shape_detail::nonzero_concrete("where", cond); }
std::vector<Tensor> nonzero(const Tensor& x) { return ops_shape_detail::nonzero_concrete("nonzero", x); }

// Static shapes throughout: the k-th nonzero element goes to slot k (its running count - 1) by a
// scatter_add of its position + 1 into `size` + 1 slots, the last one collecting the elements that
// do not fit (scatter_add clamps their slot). An empty slot (0) takes fill_value.
std::vector<Tensor> nonzero(const Tensor& x, int64_t size, int64_t fill_value) {
  ops_shape_detail::check_nonzero_rank("nonzero", x);
  if (size < 0) detail::fail<ShapeError>("nonzero", "size must be >= 0, got ", size, ".");
  const int64_t n = x.size();
  const DType dt = ops_shape_detail::index_dtype(std::max(n, size));
  if (dt == i32 &&
      (fill_value < std::numeric_limits<int32_t>::min() || fill_value > std::numeric_limits<int32_t>::max()))
    detail::fail<DTypeError>("nonzero", "fill_value ", fill_value,
                             " does not fit in the i32 indices. Use a value in range.");
  Tensor flags = ravel(astype(x, boolean));
  Tensor slot = where(flags, lax::cumsum(astype(flags, dt), 0) - 1, size);
  Tensor positions = arange(1, n + 1, 1, dt);
  Tensor filled = lax::scatter_add(zeros({size + 1}, dt), slot, positions, 0);
  Tensor first = slice(filled, {0}, {size});
  Tensor found = first > 0;
  Tensor rest = first - 1;
  std::vector<Tensor> out(static_cast<size_t>(x.ndim()));
  for (int64_t d = x.ndim(); d-- > 0;) {
    // Row-major unravelling; a zero extent (no element is found) divides by 1 instead.
    Tensor extent = full(Shape{}, std::max<int64_t>(x.shape()[d], 1), dt);
    Tensor index = d == 0 ? rest : lax::rem(rest, extent);
    out[static_cast<size_t>(d)] = where(found, index, fill_value);
    rest = lax::div(rest, extent);
  }
  return out;
}

}  // namespace fluxion
