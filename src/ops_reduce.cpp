// The numpy-style op layer, reductions: sum mean prod max min any all var std argmax argmin cumsum
// logsumexp softmax log_softmax norm. Axes may be negative; an empty axis list means every axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fluxion/custom_rules.hpp"
#include "fluxion/ops.hpp"

namespace fluxion {
namespace ops_reduce_detail {

using LaxReduce = Tensor (*)(const Tensor&, const std::vector<int64_t>&);

/// Sorted non-negative axes, every axis when `axes` is empty.
std::vector<int64_t> reduction_axes(const char* op, const std::vector<int64_t>& axes, int64_t rank) {
  if (!axes.empty()) return fluxion::normalize_axes(op, axes, rank);
  std::vector<int64_t> all;
  for (int64_t i = 0; i < rank; ++i) all.push_back(i);
  return all;
}

/// `f` over `axes` (normalised), with the reduced axes kept as size 1 when `keepdims`.
Tensor reduce(const char* op, LaxReduce f, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<int64_t> ax = reduction_axes(op, axes, x.ndim());
  if (ax.empty()) return x;
  Tensor r = f(x, ax);
  return keepdims ? lax::expand_dims(r, ax) : r;
}

/// max and min take no bool (use any/all-style logic instead).
void check_not_bool(const char* op, const Tensor& x) {
  if (x.dtype() == boolean)
    detail::fail<DTypeError>(op, "does not take bool tensors, got ", x.aval(),
                             ". Convert with fx::astype(x, fx::i32) first.");
}

/// max/min/argmax/argmin have no identity: reject reductions over an empty axis.
void check_nonempty(const char* op, const Tensor& x, const std::vector<int64_t>& ax) {
  for (int64_t a : ax)
    if (x.shape()[a] == 0)
      detail::fail<ShapeError>(op, "axis ", a, " of ", x.aval(), " is empty and ", op,
                               " has no identity. Reduce a non-empty axis.");
}

/// Sums reduce bool as i32 (the count of true values).
Tensor counting(const Tensor& x) { return x.dtype() == boolean ? astype(x, i32) : x; }
Tensor to_inexact(const Tensor& x) { return is_floating(x.dtype()) ? x : astype(x, f64); }

/// The max of `v` over `ax` as a constant shift for exp: non-finite values (an all -inf slice,
/// inf, nan, and the -inf of an empty axis) are replaced by 0. lax's reduce_max is used because it
/// has an identity (-inf) for empty axes, where fx::max refuses them.
Tensor finite_shift(const Tensor& v, const std::vector<int64_t>& ax) {
  Tensor m = lax::reduce_max(v, ax);
  return stop_gradient(where(isfinite(m), m, 0.0));
}

/// `r`, reduced over the sorted axes `ax`, broadcast back to `shape` (no expand_dims needed).
Tensor unreduce(const Tensor& r, const Shape& shape, const std::vector<int64_t>& ax) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < shape.size(); ++d)
    if (!std::binary_search(ax.begin(), ax.end(), d)) kept.push_back(d);
  return r.shape() == shape ? r : lax::broadcast_in_dim(r, shape, kept);
}

Tensor arg_reduce(const char* op, Tensor (*f)(const Tensor&, int64_t, DType), const Tensor& x, int64_t axis,
                  bool keepdims) {
  int64_t a = normalize_axis(op, axis, x.ndim());
  check_nonempty(op, x, {a});
  Tensor r = f(counting(x), a, i32);  // bool masks: the index of the first true (or false)
  return keepdims ? lax::expand_dims(r, {a}) : r;
}

// Two passes (the mean first), like numpy: no cancellation of E[x^2] - E[x]^2.
Tensor variance(const char* op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, int64_t ddof) {
  Tensor xf = to_inexact(x);
  std::vector<int64_t> ax = reduction_axes(op, axes, x.ndim());
  int64_t count = 1;
  for (int64_t a : ax) count *= x.shape()[a];
  Tensor centred = xf - unreduce(mean(xf, ax), xf.shape(), ax);
  Tensor squares = sum(centred * centred, ax, keepdims);
  return squares / static_cast<double>(std::max<int64_t>(count - ddof, 0));
}

}  // namespace ops_reduce_detail

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return ops_reduce_detail::reduce("sum", &lax::reduce_sum, ops_reduce_detail::counting(x), axes, keepdims);
}

Tensor prod(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return ops_reduce_detail::reduce("prod", &lax::reduce_prod, ops_reduce_detail::counting(x), axes, keepdims);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  int64_t count = 1;
  for (int64_t a : ops_reduce_detail::reduction_axes("mean", axes, x.ndim())) count *= x.shape()[a];
  Tensor s = sum(ops_reduce_detail::to_inexact(x), axes, keepdims);
  return s / static_cast<double>(count);
}

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  ops_reduce_detail::check_not_bool("max", x);
  ops_reduce_detail::check_nonempty("max", x, ops_reduce_detail::reduction_axes("max", axes, x.ndim()));
  return ops_reduce_detail::reduce("max", &lax::reduce_max, x, axes, keepdims);
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  ops_reduce_detail::check_not_bool("min", x);
  ops_reduce_detail::check_nonempty("min", x, ops_reduce_detail::reduction_axes("min", axes, x.ndim()));
  return ops_reduce_detail::reduce("min", &lax::reduce_min, x, axes, keepdims);
}

// Via the max (min) of the elements as i32 flags: its identity over an empty axis, the lowest
// (largest) integer, gives any = false and all = true, and a max cannot overflow like a count.
Tensor any(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  Tensor flags = astype(astype(x, boolean), i32);
  return ops_reduce_detail::reduce("any", &lax::reduce_max, flags, axes, keepdims) > 0;
}

Tensor all(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  Tensor flags = astype(astype(x, boolean), i32);
  return ops_reduce_detail::reduce("all", &lax::reduce_min, flags, axes, keepdims) > 0;
}

Tensor var(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, int64_t ddof) {
  return ops_reduce_detail::variance("var", x, axes, keepdims, ddof);
}

Tensor std(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, int64_t ddof) {
  return sqrt(ops_reduce_detail::variance("std", x, axes, keepdims, ddof));
}

Tensor argmax(const Tensor& x) { return argmax(ravel(x), 0); }
Tensor argmin(const Tensor& x) { return argmin(ravel(x), 0); }
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims) {
  return ops_reduce_detail::arg_reduce("argmax", &lax::argmax, x, axis, keepdims);
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims) {
  return ops_reduce_detail::arg_reduce("argmin", &lax::argmin, x, axis, keepdims);
}

Tensor cumsum(const Tensor& x, int64_t axis) {
  int64_t a = normalize_axis("cumsum", axis, x.ndim());
  return lax::cumsum(ops_reduce_detail::counting(x), a);
}

// The rule's tangent is softmax(x)·dx: a slice of only -inf gets weights 0 (not NaN), and
// second derivatives differentiate the softmax instead of the shifted log-sum.
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  Tensor xf = ops_reduce_detail::to_inexact(x);
  std::vector<int64_t> ax = ops_reduce_detail::reduction_axes("logsumexp", axes, x.ndim());
  auto plain = [ax](const Tensor& v) {
    // Shifting by the (constant) max keeps exp from overflowing; an all -inf slice gives -inf.
    Tensor m = ops_reduce_detail::finite_shift(v, ax);
    return log(sum(exp(v - ops_reduce_detail::unreduce(m, v.shape(), ax)), ax)) + m;
  };
  auto f = custom_jvp(plain, [ax, plain](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
    const Tensor& v = std::get<0>(p);
    Tensor out = plain(v);
    Tensor finite = where(abs(out) < std::numeric_limits<double>::infinity(), out, 0.0);
    Tensor weights = exp(v - ops_reduce_detail::unreduce(finite, v.shape(), ax));
    return std::pair<Tensor, Tensor>{out, sum(weights * std::get<0>(t), ax)};
  });
  Tensor out = f(xf);
  return keepdims && !ax.empty() ? lax::expand_dims(out, ax) : out;
}

Tensor softmax(const Tensor& x, int64_t axis) {
  Tensor xf = ops_reduce_detail::to_inexact(x);
  std::vector<int64_t> a{normalize_axis("softmax", axis, x.ndim())};
  Tensor m = ops_reduce_detail::finite_shift(xf, a);
  Tensor e = exp(xf - ops_reduce_detail::unreduce(m, xf.shape(), a));
  return e / ops_reduce_detail::unreduce(sum(e, a), xf.shape(), a);
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  Tensor xf = ops_reduce_detail::to_inexact(x);
  std::vector<int64_t> a{normalize_axis("log_softmax", axis, x.ndim())};
  Tensor m = ops_reduce_detail::finite_shift(xf, a);
  Tensor shifted = xf - ops_reduce_detail::unreduce(m, xf.shape(), a);
  return shifted - ops_reduce_detail::unreduce(log(sum(exp(shifted), a)), xf.shape(), a);
}

// At x = 0 the derivative x/|x| is 0/0; the rule uses the subgradient 0 there (first order). The
// denominator's sqrt reads 1 where the sum of squares is 0, so that the rule's own derivative (second
// order) is finite there too, in forward and reverse mode alike (sqrt'(0) is infinite, and inf * 0
// would be NaN whichever branch the select keeps).
Tensor norm(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  Tensor xf = ops_reduce_detail::to_inexact(x);
  std::vector<int64_t> ax = ops_reduce_detail::reduction_axes("norm", axes, x.ndim());
  auto plain = [ax](const Tensor& v) { return sqrt(sum(v * v, ax)); };
  auto f = custom_jvp(plain, [ax](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
    const Tensor& v = std::get<0>(p);
    Tensor squares = sum(v * v, ax);
    Tensor zero = squares == 0.0;
    Tensor denominator = sqrt(where(zero, 1.0, squares));
    return std::pair<Tensor, Tensor>{sqrt(squares), sum(v * std::get<0>(t), ax) / denominator};
  });
  Tensor out = f(xf);
  return keepdims && !ax.empty() ? lax::expand_dims(out, ax) : out;
}

}  // namespace fluxion
