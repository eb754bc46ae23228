// The numpy-style op layer, shapes and indexing: reshape transpose expand_dims squeeze concatenate
// stack ravel slice take. Ops that would not change anything return their input (no equation).
#include <algorithm>

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
    detail::fail<ShapeError>("reshape", "cannot reshape ", x.aval(), " (", x.size(), " elements) into ",
                             Shape(shape), ". The new shape must hold the same number of elements.");
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
      detail::fail<ShapeError>("concatenate", "shapes ", first.aval(), " (argument 0) and ", x.aval(),
                               " (argument ", i, ") differ outside axis ", a,
                               ". Every dimension but the concatenated one must match.");
  }
  return xs.size() == 1 ? xs[0] : lax::concatenate(xs, a);
}

Tensor stack(const std::vector<Tensor>& xs0, int64_t axis) {
  std::vector<Tensor> xs = ops_shape_detail::promote_all("stack", xs0);
  int64_t a = normalize_axis("stack", axis, xs0[0].ndim() + 1);
  for (size_t i = 1; i < xs0.size(); ++i)
    if (xs0[i].shape() != xs0[0].shape())
      detail::fail<ShapeError>("stack", "shapes ", xs0[0].aval(), " (argument 0) and ", xs0[i].aval(),
                               " (argument ", i, ") differ. Stacked tensors must have equal shapes.");
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
                             Shape(strides), " must have one entry per sliced axis (at most ", x.ndim(),
                             " for ", x.aval(), "; strides may be empty).");
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
    detail::fail<ShapeError>("take", "cannot take indices from axis ", a, " of ", x.aval(),
                             ", which is empty.");
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
