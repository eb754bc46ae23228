// Catalogue: special values, the documented conventions and the ops issue 28 found missing (mirrors
// special() and gaps() in cat_misc.py).
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
  c.add("convention/take_out_of_range", [](const Args& a) {
    return fx::take(a[0], fx::from_vector(std::vector<int32_t>{5, -7, 1}, {3}));
  });

  c.add("gaps/relu", [](const Args& a) { return fx::relu(a[0]); });
  c.add("gaps/var", [](const Args& a) { return fx::var(a[0], {1}); });
  c.add("gaps/std", [](const Args& a) { return fx::std(a[0]); });
  c.add("gaps/any", [](const Args& a) { return fx::any(a[0] > 1.5, {0}); });
  c.add("gaps/all", [](const Args& a) { return fx::all(a[0] > -1.5, {1}); });
  c.add("gaps/isnan", [](const Args& a) { return fx::isnan(a[0]); });
  c.add("gaps/isfinite", [](const Args& a) { return fx::isfinite(a[0]); });
  c.add("gaps/isinf", [](const Args& a) { return fx::isinf(a[0]); });
  c.add("gaps/fmod", [](const Args& a) { return fx::fmod(a[0], a[1]); });
  c.add("gaps/remainder_scalar", [](const Args& a) { return fx::remainder(a[0], 0.75); });
  c.add("gaps/atan2_scalar", [](const Args& a) { return fx::atan2(a[0], 2.0); });
  c.add("gaps/jacfwd_argnums", [](const Args& a) {
    return fx::jacfwd([](const Tensor& u, const Tensor& w) { return fx::sin(u * w); }, fx::argnums<1>)(a[0], a[1]);
  });
  c.add("gaps/hessian_argnums", [](const Args& a) {
    auto f = [](const Tensor& u, const Tensor& w) { return fx::sum(fx::sin(u * w) * u); };
    return fx::hessian(f, fx::argnums<1>)(a[0], a[1]);
  });
  c.add("gaps/vmap_per_leaf_in_axes", [](const Args& a) {
    auto f = [](const std::tuple<Tensor, Tensor>& p) { return std::get<0>(p) * std::get<1>(p); };
    return fx::vmap(f, fx::in_axes(std::make_tuple(0, fx::none)))(std::make_tuple(a[0], a[1]));
  });
}

}  // namespace diff
