// Catalogue: special values and the documented conventions (mirrors special() in cat_misc.py; the
// todo/* entries there have no C++ side until their ops exist).
#include "control.hpp"

namespace diff {

void add_special(Catalogue& c) {
  c.add("special/sqrt_of_inf", [](const Args& a) { return fx::sqrt(a[0]); });
  c.add("special/sqrt_abs_fused", [](const Args& a) { return fx::sqrt(fx::abs(a[0] * -1.0)) + 1.0; });
  c.add("special/pow_negative_zero", [](const Args& a) { return fx::pow(a[0], -1.0); });
  c.add("special/round_half_even", [](const Args& a) { return fx::round(a[0]); });
  c.add("special/remainder_negative", [](const Args& a) { return fx::remainder(a[0], a[1]); });
  c.add("special/logsumexp_empty_axis", [](const Args& a) { return fx::logsumexp(a[0], {1}); });
  c.add("special/softmax_empty_axis", [](const Args& a) { return fx::softmax(a[0], 1); });
  c.add("special/sum_f32_million", [](const Args& a) { return fx::sum(a[0]); });
  c.add("special/mean_f32_columns", [](const Args& a) { return fx::mean(a[0], {0}); });
  c.add("special/exp_log_inf_nan", [](const Args& a) { return fx::exp(a[0]) + fx::log(fx::abs(a[0])); });

  c.add("convention/abs_grad_at_zero", [](const Args& a) { return fx::abs(a[0]); });
  c.add("convention/pow_grad_at_zero_to_zero", [](const Args& a) { return fx::pow(a[0], a[1]); });
  c.add("convention/norm_grad_at_zero", [](const Args& a) { return fx::norm(a[0]); });
  c.add("convention/logsumexp_grad_all_neg_inf", [](const Args& a) { return fx::logsumexp(a[0]); });
  c.add("convention/max_grad_with_ties", [](const Args& a) { return fx::max(a[0]); });
  c.add("convention/maximum_grad_at_tie", [](const Args& a) { return fx::maximum(a[0], a[1]); });
  c.add("convention/divide_i32", [](const Args& a) { return a[0] / a[1]; });
  c.add("convention/sin_i32", [](const Args& a) { return fx::sin(a[0]); });
  c.add("convention/take_out_of_range",
        [](const Args& a) { return fx::take(a[0], fx::from_vector(std::vector<int32_t>{5, -7, 1}, {3})); });
}

}  // namespace diff
