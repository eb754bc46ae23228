// The op layer of the sort family: sort, argsort, top_k on the sort primitive; cumprod, cummax,
// cummin, logcumsumexp on the cumulative primitives; logaddexp; associative_scan's helpers.
#include <algorithm>
#include <cstdint>

#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "fluxion/sort.hpp"

namespace fluxion {
namespace ops_sort_detail {

/// Positions 0, 1, ... along `axis` of x's shape, as the index dtype of that length.
Tensor positions(const Tensor& x, int64_t axis) {
  const int64_t n = x.shape()[axis];
  return lax::iota(n <= INT32_MAX ? i32 : i64, x.shape(), axis);
}

/// The axis of a sort-family op: rank >= 1, and in range (negative counts from the end).
int64_t sort_axis(const char* op, const Tensor& x, int64_t axis) {
  if (x.ndim() == 0)
    detail::fail<AxisError>(op, "needs an operand of rank >= 1, got ", x.aval(),
                            ". Reshape it to one element (fx::reshape(x, {1})).");
  return normalize_axis(op, axis, x.ndim());
}

/// max/min-based scans take no bool (like fx::maximum's callers, max and min).
void check_not_bool(const char* op, const Tensor& x) {
  if (x.dtype() == boolean)
    detail::fail<DTypeError>(op, "does not take bool tensors, got ", x.aval(),
                             ". Convert with fx::astype(x, fx::i32) first.");
}

}  // namespace ops_sort_detail

Tensor sort(const Tensor& x, int64_t axis, bool descending) {
  const int64_t a = ops_sort_detail::sort_axis("sort", x, axis);
  return lax::sort({x}, a, 1, descending)[0];
}

Tensor argsort(const Tensor& x, int64_t axis, bool descending) {
  const int64_t a = ops_sort_detail::sort_axis("argsort", x, axis);
  return lax::sort({x, ops_sort_detail::positions(x, a)}, a, 1, descending)[1];
}

// A descending stable sort keeps equal elements in index order: JAX's top_k tie rule.
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k) {
  const int64_t a = ops_sort_detail::sort_axis("top_k", x, -1);
  const int64_t n = x.shape()[a];
  if (k < 0 || k > n)
    detail::fail<ShapeError>("top_k", "k=", k, " is out of range for ", x.aval(), ", whose last axis has ", n,
                             " elements. Use 0 <= k <= ", n, ".");
  std::vector<Tensor> sorted = lax::sort({x, ops_sort_detail::positions(x, a)}, a, 1, true);
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape().dims();
  limit[static_cast<size_t>(a)] = k;
  return {lax::slice(sorted[0], start, limit), lax::slice(sorted[1], start, limit)};
}

Tensor logaddexp(const Tensor& a, const Tensor& b) {
  // The (constant) larger operand as the shift: the result does not depend on it, so its gradient
  // is dropped and the derivatives are the softmax weights at every order; non-finite shifts
  // (both -inf, or an inf) are replaced by 0, which gives -inf, inf or NaN as they should.
  Tensor larger = maximum(a, b);
  Tensor shift = stop_gradient(where(isfinite(larger), larger, 0.0));
  return log(exp(a - shift) + exp(b - shift)) + shift;
}

Tensor cumprod(const Tensor& x, int64_t axis, bool reverse) {
  const int64_t a = normalize_axis("cumprod", axis, x.ndim());
  Tensor v = x.dtype() == boolean ? astype(x, i32) : x;
  return lax::cumprod(v, a, reverse);
}

Tensor cummax(const Tensor& x, int64_t axis, bool reverse) {
  const int64_t a = normalize_axis("cummax", axis, x.ndim());
  ops_sort_detail::check_not_bool("cummax", x);
  return lax::cummax(x, a, reverse);
}

Tensor cummin(const Tensor& x, int64_t axis, bool reverse) {
  const int64_t a = normalize_axis("cummin", axis, x.ndim());
  ops_sort_detail::check_not_bool("cummin", x);
  return lax::cummin(x, a, reverse);
}

Tensor logcumsumexp(const Tensor& x, int64_t axis, bool reverse) {
  const int64_t a = normalize_axis("logcumsumexp", axis, x.ndim());
  Tensor v = is_floating(x.dtype()) ? x : astype(x, f64);
  return lax::cumlogsumexp(v, a, reverse);
}

namespace associative_scan_detail {

std::vector<int64_t> scan_axes(const std::vector<Tensor>& leaves, int64_t axis) {
  if (leaves.empty())
    detail::fail<ShapeError>("associative_scan", "elems has no leaves. Pass a Tensor or a pytree of Tensors.");
  std::vector<int64_t> axes;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor& leaf = leaves[i];
    if (leaf.ndim() == 0)
      detail::fail<AxisError>("associative_scan", "leaf ", i, " of elems is rank 0 (", leaf.aval(),
                              "); every leaf needs the scanned axis ", axis, ". Stack the elements along an axis.");
    axes.push_back(normalize_axis("associative_scan", axis, leaf.ndim()));
    const int64_t n = leaf.shape()[axes.back()], n0 = leaves[0].shape()[axes[0]];
    if (n != n0)
      detail::fail<ShapeError>("associative_scan", "leaves have different lengths along axis ", axis, ": leaf 0 ",
                               leaves[0].aval(), " has ", n0, ", leaf ", i, " ", leaf.aval(), " has ", n,
                               ". Every leaf must hold the same number of elements.");
  }
  return axes;
}

std::vector<Tensor> slice_along(const std::vector<Tensor>& leaves, const std::vector<int64_t>& axes, int64_t start,
                                int64_t limit, int64_t stride) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor& x = leaves[i];
    const size_t a = static_cast<size_t>(axes[i]);
    std::vector<int64_t> lo(static_cast<size_t>(x.ndim()), 0), hi = x.shape().dims(),
                                                               st(static_cast<size_t>(x.ndim()), 1);
    lo[a] = std::min(start, hi[a]);
    hi[a] = std::max(lo[a], std::min(limit, hi[a]));
    st[a] = stride;
    out.push_back(lax::slice(x, lo, hi, st));
  }
  return out;
}

Tensor prepend_first(const Tensor& x, const Tensor& rest, int64_t axis) {
  std::vector<int64_t> lo(static_cast<size_t>(x.ndim()), 0), hi = x.shape().dims();
  hi[static_cast<size_t>(axis)] = 1;
  return lax::concatenate({lax::slice(x, lo, hi), rest}, axis);
}

// Pairs (even[i], odd[i]) side by side on a new axis after `axis`, merged into it by a reshape (odd
// padded by one first when even is longer, and the pad sliced off): one copy, values unchanged.
Tensor interleave(const Tensor& even, const Tensor& odd, int64_t axis) {
  const int64_t ne = even.shape()[axis], no = odd.shape()[axis];
  if (no == 0) return even;
  const size_t r = static_cast<size_t>(even.ndim()), a = static_cast<size_t>(axis);
  Tensor o = odd;
  if (ne != no) {
    std::vector<int64_t> zero(r, 0), high(r, 0);
    high[a] = 1;
    o = lax::pad(odd, lax::convert_element_type(zeros({}, f64), odd.dtype()), zero, high, zero);
  }
  Tensor pairs = lax::concatenate({lax::expand_dims(even, {axis + 1}), lax::expand_dims(o, {axis + 1})}, axis + 1);
  std::vector<int64_t> merged = even.shape().dims();
  merged[a] = 2 * ne;
  Tensor out = lax::reshape(pairs, Shape(merged));
  if (ne == no) return out;
  std::vector<int64_t> start(r, 0), limit = merged;
  limit[a] = ne + no;
  return lax::slice(out, start, limit);
}

Tensor reverse_along(const Tensor& x, int64_t axis) {
  const int64_t n = x.shape()[axis];
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = n - 1 - i;
  return lax::gather(x, from_vector(idx, Shape{n}), axis);
}

void check_combined(const std::vector<Tensor>& result, const std::vector<Tensor>& operand) {
  if (result.size() != operand.size())
    detail::fail<ShapeError>("associative_scan", "fn returned ", result.size(), " leaves for operands of ",
                             operand.size(), ". fn must return a tree of the structure of its arguments.");
  for (size_t i = 0; i < result.size(); ++i)
    if (result[i].shape() != operand[i].shape() || result[i].dtype() != operand[i].dtype())
      detail::fail<ShapeError>("associative_scan", "fn returned ", result[i].aval(), " for leaf ", i, " of operands ",
                               operand[i].aval(),
                               ". fn must keep each leaf's shape and dtype (it combines elements elementwise).");
}

}  // namespace associative_scan_detail
}  // namespace fluxion
