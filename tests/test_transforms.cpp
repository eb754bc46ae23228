// The transforms on classic cases: nesting, perturbation confusion, control flow on values,
// long chains, and the error table of DESIGN.md §6.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace fx = fluxion;
using fluxion::testing::message_of;

namespace {
double val(const fx::Tensor& t) { return t.item<double>(); }
}  // namespace

TEST_CASE("grad: derivative of sin(x) * x") {
  auto f = [](const fx::Tensor& x) { return fx::sin(x) * x; };
  double x = 0.7;
  CHECK(val(fx::grad(f)(fx::scalar(x))) == doctest::Approx(std::cos(x) * x + std::sin(x)));
}

TEST_CASE("grad: perturbation confusion d/dx [x * d/dy (x + y)] at x = 1 is 1") {
  auto outer = [](const fx::Tensor& x) {
    auto inner = [&](const fx::Tensor& y) { return x + y; };
    return x * fx::grad(inner)(fx::scalar(1.0));
  };
  CHECK(val(fx::grad(outer)(fx::scalar(1.0))) == doctest::Approx(1.0));
}

TEST_CASE("grad: the fourth derivative of sin is sin") {
  auto f = [](const fx::Tensor& x) { return fx::sin(x); };
  auto d4 = fx::grad(fx::grad(fx::grad(fx::grad(f))));
  for (double x : {-1.3, 0.2, 2.5}) CHECK(val(d4(fx::scalar(x))) == doctest::Approx(std::sin(x)));
}

TEST_CASE("grad: C++ control flow on values is differentiated along the path taken") {
  // The condition is read from a comparison (a bool Tensor): x.item<double>() of the value being
  // differentiated would be a ConcretizationError (tests/test_host_reads.cpp).
  auto my_abs = [](const fx::Tensor& x) { return (x > 0).item<bool>() ? x : -x; };
  CHECK(val(fx::grad(my_abs)(fx::scalar(3.0))) == 1.0);
  CHECK(val(fx::grad(my_abs)(fx::scalar(-2.0))) == -1.0);
}

TEST_CASE("grad: stop_gradient has a zero derivative but passes values through") {
  auto f = [](const fx::Tensor& x) { return x * fx::stop_gradient(x); };
  CHECK(val(fx::grad(f)(fx::scalar(3.0))) == 3.0);
  CHECK(val(f(fx::scalar(3.0))) == 9.0);
}

TEST_CASE("grad: a 6-deep nest of grad of x^7 / 7! gives x") {
  auto f = [](const fx::Tensor& x) { return fx::pow(x, 7.0) / 5040.0; };
  auto d6 = fx::grad(fx::grad(fx::grad(fx::grad(fx::grad(fx::grad(f))))));
  CHECK(val(d6(fx::scalar(1.5))) == doctest::Approx(1.5));
}

TEST_CASE("grad: a chain of 100000 equations is built, differentiated and destroyed") {
  auto f = [](const fx::Tensor& x) {
    fx::Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * 1.0000001;
    return y;
  };
  CHECK(val(fx::grad(f)(fx::scalar(2.0))) == doctest::Approx(std::pow(1.0000001, 100000)).epsilon(1e-9));
}

TEST_CASE("grad: argnums selects arguments and has_aux passes aux through") {
  auto f = [](const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& c) { return fx::sum(a * b * c); };
  fx::Tensor a = fx::tensor({1.0, 2.0}), b = fx::tensor({3.0, 4.0}), c = fx::tensor({5.0, 6.0});
  auto [ga, gc] = fx::grad(f, fx::argnums<0, 2>)(a, b, c);
  CHECK(ga.to_vector<double>() == std::vector<double>{15, 24});
  CHECK(gc.to_vector<double>() == std::vector<double>{3, 8});
  auto g = [](const fx::Tensor& x) { return std::make_pair(fx::sum(x * x), x * 2.0); };
  auto [gx, aux] = fx::grad(g, fx::has_aux)(a);
  CHECK(gx.to_vector<double>() == std::vector<double>{2, 4});
  CHECK(aux.to_vector<double>() == std::vector<double>{2, 4});
  CHECK_FALSE(aux.is_tracer());
  auto [value, grad] = fx::value_and_grad(f)(a, b, c);
  CHECK(val(value) == 3 * 5 + 2 * 4 * 6);
  CHECK(grad.to_vector<double>() == std::vector<double>{15, 24});
}

TEST_CASE("jvp and vjp: the pullback is reusable and linearize's linear map too") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::sin(x) * w; };
  fx::Tensor x = fx::tensor({0.1, 0.2}), w = fx::tensor({2.0, 3.0});
  auto [y, pullback] = fx::vjp(f, x, w);
  for (double s : {1.0, 2.0}) {
    auto [xb, wb] = pullback(fx::full({2}, s));
    CHECK(xb.to_vector<double>()[1] == doctest::Approx(s * std::cos(0.2) * 3.0));
    CHECK(wb.to_vector<double>()[0] == doctest::Approx(s * std::sin(0.1)));
  }
  auto [yy, tangent] = fx::jvp(f, std::make_tuple(x, w), std::make_tuple(fx::ones({2}), fx::zeros({2})));
  CHECK(tangent.to_vector<double>()[0] == doctest::Approx(std::cos(0.1) * 2.0));
  auto [y2, f_lin] = fx::linearize([](const fx::Tensor& a) { return fx::exp(a); }, x);
  CHECK(f_lin(fx::ones({2})).to_vector<double>()[1] == doctest::Approx(std::exp(0.2)));
  CHECK(f_lin(fx::full({2}, 2.0)).to_vector<double>()[1] == doctest::Approx(2 * std::exp(0.2)));
}

TEST_CASE("vjp with has_aux: the aux is passed through and the pullback takes the output's cotangent only") {
  fx::Tensor x = fx::tensor({0.1, 0.2});
  // aux holds a value computed from x (a traced value inside f) and an integer count.
  auto f = [](const fx::Tensor& v) { return std::make_pair(fx::sin(v), std::make_pair(v * v, 7)); };
  auto [y, pullback, aux] = fx::vjp(f, fx::has_aux, x);
  CHECK(y.to_vector<double>()[1] == doctest::Approx(std::sin(0.2)));
  CHECK(aux.first.to_vector<double>() == std::vector<double>{0.1 * 0.1, 0.2 * 0.2});
  CHECK(!aux.first.is_tracer());
  CHECK(aux.second == 7);
  for (double s : {1.0, 3.0}) {
    auto [xb] = pullback(fx::full({2}, s));
    CHECK(xb.to_vector<double>()[0] == doctest::Approx(s * std::cos(0.1)));
  }
  // The same function without has_aux: the output is the pair, and so is the cotangent.
  auto [y_pair, pullback_pair] = fx::vjp([](const fx::Tensor& v) { return std::make_pair(fx::sin(v), v * v); }, x);
  auto [xb_pair] = pullback_pair(std::make_pair(fx::ones({2}), fx::ones({2})));
  CHECK(xb_pair.to_vector<double>()[1] == doctest::Approx(std::cos(0.2) + 0.4));
  CHECK(message_of<fx::Error>([&] { fx::vjp(f, fx::has_aux, fx::tensor({1, 2})); }).find("[vjp]") == 0);
}

TEST_CASE("vmap: maps over an axis, with none and negative in_axes and out_axes") {
  fx::Tensor xs = fx::reshape(fx::astype(fx::arange(6), fx::f64), {2, 3});
  fx::Tensor w = fx::tensor({1.0, 10.0, 100.0});
  auto f = [](const fx::Tensor& x, const fx::Tensor& v) { return fx::sum(x * v); };
  CHECK(fx::vmap(f, fx::in_axes(0, fx::none))(xs, w).to_vector<double>() == std::vector<double>{210, 543});
  CHECK(fx::vmap(f, fx::in_axes(-1, fx::none))(fx::transpose(xs), w).to_vector<double>() ==
        std::vector<double>{210, 543});
  auto g = [](const fx::Tensor& x) { return x * 2.0; };
  fx::Tensor out = fx::vmap(g, fx::in_axes(0), fx::out_axes(1))(xs);
  CHECK(out.shape() == std::vector<int64_t>{3, 2});
  CHECK(out.to_vector<double>() == std::vector<double>{0, 6, 2, 8, 4, 10});
}

TEST_CASE("vmap: a 3-deep nest equals the direct computation") {
  fx::Tensor x = fx::reshape(fx::astype(fx::arange(24), fx::f64), {2, 3, 4});
  auto f = [](const fx::Tensor& v) { return fx::sin(v) * v; };
  fx::Tensor nested = fx::vmap(fx::vmap(fx::vmap(f)))(x);
  CHECK(nested.to_vector<double>() == f(x).to_vector<double>());
}

TEST_CASE("jacobians: jacfwd equals jacrev, the Hessian is symmetric, hvp equals H v") {
  auto f = [](const fx::Tensor& x) { return fx::sin(x) * fx::sum(x * x); };
  fx::Tensor x = fx::tensor({0.3, -0.5, 1.1});
  fx::Tensor jf = fx::jacfwd(f)(x), jr = fx::jacrev(f)(x);
  CHECK(jf.shape() == std::vector<int64_t>{3, 3});
  auto a = jf.to_vector<double>(), b = jr.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]));
  auto s = [](const fx::Tensor& v) { return fx::sum(fx::exp(v) * v * v); };
  fx::Tensor h = fx::hessian(s)(x);
  auto hv = h.to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK(hv[i * 3 + j] == doctest::Approx(hv[j * 3 + i]));
  fx::Tensor v = fx::tensor({1.0, 2.0, -1.0});
  auto hvp = fx::hvp(s, x, v).to_vector<double>();
  for (int i = 0; i < 3; ++i) CHECK(hvp[i] == doctest::Approx(hv[i * 3] * 1.0 + hv[i * 3 + 1] * 2.0 - hv[i * 3 + 2]));
}

TEST_CASE("errors: the transforms' bad inputs name the transform and the values") {
  fx::Tensor x = fx::tensor({1.0, 2.0, 3.0});
  CHECK(message_of<fx::ShapeError>([&] { fx::grad([](const fx::Tensor& v) { return v * 2.0; })(x); }) ==
        "[grad] the function must return a floating-point scalar, it returned f64[3]. Use jacrev, or sum the output.");
  CHECK(message_of<fx::Error>([&] {
          fx::grad([](const fx::Tensor& v) { return fx::sum(v); }, fx::argnums<1>)(x);
        }).find("[grad] argnums 1 is out of range for a function called with 1 argument(s)") == 0);
  CHECK(message_of<fx::DTypeError>([] {
          fx::grad([](const fx::Tensor& v) { return fx::sum(v * 1.0); })(fx::arange(3));
        }).find("[grad] argument 0 has dtype i32") == 0);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::jvp([](const fx::Tensor& v) { return v; }, std::make_tuple(x), std::make_tuple(fx::zeros({2})));
        }) ==
        "[jvp] tangent 0 is f64[2] but its primal is f64[3]. Tangents must match the primals' shapes and dtypes.");
  CHECK(message_of<fx::ShapeError>([&] {
          fx::jvp([](const fx::Tensor& v) { return v; }, std::make_tuple(x), std::make_tuple(fx::zeros({3}, fx::f32)));
        }).find("[jvp] tangent 0 is f32[3]") == 0);
  auto f2 = [](const fx::Tensor& a, const fx::Tensor& b) { return a + b; };
  CHECK(message_of<fx::ShapeError>([&] {
          fx::vmap(f2)(fx::zeros({3, 2}, fx::f32), fx::zeros({4}));
        }) ==
        "[vmap] inconsistent sizes for the mapped axis: argument 0 has 3 (axis 0 of f32[3,2]), argument 1 has 4 (axis "
        "0 of f64[4]).");
  CHECK(message_of<fx::AxisError>([&] {
          fx::vmap(f2, fx::in_axes(2, 0))(fx::zeros({3, 2}), x);
        }).find("[vmap] in_axes 2 is out of range for argument 0 of type f64[3,2]") == 0);
  CHECK(message_of<fx::Error>([&] {
          fx::vmap(f2, fx::in_axes(0))(x, x);
        }).find("[vmap] in_axes has 1 entries but the function was called with 2 argument(s)") == 0);
  CHECK(message_of<fx::Error>([&] {
          fx::vmap(f2, fx::in_axes(fx::none, fx::none))(x, x);
        }).find("[vmap] every in_axes entry is fx::none") == 0);
  fx::Tensor leaked;
  fx::grad([&](const fx::Tensor& v) {
    leaked = v * 2.0;
    return fx::sum(v);
  })(x);
  CHECK(message_of<fx::LeakedTracerError>([&] { fx::sin(leaked); }).find("[sin] a value traced by grad") == 0);
  CHECK(message_of<fx::ConcretizationError>([&] {
          fx::vmap([](const fx::Tensor& v) { return v.item<double>() > 0 ? v : -v; })(x);
        }).find("[item] cannot convert a value traced by vmap (f64[])") == 0);
}

TEST_CASE("nesting: grad∘grad∘grad, vmap∘grad, grad∘vmap, vmap∘hessian and jacfwd∘jacrev agree with closed forms") {
  auto cube = [](const fx::Tensor& x) { return fx::sum(x * x * x); };
  CHECK(val(fx::grad(fx::grad(fx::grad([](const fx::Tensor& x) { return x * x * x; })))(fx::scalar(2.0))) == 6.0);
  fx::Tensor xs = fx::tensor({{1.0, 2.0}, {3.0, -1.0}});
  // vmap∘grad: per-row gradients 3x^2.
  CHECK(fx::vmap(fx::grad(cube))(xs).to_vector<double>() == std::vector<double>{3, 12, 27, 3});
  // grad∘vmap: the gradient of a sum over rows of a vmapped function.
  auto total = [&](const fx::Tensor& m) { return fx::sum(fx::vmap(cube)(m)); };
  CHECK(fx::grad(total)(xs).to_vector<double>() == std::vector<double>{3, 12, 27, 3});
  // vmap∘hessian: per-row Hessians diag(6x).
  fx::Tensor hs = fx::vmap(fx::hessian(cube))(xs);
  CHECK(hs.shape() == std::vector<int64_t>{2, 2, 2});
  CHECK(hs.to_vector<double>() == std::vector<double>{6, 0, 0, 12, 18, 0, 0, -6});
  // jacfwd∘jacrev on a pytree (a pair of tensors): blocks of the Hessian of sum(a^2 b).
  auto f = [](const std::pair<fx::Tensor, fx::Tensor>& p) { return fx::sum(p.first * p.first * p.second); };
  std::pair<fx::Tensor, fx::Tensor> p{fx::tensor({1.0, 2.0}), fx::tensor({3.0, 4.0})};
  // Nested like JAX's: the output pair (the gradient's a and b) outside, the input pair inside.
  auto H = fx::jacfwd(fx::jacrev(f))(p);
  CHECK(H.first.first.to_vector<double>() == std::vector<double>{6, 0, 0, 8});   // d2/da2 = 2b
  CHECK(H.first.second.to_vector<double>() == std::vector<double>{2, 0, 0, 4});  // d2/da db = 2a
  CHECK(H.second.first.to_vector<double>() == std::vector<double>{2, 0, 0, 4});
  CHECK(H.second.second.to_vector<double>() == std::vector<double>{0, 0, 0, 0});
  // jacobian picks a mode from the shapes and agrees with both.
  auto g = [](const fx::Tensor& v) { return fx::sin(v) * 2.0; };
  CHECK(fx::jacobian(g)(fx::tensor({0.0, 1.0})).to_vector<double>() ==
        fx::jacfwd(g)(fx::tensor({0.0, 1.0})).to_vector<double>());
  auto s = [](const fx::Tensor& v) { return fx::sum(fx::sin(v)); };
  auto jr = fx::jacrev(s)(fx::tensor({0.0, 1.0})).to_vector<double>(),
       jj = fx::jacobian(s)(fx::tensor({0.0, 1.0})).to_vector<double>();
  CHECK(jr == jj);
}

TEST_CASE("pytrees: gradients come back in the argument's structure") {
  std::map<std::string, fx::Tensor> params{{"w", fx::tensor({1.0, 2.0})}, {"b", fx::scalar(0.5)}};
  auto loss = [](const std::map<std::string, fx::Tensor>& p) {
    return fx::sum(p.at("w") * p.at("w")) + p.at("b") * 3.0;
  };
  auto g = fx::grad(loss)(params);
  CHECK(g.at("w").to_vector<double>() == std::vector<double>{2, 4});
  CHECK(val(g.at("b")) == 3.0);
  auto [leaves, def] = fx::tree_flatten(params);
  CHECK(leaves.size() == 2);
  auto back = fx::tree_unflatten(def, leaves);
  CHECK(back.at("w").to_vector<double>() == std::vector<double>{1, 2});
  CHECK_THROWS_AS(fx::tree_unflatten(def, std::vector<fx::Tensor>{leaves[0]}), fx::Error);
  auto stepped = fx::tree_map([](const fx::Tensor& p, const fx::Tensor& d) { return p - d * 0.1; }, params, g);
  CHECK(stepped.at("w").to_vector<double>()[1] == doctest::Approx(1.6));
  std::tuple<fx::Tensor, std::vector<fx::Tensor>, std::array<fx::Tensor, 1>> nested{
      fx::scalar(1.0), {fx::scalar(2.0), fx::scalar(3.0)}, {fx::scalar(4.0)}};
  auto gn = fx::grad([](const decltype(nested)& t) {
    return std::get<0>(t) * std::get<1>(t)[0] * std::get<1>(t)[1] * std::get<2>(t)[0];
  })(nested);
  CHECK(val(std::get<0>(gn)) == 24.0);
  CHECK(val(std::get<1>(gn)[1]) == 8.0);
  CHECK(val(std::get<2>(gn)[0]) == 6.0);
}
