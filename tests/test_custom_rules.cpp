// custom_jvp and custom_vjp in use: the user rule replaces the body's derivative under every
// transform, batched rules run once per batch (no per-example fallback), jit stages one equation,
// and bad rules give clear errors.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>

#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fx::Tensor;
using fx::testing::compare_tensors;

namespace {

// A rule that differs from the body's true derivative (2·cos instead of cos), so a test can tell
// which one a transform used; it counts its calls.
std::atomic<int> rule_calls{0};
auto doubled_sin() {
  return fx::custom_jvp([](const Tensor& x) { return fx::sin(x); },
                        [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                          ++rule_calls;
                          const Tensor& x = std::get<0>(p);
                          return std::pair<Tensor, Tensor>{fx::sin(x), fx::cos(x) * 2.0 * std::get<0>(t)};
                        });
}

// Gradient clipping: the identity whose vjp clips the cotangent to [-1, 1].
std::atomic<int> bwd_calls{0};
auto clip_gradient() {
  return fx::custom_vjp([](const Tensor& x) { return x; },
                        [](const Tensor& x) {
                          return std::pair<Tensor, std::tuple<>>{x, {}};
                        },
                        [](const std::tuple<>&, const Tensor& ct) {
                          ++bwd_calls;
                          return fx::clip(ct, -1.0, 1.0);
                        });
}

// x³ with its true vjp from a saved residual (x²).
auto cube() {
  return fx::custom_vjp([](const Tensor& x) { return x * x * x; },
                        [](const Tensor& x) {
                          return std::pair<Tensor, Tensor>{x * x * x, x * x};
                        },
                        [](const Tensor& x2, const Tensor& ct) { return ct * x2 * 3.0; });
}

/// The diagonal matrix with `v` (rank 1) on its diagonal.
Tensor diagonal(const Tensor& v) { return fx::eye(v.shape()[0], v.dtype()) * v; }

}  // namespace

TEST_CASE("custom_jvp: the rule is used by jvp, grad, vjp, jacfwd, jacrev and under jit") {
  auto f = doubled_sin();
  Tensor x = fx::tensor<double>({0.1, 0.7, -1.3});
  Tensor want = fx::cos(x) * 2.0;
  // Eager: a plain call (no rule).
  CHECK(compare_tensors(f(x), fx::sin(x)).empty());
  CHECK(compare_tensors(fx::jvp(f, x, fx::ones_like(x)).second, want).empty());
  auto loss = [f](const Tensor& v) { return fx::sum(f(v)); };
  CHECK(compare_tensors(fx::grad(loss)(x), want).empty());
  CHECK(compare_tensors(fx::grad(fx::jit(loss))(x), want).empty());
  CHECK(compare_tensors(fx::jit(fx::grad(loss))(x), want).empty());
  CHECK(compare_tensors(fx::jacrev(f)(x), diagonal(want)).empty());
  CHECK(compare_tensors(fx::jacfwd(f)(x), diagonal(want)).empty());
  // Second order differentiates the rule: d/dx (2 cos x) = -2 sin x.
  CHECK(compare_tensors(fx::grad([&](const Tensor& v) { return fx::sum(fx::grad(loss)(v)); })(x), fx::sin(x) * -2.0)
            .empty());
  // The staged function is one custom_jvp_call equation.
  fx::Jaxpr staged = fx::make_jaxpr(f)(x);
  REQUIRE(staged.equations.size() == 1);  // the body lives in the params' sub-Jaxpr
  CHECK(staged.equations[0].primitive == &fx::custom_jvp_call_p());
}

TEST_CASE("custom_jvp: vmap batches the rule (called once per batch, not per example)") {
  auto f = doubled_sin();
  auto loss = [f](const Tensor& v) { return fx::sum(f(v)); };
  Tensor xs = fx::testing::random_tensor({5, 3}, fx::f64, 7);
  rule_calls = 0;
  Tensor g = fx::vmap(fx::grad(loss))(xs);
  CHECK(rule_calls == 1);
  CHECK(compare_tensors(g, fx::cos(xs) * 2.0).empty());
  // grad of a vmapped function: the batched custom_jvp_call's rule is the batched user rule.
  rule_calls = 0;
  Tensor g2 = fx::grad([&](const Tensor& v) { return fx::sum(fx::vmap(f)(v)); })(xs);
  CHECK(rule_calls == 1);
  CHECK(compare_tensors(g2, fx::cos(xs) * 2.0).empty());
}

TEST_CASE("custom_vjp: bwd is used by grad, vjp, jacrev, under vmap and jit; forward mode transposes bwd") {
  auto clip = clip_gradient();
  Tensor x = fx::tensor<double>({1.0, 2.0, 3.0});
  auto loss = [clip](const Tensor& v) { return fx::sum(clip(v) * 5.0); };
  // The true gradient is 5; the clipped one is 1.
  CHECK(compare_tensors(fx::grad(loss)(x), fx::ones({3}, fx::f64)).empty());
  CHECK(compare_tensors(fx::grad(fx::jit(loss))(x), fx::ones({3}, fx::f64)).empty());
  CHECK(compare_tensors(fx::jit(fx::grad(loss))(x), fx::ones({3}, fx::f64)).empty());
  Tensor xs = fx::testing::random_tensor({4, 3}, fx::f64, 3);
  bwd_calls = 0;
  CHECK(compare_tensors(fx::vmap(fx::grad(loss))(xs), fx::ones({4, 3}, fx::f64)).empty());
  CHECK(bwd_calls == 1);
  CHECK(compare_tensors(fx::grad([&](const Tensor& v) { return fx::sum(fx::vmap(loss)(v)); })(xs),
                        fx::ones({4, 3}, fx::f64))
            .empty());

  auto c = cube();
  Tensor y = fx::tensor<double>({0.5, -1.0, 2.0});
  Tensor d1 = y * y * 3.0;
  auto closs = [c](const Tensor& v) { return fx::sum(c(v)); };
  CHECK(compare_tensors(fx::grad(closs)(y), d1).empty());
  // Forward mode: the tangent map is bwd transposed.
  CHECK(compare_tensors(fx::jvp(c, y, fx::ones_like(y)).second, d1).empty());
  CHECK(compare_tensors(fx::jacfwd(c)(y), diagonal(d1)).empty());
  CHECK(compare_tensors(fx::jacrev(c)(y), diagonal(d1)).empty());
  // Second order through bwd (d/dx 3x² = 6x), forward-over-reverse and reverse-over-reverse.
  CHECK(compare_tensors(fx::hessian(closs)(y), diagonal(y * 6.0)).empty());
  CHECK(compare_tensors(fx::grad([&](const Tensor& v) { return fx::sum(fx::grad(closs)(v)); })(y), y * 6.0).empty());
  CHECK(compare_tensors(fx::vmap(fx::grad(closs))(fx::reshape(y, {3, 1})), fx::reshape(d1, {3, 1})).empty());
}

TEST_CASE("custom_vjp: pytree residuals and several arguments; argument unbatched under vmap") {
  auto m = fx::custom_vjp([](const Tensor& w, const Tensor& x) { return fx::matmul(w, x); },
                          [](const Tensor& w, const Tensor& x) {
                            return std::pair<Tensor, std::tuple<Tensor, Tensor>>{fx::matmul(w, x), {w, x}};
                          },
                          [](const std::tuple<Tensor, Tensor>& res, const Tensor& ct) {
                            const auto& [w, x] = res;
                            return std::make_tuple(fx::matmul(ct, fx::transpose(x)), fx::matmul(fx::transpose(w), ct));
                          });
  Tensor w = fx::testing::random_tensor({3, 4}, fx::f64, 1), x = fx::testing::random_tensor({4, 2}, fx::f64, 2);
  auto loss = [m](const Tensor& a, const Tensor& b) { return fx::sum(fx::tanh(m(a, b))); };
  auto plain = [](const Tensor& a, const Tensor& b) { return fx::sum(fx::tanh(fx::matmul(a, b))); };
  auto [gw, gx] = fx::grad(loss, fx::argnums<0, 1>)(w, x);
  auto [pw, px] = fx::grad(plain, fx::argnums<0, 1>)(w, x);
  CHECK(compare_tensors(gw, pw).empty());
  CHECK(compare_tensors(gx, px).empty());
  // Per-example gradients in w with x batched: w's cotangent summed per example, not over the batch.
  Tensor xs = fx::testing::random_tensor({5, 4, 2}, fx::f64, 3);
  auto per_example = fx::vmap(fx::grad(loss), fx::in_axes(fx::none, 0));
  auto per_example_plain = fx::vmap(fx::grad(plain), fx::in_axes(fx::none, 0));
  CHECK(compare_tensors(per_example(w, xs), per_example_plain(w, xs)).empty());
  // Gradient of a batched sum in the unbatched w: bwd's batched cotangents are summed.
  auto batched_loss = [&](const Tensor& a) { return fx::sum(fx::vmap(m, fx::in_axes(fx::none, 0))(a, xs)); };
  auto batched_plain = [&](const Tensor& a) {
    return fx::sum(
        fx::vmap([](const Tensor& p, const Tensor& q) { return fx::matmul(p, q); }, fx::in_axes(fx::none, 0))(a, xs));
  };
  CHECK(compare_tensors(fx::grad(batched_loss)(w), fx::grad(batched_plain)(w)).empty());
}

TEST_CASE("custom rules: bad rules and closures give clear errors; tracing failures leave no state") {
  auto wrong = fx::custom_vjp([](const Tensor& x) { return fx::sin(x); },
                              [](const Tensor& x) {
                                return std::pair<Tensor, Tensor>{fx::sin(x), x};
                              },
                              [](const Tensor&, const Tensor&) { return fx::zeros({2}, fx::f64); });
  std::string msg = fx::testing::message_of<fx::ShapeError>(
      [&] { fx::grad([&](const Tensor& v) { return fx::sum(wrong(v)); })(fx::ones({3}, fx::f64)); });
  CHECK(msg.find("[custom_vjp] bwd returned (f64[2]) but (f64[3]) was expected") == 0);
  // A body that throws while being traced: the next transform works normally.
  auto throwing = fx::custom_jvp(
      [](const Tensor& x) -> Tensor {
        if (x.ndim() == 1) throw fx::Error("[user] boom");
        return x;
      },
      [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
        return std::pair<Tensor, Tensor>{std::get<0>(p), std::get<0>(t)};
      });
  CHECK_THROWS_AS(fx::grad([&](const Tensor& v) { return fx::sum(throwing(v)); })(fx::ones({3}, fx::f64)), fx::Error);
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
  CHECK(fx::grad([&](const Tensor& v) { return throwing(v) * 2.0; })(fx::scalar<double>(1.0)).item<double>() == 2.0);
}

namespace {

// x² = θ elementwise, solved by Newton in a while_loop without max_steps: reverse mode through
// that loop is refused, so a gradient proves the derivative is implicit.
Tensor sqrt_residual(const Tensor& x, const Tensor& th) { return x * x - th; }
Tensor newton_sqrt(const Tensor& x0, const Tensor& th) {
  auto cond = [th](const Tensor& x) { return fx::max(fx::abs(sqrt_residual(x, th))) > 1e-13; };
  auto body = [th](const Tensor& x) { return x - sqrt_residual(x, th) / (x * 2.0); };
  return fx::while_loop(cond, body, x0);
}

// A x + 0.1 x³ = b with θ = (A, b): a small nonlinear system, Newton with a Jacobian and a solve.
using System = std::tuple<Tensor, Tensor>;
Tensor system_residual(const Tensor& x, const System& th) {
  return fx::matmul(std::get<0>(th), x) + x * x * x * 0.1 - std::get<1>(th);
}
Tensor newton_system(const Tensor& x0, const System& th) {
  auto r = [th](const Tensor& x) { return system_residual(x, th); };
  auto cond = [r](const Tensor& x) { return fx::max(fx::abs(r(x))) > 1e-12; };
  auto body = [r](const Tensor& x) { return x - fx::solve(fx::jacfwd(r)(x), r(x)); };
  return fx::while_loop(cond, body, x0);
}

}  // namespace

TEST_CASE("custom_root: Newton solves differentiated implicitly match analytic derivatives") {
  Tensor th = fx::tensor<double>({2.0, 9.0, 0.25});
  auto root = [](const Tensor& t) { return fx::custom_root(&sqrt_residual, &newton_sqrt, fx::ones_like(t), t); };
  CHECK(compare_tensors(root(th), fx::sqrt(th)).empty());
  Tensor d1 = 0.5 / fx::sqrt(th);
  auto total = [root](const Tensor& t) { return fx::sum(root(t)); };
  CHECK(compare_tensors(fx::grad(total)(th), d1).empty());
  CHECK(compare_tensors(fx::jacrev(root)(th), diagonal(d1)).empty());
  CHECK(compare_tensors(fx::jacfwd(root)(th), diagonal(d1)).empty());
  CHECK(compare_tensors(fx::jit(fx::grad(total))(th), d1).empty());
  CHECK(compare_tensors(fx::vmap(fx::grad(total))(fx::reshape(th, {3, 1})), fx::reshape(d1, {3, 1})).empty());
  // Second order: d²/dθ² sqrt θ = -θ^(-3/2) / 4.
  CHECK(compare_tensors(fx::hessian(total)(th), diagonal(fx::pow(th, -1.5) * -0.25)).empty());

  // The nonlinear system: gradients in A and b against central differences.
  Tensor a = fx::eye(3, fx::f64) * 2.0 + fx::testing::random_tensor({3, 3}, fx::f64, 5, -0.3, 0.3);
  Tensor b = fx::tensor<double>({1.0, -0.5, 0.3});
  Tensor w = fx::tensor<double>({0.7, -1.1, 0.4});
  auto loss = [w](const Tensor& am, const Tensor& bv) {
    return fx::sum(fx::custom_root(&system_residual, &newton_system, fx::zeros({3}, fx::f64), System{am, bv}) * w);
  };
  auto [ga, gb] = fx::grad(loss, fx::argnums<0, 1>)(a, b);
  std::vector<double> gbv = gb.to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    std::vector<double> e(3, 0.0);
    e[static_cast<size_t>(i)] = 1e-6;
    Tensor d = fx::tensor<double>({e[0], e[1], e[2]});
    double fd = (loss(a, b + d).item<double>() - loss(a, b - d).item<double>()) / 2e-6;
    CHECK(std::fabs(gbv[static_cast<size_t>(i)] - fd) <= 1e-7 + 1e-6 * std::fabs(fd));
  }
  Tensor da = fx::testing::random_tensor({3, 3}, fx::f64, 9);
  double fd_a = (loss(a + da * 1e-6, b).item<double>() - loss(a - da * 1e-6, b).item<double>()) / 2e-6;
  CHECK(std::fabs(fx::sum(ga * da).item<double>() - fd_a) <= 1e-7 + 1e-6 * std::fabs(fd_a));
}

TEST_CASE("custom_root: a residual whose shape differs from x gives a ShapeError naming custom_root") {
  auto bad = [](const Tensor& x, const Tensor& th) { return fx::sum(x * x - th); };
  auto solver = [](const Tensor&, const Tensor& th) { return fx::sqrt(th); };
  Tensor th = fx::tensor({4.0, 9.0});
  auto root = [&](const Tensor& t) { return fx::sum(fx::custom_root(bad, solver, fx::ones_like(t), t)); };
  CHECK_THROWS_WITH_AS(fx::grad(root)(th), doctest::Contains("[custom_root]"), fx::ShapeError);
}

TEST_CASE("library rules: softplus, logsumexp and norm have finite derivatives where the formula is 0/0") {
  Tensor zero = fx::zeros({3}, fx::f64);
  // softplus'(0) = sigmoid(0) = 1/2 (the stable formula has kinks of max and abs there).
  CHECK(compare_tensors(fx::grad([](const Tensor& v) { return fx::sum(fx::softplus(v)); })(zero),
                        fx::full({3}, 0.5, fx::f64))
            .empty());
  Tensor big = fx::tensor<double>({-800.0, 0.0, 800.0});
  CHECK(compare_tensors(fx::softplus(big), fx::tensor<double>({0.0, std::log(2.0), 800.0})).empty());
  CHECK(compare_tensors(fx::grad([](const Tensor& v) { return fx::sum(fx::softplus(v)); })(big),
                        fx::tensor<double>({0.0, 0.5, 1.0}))
            .empty());
  // |x| at 0: the subgradient 0 instead of NaN; elsewhere x/|x|.
  CHECK(compare_tensors(fx::grad([](const Tensor& v) { return fx::norm(v); })(zero), zero).empty());
  Tensor v = fx::tensor<double>({3.0, 4.0});
  CHECK(compare_tensors(fx::grad([](const Tensor& u) { return fx::norm(u); })(v), v / 5.0).empty());
  // logsumexp: softmax weights; a slice of only -inf gives 0 instead of NaN; Hessian of the rule.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor m = fx::tensor<double>({{-inf, -inf}, {1000.0, 1000.0}});
  Tensor g = fx::grad([](const Tensor& u) { return fx::sum(fx::logsumexp(u, {1})); })(m);
  CHECK(compare_tensors(g, fx::tensor<double>({{0.0, 0.0}, {0.5, 0.5}})).empty());
  Tensor x = fx::tensor<double>({0.3, -1.2, 2.0});
  Tensor s = fx::softmax(x);
  Tensor h = fx::hessian([](const Tensor& u) { return fx::logsumexp(u); })(x);
  CHECK(compare_tensors(h, diagonal(s) - fx::outer(s, s)).empty());
}

namespace {

// Residuals of a Hana struct with a static member: bwd checks the static value came through.
struct SinResiduals {
  Tensor cos_x;
  Tensor x;
  int tag;
};

}  // namespace
BOOST_HANA_ADAPT_STRUCT(SinResiduals, cos_x, x, tag);

namespace {

/// sin with a custom vjp whose residuals are `save(x)` (any pytree, its type deduced from fwd's
/// `std::pair{out, residuals}`) and whose bwd reads cos x back with `cos_of(residuals)`.
template <class Save, class CosOf> auto sin_saving(Save save, CosOf cos_of) {
  return fx::custom_vjp([](const Tensor& x) { return fx::sin(x); },
                        [save](const Tensor& x) {
                          return std::pair{fx::sin(x), save(x)};
                        },
                        [cos_of](const auto& residuals, const Tensor& ct) { return ct * cos_of(residuals); });
}

/// grad, jit(grad) and vmap(grad) of sum(f(x)) are cos x.
template <class F> void check_sin_gradients(const F& f) {
  auto loss = [f](const Tensor& v) { return fx::sum(f(v)); };
  Tensor x = fx::tensor<double>({0.3, -1.1, 2.0});
  CHECK(compare_tensors(fx::grad(loss)(x), fx::cos(x)).empty());
  CHECK(compare_tensors(fx::jit(fx::grad(loss))(x), fx::cos(x)).empty());
  Tensor xs = fx::testing::random_tensor({4, 3}, fx::f64, 11);
  CHECK(compare_tensors(fx::vmap(fx::grad(loss))(xs), fx::cos(xs)).empty());
}

/// 1 when the static value came through to bwd, 0 otherwise (a wrong gradient shows it).
double kept(int tag, int want) { return tag == want ? 1.0 : 0.0; }

}  // namespace

TEST_CASE("custom_vjp: fwd's residuals are any pytree, deduced from std::pair{out, residuals}") {
  SUBCASE("a Tensor") {
    check_sin_gradients(sin_saving([](const Tensor& x) { return fx::cos(x); }, [](const Tensor& c) { return c; }));
  }
  SUBCASE("a tuple and a pair with a static int") {
    check_sin_gradients(sin_saving(
        [](const Tensor& x) {
          return std::tuple{x, fx::cos(x)};
        },
        [](const std::tuple<Tensor, Tensor>& r) { return std::get<1>(r); }));
    check_sin_gradients(sin_saving(
        [](const Tensor& x) {
          return std::pair{fx::cos(x), 3};
        },
        [](const std::pair<Tensor, int>& r) { return r.first * kept(r.second, 3); }));
  }
  SUBCASE("a vector and a map") {
    check_sin_gradients(sin_saving(
        [](const Tensor& x) {
          return std::vector{x, fx::cos(x)};
        },
        [](const std::vector<Tensor>& r) { return r.at(1); }));
    check_sin_gradients(sin_saving(
        [](const Tensor& x) {
          return std::map<std::string, Tensor>{{"cos", fx::cos(x)}, {"x", x}};
        },
        [](const std::map<std::string, Tensor>& r) { return r.at("cos"); }));
  }
  SUBCASE("a Hana struct with a static member") {
    check_sin_gradients(sin_saving(
        [](const Tensor& x) {
          return SinResiduals{fx::cos(x), x, 7};
        },
        [](const SinResiduals& r) { return r.cos_x * kept(r.tag, 7); }));
  }
  SUBCASE("nested containers with static ints mixed in") {
    check_sin_gradients(sin_saving(
        [](const Tensor& x) {
          return std::tuple{std::vector{std::pair{fx::cos(x), 2}}, 5,
                            std::map<std::string, SinResiduals>{{"s", SinResiduals{fx::cos(x), x, 9}}}};
        },
        [](const auto& r) {
          const auto& [v, five, m] = r;
          return (v.at(0).first * kept(v.at(0).second, 2) + m.at("s").cos_x * kept(m.at("s").tag, 9)) * 0.5 *
                 kept(five, 5);
        }));
  }
  SUBCASE("JAX's form: fwd returning a std::tuple{out, residuals}; references (std::tie) kept as values") {
    check_sin_gradients(fx::custom_vjp([](const Tensor& x) { return fx::sin(x); },
                                       [](const Tensor& x) { return std::make_tuple(fx::sin(x), fx::cos(x)); },
                                       [](const Tensor& c, const Tensor& ct) { return ct * c; }));
    check_sin_gradients(
        fx::custom_vjp([](const Tensor& x) { return fx::sin(x); },
                       [](const Tensor& x) {
                         return std::pair{fx::sin(x), std::tie(x)};
                       },
                       [](const std::tuple<Tensor>& r, const Tensor& ct) { return ct * fx::cos(std::get<0>(r)); }));
  }
  SUBCASE("no residuals, and a fwd returning std::make_pair") {
    auto f = fx::custom_vjp([](const Tensor& x) { return fx::sin(x); },
                            [](const Tensor& x) { return std::make_pair(fx::sin(x), std::tuple{}); },
                            [](const std::tuple<>&, const Tensor& ct) { return ct; });
    Tensor x = fx::tensor<double>({0.5, 1.5});
    CHECK(compare_tensors(fx::grad([f](const Tensor& v) { return fx::sum(f(v)); })(x), fx::ones_like(x)).empty());
  }
}
