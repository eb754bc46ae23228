// Catalogue: transforms used inside catalogue functions, custom rules and checkpoint, and small
// models (mirrors transforms_inside(), custom_rules() and models() in cat_misc.py).
#include <tuple>

#include "control.hpp"

namespace diff {
namespace {

using Pair = std::pair<Tensor, Tensor>;

Tensor g3(const Tensor& v) { return fx::sum(fx::sin(v) * v * v); }

Tensor pendulum(const Tensor& s) {
  Tensor th = at(s, 0), om = at(s, 1);
  return fx::stack({om, -fx::sin(th) - 0.1 * om});
}

Tensor rk4_step(const Tensor& s, double h) {
  Tensor k1 = pendulum(s), k2 = pendulum(s + k1 * (h / 2)), k3 = pendulum(s + k2 * (h / 2)), k4 = pendulum(s + k3 * h);
  return s + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (h / 6);
}

Tensor layer_norm(const Tensor& x) {
  Tensor m = fx::mean(x, {-1}, true);
  Tensor v = fx::mean(fx::square(x - m), {-1}, true);
  return (x - m) / fx::sqrt(v + 1e-5);
}

void add_transforms_inside(Catalogue& c) {
  c.add("tr/grad", [](const Args& a) { return fx::grad(g3)(a[0]) * a[0]; });
  c.add("tr/value_and_grad", [](const Args& a) {
    auto r = fx::value_and_grad(g3)(a[0]);
    return r.first * r.second;
  });
  c.add("tr/grad_argnums", [](const Args& a) {
    auto f = [](const Tensor& u, const Tensor& w) { return fx::sum(fx::sin(u * w) * u); };
    auto r = fx::grad(f, fx::argnums<0, 1>)(a[0], a[1]);
    return std::get<0>(r) * 2.0 + std::get<1>(r);
  });
  c.add("tr/grad_has_aux", [](const Args& a) {
    auto r = fx::grad([](const Tensor& v) { return Pair{g3(v), fx::cos(v)}; }, fx::has_aux)(a[0]);
    return r.first + r.second;
  });
  c.add("tr/jvp", [](const Args& a) {
    auto r = fx::jvp(g3, std::make_tuple(a[0]), std::make_tuple(a[1]));
    return r.first + r.second * 2.0;
  });
  c.add("tr/vjp", [](const Args& a) {
    auto r = fx::vjp([](const Tensor& v) { return fx::sin(v) * v; }, a[0]);
    return std::get<0>(r.second(a[1]));
  });
  c.add("tr/linearize", [](const Args& a) {
    auto r = fx::linearize([](const Tensor& v) { return fx::exp(v) * v; }, a[0]);
    return r.second(a[1]) + r.first;
  });
  c.add("tr/vmap_in_axes_none", [](const Args& a) {
    return fx::vmap([](const Tensor& r, const Tensor& w) { return fx::sin(r * w); }, fx::in_axes(0, fx::none))(a[0],
                                                                                                               a[1]);
  });
  c.add("tr/vmap_out_axes_1", [](const Args& a) {
    return fx::vmap([](const Tensor& r) { return fx::cumsum(r) * r; }, {}, fx::out_axes(1))(a[0]);
  });
  c.add("tr/vmap_in_axes_1",
        [](const Args& a) { return fx::vmap([](const Tensor& r) { return fx::sum(r * r); }, fx::in_axes(1))(a[0]); });
  auto sin_times_sum = [](const Tensor& v) { return fx::sin(v) * fx::sum(v); };
  c.add("tr/jacfwd", [=](const Args& a) { return fx::jacfwd(sin_times_sum)(a[0]); });
  c.add("tr/jacrev", [=](const Args& a) { return fx::jacrev(sin_times_sum)(a[0]); });
  c.add("tr/jacobian",
        [](const Args& a) { return fx::jacobian([](const Tensor& v) { return fx::exp(v) * at(v, 0); })(a[0]); });
  c.add("tr/hessian", [](const Args& a) { return fx::hessian(g3)(a[0]); });
  c.add("tr/hvp", [](const Args& a) { return fx::hvp(g3, a[0], a[1]); });
  c.add("tr/jit",
        [](const Args& a) { return fx::jit([](const Tensor& v) { return fx::sin(v) * fx::cos(v); })(a[0]) * a[0]; });
  c.add("tr/jit_of_grad", [](const Args& a) { return fx::jit(fx::grad(g3))(a[0]); });
  c.add("tr/grad_of_grad_perturbation", [](const Args& a) {
    Tensor x = a[0];
    return x * fx::grad([x](const Tensor& y) { return fx::sum(x + y) * fx::sum(y); })(a[1]);
  });
  c.add("tr/stop_gradient_in_loss",
        [](const Args& a) { return fx::sum(fx::square(a[0] - fx::stop_gradient(fx::mean(a[0])))) * a[0]; });
}

void add_custom_rules(Catalogue& c) {
  static const auto mul2 = fx::custom_jvp([](const Tensor& u, const Tensor& w) { return u * w; },
                                          [](const std::tuple<Tensor, Tensor>& p, const std::tuple<Tensor, Tensor>& t) {
                                            auto [u, w] = p;
                                            auto [du, dw] = t;
                                            return Pair{u * w, du * w * 2.0 + u * dw};
                                          });
  static const auto scaled_exp =
      fx::custom_vjp([](const Tensor& v) { return fx::exp(v); },
                     [](const Tensor& v) {
                       return std::pair<Tensor, Pair>{fx::exp(v), Pair{fx::exp(v), v}};
                     },
                     [](const Pair& r, const Tensor& ct) { return r.first * ct + r.second * ct * 0.5; });
  static const auto safe_norm = fx::custom_jvp([](const Tensor& v) { return fx::sqrt(fx::sum(v * v)); },
                                               [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                                                 const Tensor& v = std::get<0>(p);
                                                 Tensor n = fx::sqrt(fx::sum(v * v));
                                                 return Pair{n, fx::sum(v * std::get<0>(t)) / fx::maximum(n, 1e-12)};
                                               });
  c.add("custom/jvp_two_arguments", [](const Args& a) { return mul2(a[0], fx::sin(a[1])); });
  c.add("custom/vjp_pytree_residuals", [](const Args& a) { return scaled_exp(a[0] * 0.5) * a[0]; });
  c.add("custom/jvp_safe_norm", [](const Args& a) { return safe_norm(a[0]) * a[0]; });
  c.add("custom/jvp_under_vmap_inside", [](const Args& a) { return fx::vmap(half_tanh)(a[0]) * 2.0; });
  c.add("custom/vjp_in_composition",
        [](const Args& a) { return fx::sum(sin2(fx::tanh(a[0])) * a[1]) * fx::cos(a[0]); });
  c.add("custom/checkpoint_chain", [](const Args& a) {
    auto inner = fx::checkpoint([](const Tensor& u) { return fx::sin(u) * u; });
    return fx::checkpoint([inner](const Tensor& v) { return inner(fx::exp(v) * 0.5) + v; })(a[0]);
  });
}

void add_models(Catalogue& c) {
  c.add("model/mlp_loss", [](const Args& a) {
    Tensor h = fx::tanh(fx::matmul(a[2], a[0]) + a[1]);
    return fx::mean(fx::square(fx::matmul(h, fx::astype(fx::ones({3}), a[0].dtype())) - 0.5));
  });
  c.add("model/logistic_regression", [](const Args& a) {
    Tensor z = fx::matmul(a[1], a[0]);
    return -fx::mean(fx::log(fx::sigmoid(z)) + fx::log1p(-fx::sigmoid(z * 0.5)));
  });
  c.add("model/softmax_cross_entropy", [](const Args& a) {
    Tensor labels = fx::astype(fx::slice(fx::eye(3), {0, 0}, {2, 3}), a[0].dtype());
    return -fx::sum(fx::log_softmax(fx::matmul(a[1], a[0]), 1) * labels);
  });
  c.add("model/gaussian_log_likelihood", [](const Args& a) {
    Tensor mu = at(a[0], 0), log_sigma = at(a[0], 1);
    return fx::sum(-0.5 * fx::square((a[1] - mu) / fx::exp(log_sigma)) - log_sigma);
  });
  c.add("model/attention", [](const Args& a) {
    return fx::matmul(fx::softmax(fx::matmul(a[0], fx::transpose(a[1])) / std::sqrt(3.0), -1), a[1]);
  });
  c.add("model/layer_norm", [](const Args& a) { return layer_norm(a[0]); });
  c.add("model/rk4_pendulum_step", [](const Args& a) { return rk4_step(a[0], 0.1); });
  c.add("model/polynomial_horner", [](const Args& a) {
    Tensor x = a[0], coef = a[1];
    return fx::fori_loop(
        0, 4, [x, coef](const Tensor& i, const Tensor& acc) { return acc * x + fx::take(coef, i); }, fx::zeros_like(x));
  });
  c.add("model/logsumexp_mixture", [](const Args& a) {
    Tensor d = fx::expand_dims(a[0], 1) - fx::expand_dims(a[1], 0);
    return fx::logsumexp(-0.5 * fx::square(d), {1});
  });
}

}  // namespace

void add_transforms(Catalogue& c) {
  add_transforms_inside(c);
  add_custom_rules(c);
  add_models(c);
}

}  // namespace diff
