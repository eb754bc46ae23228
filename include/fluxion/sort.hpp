/// sort, argsort, top_k, cumulative ops (cumprod, cummax, cummin, logcumsumexp) and associative_scan.
///
/// Order of keys (like jnp.sort, which follows XLA's total order for sorting): NaN of either sign is
/// larger than every number and equal to every other NaN, so NaNs go last (first when descending);
/// -0.0 and 0.0 are equal, so they keep their original order. Every sort is stable.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "fluxion/pytree.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion {
namespace lax {
/// The sort primitive (like lax.sort): every operand (equal shapes, any dtypes) reordered along
/// `dimension` by the lexicographic order of the first `num_keys` operands; stable. `descending`
/// reverses the key order and still keeps equal keys in their original order.
std::vector<Tensor> sort(const std::vector<Tensor>& operands, int64_t dimension = -1, int64_t num_keys = 1,
                         bool descending = false);
/// The cumulative primitives (like lax.cumprod, cummax, cummin, cumlogsumexp): inclusive along `axis`
/// (non-negative), from the end when `reverse`; no bool (cumlogsumexp: floats only).
Tensor cumprod(const Tensor& x, int64_t axis, bool reverse = false);
Tensor cummax(const Tensor& x, int64_t axis, bool reverse = false);
Tensor cummin(const Tensor& x, int64_t axis, bool reverse = false);
Tensor cumlogsumexp(const Tensor& x, int64_t axis, bool reverse = false);
}  // namespace lax

/// x sorted along `axis` (ascending unless `descending`); stable, NaNs last when ascending.
Tensor sort(const Tensor& x, int64_t axis = -1, bool descending = false);
/// The indices that sort x along `axis`: i32 (i64 for an axis longer than 2^31 - 1), stable (equal
/// elements keep their order, also when `descending`).
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false);
/// The k largest elements along the last axis, largest first, and their i32 indices; equal elements
/// in index order (NaN counts as the largest). 0 <= k <= x.shape[-1].
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k);

// Cumulative ops along `axis` (inclusive; from the end when `reverse`): one primitive each, whose
// derivatives are those of the associative_scan composition (like JAX's): correct at zeros (cumprod)
// and split between tied elements (cummax, cummin: like fx::maximum's).
Tensor cumprod(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor cummax(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor cummin(const Tensor& x, int64_t axis = 0, bool reverse = false);
/// log(cumsum(exp(x))) computed stably (integers are converted to f64 like logsumexp).
Tensor logcumsumexp(const Tensor& x, int64_t axis = 0, bool reverse = false);
/// log(exp(a) + exp(b)), stable, with derivatives exp(a - out) and exp(b - out) at every order.
Tensor logaddexp(const Tensor& a, const Tensor& b);

namespace associative_scan_detail {
/// Each leaf's axis (negative counts from its end); AxisError/ShapeError naming associative_scan
/// unless every leaf has the axis with one common length.
std::vector<int64_t> scan_axes(const std::vector<Tensor>& leaves, int64_t axis);
/// leaf[i] sliced along axes[i] as [start, limit) with `stride` (limit clamped to the length).
std::vector<Tensor> slice_along(const std::vector<Tensor>& leaves, const std::vector<int64_t>& axes, int64_t start,
                                int64_t limit, int64_t stride);
/// x[0] along `axis` placed before `rest` (concatenated along axis).
Tensor prepend_first(const Tensor& x, const Tensor& rest, int64_t axis);
/// The sequence whose even positions are `even` and odd positions `odd` along `axis`.
Tensor interleave(const Tensor& even, const Tensor& odd, int64_t axis);
/// x reversed along `axis`.
Tensor reverse_along(const Tensor& x, int64_t axis);
/// Error unless `fn`'s result leaves match its operands' leaves in count, shapes and dtypes.
void check_combined(const std::vector<Tensor>& result, const std::vector<Tensor>& operand);
}  // namespace associative_scan_detail

/// Inclusive scan with an associative binary `fn` along `axis` of every leaf of `elems` (a Tensor
/// or a pytree of them, leaves of equal length along the axis), like lax.associative_scan:
/// result[i] = fn(...fn(fn(x[0], x[1]), x[2])..., x[i]); fn need not be commutative (its first
/// argument holds the earlier elements). `reverse` scans from the end: result = rev(scan(rev(x))).
/// Built from the parallel odd/even prefix composition (O(log n) levels of slices, fn and
/// interleaves), all of them primitives with every rule, so grad, vmap and jit apply.
template <class F, class T> T associative_scan(F&& fn, const T& elems, int64_t axis = 0, bool reverse = false) {
  auto flat = tree_flatten(elems);  // (no structured bindings: C++17 lambdas cannot capture them)
  std::vector<Tensor> leaves = std::move(flat.first);
  const TreeDef<T>& def = flat.second;
  const std::vector<int64_t> axes = associative_scan_detail::scan_axes(leaves, axis);
  if (reverse)
    for (size_t i = 0; i < leaves.size(); ++i) leaves[i] = associative_scan_detail::reverse_along(leaves[i], axes[i]);
  auto combine = [&](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    std::vector<Tensor> out = tree_leaves(T(fn(tree_unflatten(def, a), tree_unflatten(def, b))));
    associative_scan_detail::check_combined(out, a);
    return out;
  };
  auto length = [&](const std::vector<Tensor>& e) { return e[0].shape()[axes[0]]; };
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> scan = [&](const std::vector<Tensor>& e) {
    const int64_t n = length(e);
    if (n < 2) return e;
    // Pairs (x0 x1) (x2 x3) ... combined, scanned recursively: the results at odd positions.
    std::vector<Tensor> odd = scan(combine(associative_scan_detail::slice_along(e, axes, 0, n - 1, 2),
                                           associative_scan_detail::slice_along(e, axes, 1, n, 2)));
    // Even positions 2, 4, ...: the odd result before them combined with the element.
    std::vector<Tensor> tail = associative_scan_detail::slice_along(e, axes, 2, n, 2);
    std::vector<Tensor> even =
        combine(n % 2 == 0 ? associative_scan_detail::slice_along(odd, axes, 0, length(odd) - 1, 1) : odd, tail);
    std::vector<Tensor> out;
    for (size_t i = 0; i < e.size(); ++i)
      out.push_back(associative_scan_detail::interleave(associative_scan_detail::prepend_first(e[i], even[i], axes[i]),
                                                        odd[i], axes[i]));
    return out;
  };
  std::vector<Tensor> result = scan(leaves);
  if (reverse)
    for (size_t i = 0; i < result.size(); ++i) result[i] = associative_scan_detail::reverse_along(result[i], axes[i]);
  return tree_unflatten(def, result);
}

}  // namespace fluxion
