// Catalogue: comparisons, logic, where, clip and reductions (mirrors compare() and reductions() in
// cat_ops.py).
#include "harness.hpp"

namespace diff {
namespace {
Tensor as_f(const Tensor& x) { return fx::astype(x, fx::f64); }
}  // namespace

void add_compare_reduce(Catalogue& c) {
  c.add("compare/lt", [](const Args& a) { return as_f(a[0]) < as_f(a[1]); });
  c.add("compare/le", [](const Args& a) { return as_f(a[0]) <= as_f(a[1]); });
  c.add("compare/gt", [](const Args& a) { return as_f(a[0]) > as_f(a[1]); });
  c.add("compare/ge", [](const Args& a) { return as_f(a[0]) >= as_f(a[1]); });
  c.add("compare/eq", [](const Args& a) { return as_f(a[0]) == as_f(a[1]); });
  c.add("compare/ne", [](const Args& a) { return as_f(a[0]) != as_f(a[1]); });
  c.add("compare/scalar_right", [](const Args& a) { return (a[0] < 0.5) || (a[0] >= 1.0); });
  c.add("compare/scalar_left", [](const Args& a) { return (0.5 <= a[0]) || (-1.0 > a[0]); });
  c.add("compare/int_tensors", [](const Args& a) { return (a[0] == a[1]) || (a[0] > 1); });
  c.add("logic/and_or_not",
        [](const Args& a) { return fx::logical_or(fx::logical_and(a[0], a[1]), fx::logical_not(a[0])); });
  c.add("logic/operators", [](const Args& a) { return (a[0] && !a[1]) || (a[1] && !a[0]); });
  c.add("where/tensors", [](const Args& a) { return fx::where(a[0] > 0, fx::sin(a[1]), fx::cos(a[1]) * a[0]); });
  c.add("where/scalar_true", [](const Args& a) { return fx::where(a[0] > 0, 2.0, a[0] * a[0]); });
  c.add("where/scalar_false", [](const Args& a) { return fx::where(a[0] > 0, a[0] * 3.0, -1.0); });
  c.add("where/scalars", [](const Args& a) { return fx::where(a[0] > 0, 1.0, -1.0) * a[0]; });
  c.add("where/broadcast_condition", [](const Args& a) { return fx::where(a[1] > 0, a[0], -a[0]); });
  c.add("clip/scalars", [](const Args& a) { return fx::clip(a[0], -0.5, 0.7); });
  c.add("clip/tensors", [](const Args& a) { return fx::clip(a[0], a[1], a[1] + 1.0); });

  c.add("reduce/sum_all", [](const Args& a) { return fx::sum(a[0]); });
  c.add("reduce/sum_axis0", [](const Args& a) { return fx::sum(a[0], {0}); });
  c.add("reduce/sum_negative_axis_keepdims", [](const Args& a) { return fx::sum(a[0], {-1}, true); });
  c.add("reduce/sum_axes_0_2", [](const Args& a) { return fx::sum(a[0], {0, 2}); });
  c.add("reduce/mean_all", [](const Args& a) { return fx::mean(a[0]); });
  c.add("reduce/mean_axis1_keepdims", [](const Args& a) { return fx::mean(a[0], {1}, true); });
  c.add("reduce/prod_all", [](const Args& a) { return fx::prod(a[0]); });
  c.add("reduce/prod_axis0", [](const Args& a) { return fx::prod(a[0], {0}); });
  c.add("reduce/max_all", [](const Args& a) { return fx::max(a[0]); });
  c.add("reduce/max_axis1_keepdims", [](const Args& a) { return fx::max(a[0], {1}, true); });
  c.add("reduce/min_all", [](const Args& a) { return fx::min(a[0]); });
  c.add("reduce/min_axes_0_1", [](const Args& a) { return fx::min(a[0], {0, 1}); });
  c.add("reduce/argmax_flat", [](const Args& a) { return fx::argmax(a[0]); });
  c.add("reduce/argmax_axis1", [](const Args& a) { return fx::argmax(a[0], 1); });
  c.add("reduce/argmin_flat", [](const Args& a) { return fx::argmin(a[0]); });
  c.add("reduce/argmin_axis0_keepdims", [](const Args& a) { return fx::argmin(a[0], 0, true); });
  c.add("reduce/cumsum_axis0", [](const Args& a) { return fx::cumsum(a[0], 0); });
  c.add("reduce/cumsum_axis1", [](const Args& a) { return fx::cumsum(a[0], 1) * a[0]; });
  c.add("reduce/logsumexp_all", [](const Args& a) { return fx::logsumexp(a[0] * 3.0); });
  c.add("reduce/logsumexp_axis1_keepdims", [](const Args& a) { return fx::logsumexp(a[0] * 3.0, {1}, true); });
  c.add("reduce/logsumexp_axes_0_2", [](const Args& a) { return fx::logsumexp(a[0], {0, 2}); });
  c.add("reduce/softmax_last", [](const Args& a) { return fx::softmax(a[0] * 2.0); });
  c.add("reduce/softmax_axis0", [](const Args& a) { return fx::softmax(a[0], 0); });
  c.add("reduce/log_softmax_last", [](const Args& a) { return fx::log_softmax(a[0] * 2.0); });
  c.add("reduce/log_softmax_axis0", [](const Args& a) { return fx::log_softmax(a[0], 0); });
  c.add("reduce/norm_all", [](const Args& a) { return fx::norm(a[0]); });
  c.add("reduce/norm_axis1", [](const Args& a) { return fx::norm(a[0], {1}); });
  c.add("reduce/norm_axis0_keepdims", [](const Args& a) { return fx::norm(a[0], {0}, true); });
}

}  // namespace diff
