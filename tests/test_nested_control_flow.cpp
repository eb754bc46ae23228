// Reverse mode through loops whose bodies hold control flow or calls: every outer loop (scan,
// fori_loop, while_loop with max_steps) around every inner construct (cond, switch_, scan,
// while_loop with max_steps, fori_loop, checkpoint, a jit-ed helper, custom_jvp and custom_vjp
// functions), differentiated by grad, jit(grad), vmap(grad) and hessian, against forward mode
// (jacfwd), which never splits a Jaxpr.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "samples.hpp"

namespace fx = fluxion;
using fx::Tensor;

namespace {

using Inner = Tensor (*)(const Tensor&);

Tensor inner_cond(const Tensor& c) {
  return fx::cond(
      fx::sum(c) > 0.0, [](const Tensor& a) { return fx::sin(a) * a; },
      [](const Tensor& a) { return fx::cos(a) + a * 0.5; }, c);
}

Tensor inner_switch(const Tensor& c) {
  Tensor index = fx::astype(fx::clip(fx::floor(fx::abs(fx::sum(c)) * 2.0), 0.0, 2.0), fx::i32);
  std::vector<std::function<Tensor(const Tensor&)>> branches{[](const Tensor& a) { return fx::tanh(a) * 1.5; },
                                                             [](const Tensor& a) { return a * a * 0.25 + a; },
                                                             [](const Tensor& a) { return fx::sin(a * 2.0); }};
  return fx::switch_(index, branches, c);
}

Tensor inner_scan(const Tensor& c) {
  auto step = [](const Tensor& a, const Tensor& t) {
    Tensor next = a * 0.9 + fx::sin(a * t);
    return std::make_pair(next, fx::sum(next * next));
  };
  auto [carry, ys] = fx::scan(step, c, fx::linspace(0.5, 1.0, 3));
  return carry + fx::sum(ys) * 0.01;
}

Tensor inner_while(const Tensor& c) {
  return fx::while_loop([](const Tensor& a) { return fx::sum(a * a) < 4.0; },
                        [](const Tensor& a) { return a * 1.3 + 0.1; }, c, fx::max_steps(4));
}

Tensor inner_fori(const Tensor& c) {
  return fx::fori_loop(
      0, 3, [](const Tensor& i, const Tensor& a) { return a * 0.8 + fx::sin(a) * fx::astype(i, fx::f64); }, c);
}

Tensor inner_checkpoint(const Tensor& c) {
  return fx::checkpoint([](const Tensor& a) { return fx::sin(a) * fx::exp(a * 0.1); })(c);
}

Tensor inner_jit(const Tensor& c) {
  static const auto helper = fx::jit([](const Tensor& a) { return fx::tanh(a) * a + a; });
  return helper(c);
}

Tensor inner_custom_jvp(const Tensor& c) {
  static const auto softplus =
      fx::custom_jvp([](const Tensor& a) { return fx::log1p(fx::exp(a)); },
                     [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                       const Tensor& a = std::get<0>(p);
                       return std::make_pair(fx::log1p(fx::exp(a)), fx::sigmoid(a) * std::get<0>(t));
                     });
  return softplus(c);
}

Tensor inner_custom_vjp(const Tensor& c) {
  static const auto cube = fx::custom_vjp([](const Tensor& a) { return a * a * a; },
                                          [](const Tensor& a) {
                                            return std::pair<Tensor, Tensor>{a * a * a, a * a};
                                          },
                                          [](const Tensor& a2, const Tensor& ct) { return ct * a2 * 3.0; });
  return cube(c * 0.5);
}

struct NamedInner {
  const char* name;
  Inner fn;
};
const NamedInner kInners[] = {
    {"cond", inner_cond},        {"switch_", inner_switch},        {"scan", inner_scan},
    {"while_loop", inner_while}, {"fori_loop", inner_fori},        {"checkpoint", inner_checkpoint},
    {"jit", inner_jit},          {"custom_jvp", inner_custom_jvp}, {"custom_vjp", inner_custom_vjp}};

// Outer loops: x (f64[3]) -> scalar. The bodies close over nothing but `inner`.
Tensor outer_scan(Inner inner, const Tensor& x) {
  auto step = [inner](const Tensor& c, const Tensor& t) {
    Tensor next = inner(c) * 0.5 + c * t;
    return std::make_pair(next, fx::sum(next));
  };
  auto [carry, ys] = fx::scan(step, x, fx::linspace(0.2, 0.5, 3));
  return fx::sum(carry * carry) + fx::sum(ys);
}

Tensor outer_fori(Inner inner, const Tensor& x) {
  Tensor c = fx::fori_loop(
      0, 3, [inner](const Tensor&, const Tensor& a) { return inner(a) * 0.5 + a * 0.3; }, x);
  return fx::sum(c * c);
}

Tensor outer_while(Inner inner, const Tensor& x) {
  auto state = std::make_pair(fx::scalar<int32_t>(0), x);
  using S = std::pair<Tensor, Tensor>;
  S out = fx::while_loop([](const S& s) { return s.first < 3; },
                         [inner](const S& s) {
                           return S{s.first + 1, inner(s.second) * 0.5 + s.second * 0.3};
                         },
                         state, fx::max_steps(5));
  return fx::sum(out.second * out.second);
}

using Outer = Tensor (*)(Inner, const Tensor&);
struct NamedOuter {
  const char* name;
  Outer fn;
};
const NamedOuter kOuters[] = {{"scan", outer_scan}, {"fori_loop", outer_fori}, {"while_loop", outer_while}};

bool close(const Tensor& a, const Tensor& b, double tol = 1e-9) {
  if (a.shape() != b.shape()) return false;
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::fabs(x[i] - y[i]) <= tol * (1.0 + std::fabs(y[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("reverse mode through every loop whose body holds control flow or a call") {
  // Three points whose inner predicates take different branches (sum of the carry of either sign).
  const Tensor points = fx::tensor<double>({{0.3, -0.2, 0.5}, {-0.6, 0.1, -0.4}, {0.9, 0.7, -0.1}});
  for (const NamedOuter& outer : kOuters) {
    for (const NamedInner& inner : kInners) {
      const std::string pair = std::string(outer.name) + " around " + inner.name;
      CAPTURE(pair);
      // Each pair reports on its own: a throw fails this pair and the loop goes on.
      try {
        Outer o = outer.fn;
        Inner in = inner.fn;
        auto f = [o, in](const Tensor& x) { return o(in, x); };
        const Tensor x = fx::reshape(fx::slice(points, {0, 0}, {1, 3}), {3});
        // Forward mode is the reference (it never splits Jaxprs); central differences check it.
        const Tensor reference = fx::jacfwd(f)(x);
        for (int i = 0; i < 3; ++i) {
          std::vector<double> e(3, 0.0);
          e[static_cast<size_t>(i)] = 1e-6;
          Tensor d = fx::tensor<double>({e[0], e[1], e[2]});
          double fd = ((f(x + d) - f(x - d)) / 2e-6).item<double>();
          CHECK(reference.to_vector<double>()[static_cast<size_t>(i)] == doctest::Approx(fd).epsilon(1e-5));
        }
        CHECK(close(fx::grad(f)(x), reference));
        CHECK(close(fx::jit(fx::grad(f))(x), reference));
        Tensor batched = fx::vmap(fx::grad(f))(points);
        for (int64_t b = 0; b < 3; ++b) {
          Tensor xb = fx::reshape(fx::slice(points, {b, 0}, {b + 1, 3}), {3});
          CHECK(close(fx::reshape(fx::slice(batched, {b, 0}, {b + 1, 3}), {3}), fx::jacfwd(f)(xb)));
        }
        CHECK(close(fx::hessian(f)(x), fx::jacfwd(fx::jacfwd(f))(x), 1e-8));
      } catch (const std::exception& e) { FAIL_CHECK((pair + ": " + e.what())); }
    }
  }
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
}

TEST_CASE("reverse mode through a loop body that closes over the differentiated value") {
  // The inner construct reads w, a value of the enclosing grad, from inside the loop body.
  auto f = [](const Tensor& w) {
    auto step = [w](const Tensor& c, const Tensor& t) {
      Tensor next = fx::cond(
          fx::sum(c) > 0.0, [w](const Tensor& a) { return fx::sin(a * w); },
          [w](const Tensor& a) { return a * w + 0.1; }, c);
      next = fx::scan([w](const Tensor& a, const Tensor& s) { return std::make_pair(a * fx::tanh(w * s), s); }, next,
                      fx::linspace(0.5, 1.0, 2))
                 .first;
      return std::make_pair(next + c * t, fx::sum(next));
    };
    auto [carry, ys] = fx::scan(step, w * 0.5, fx::linspace(0.1, 0.3, 3));
    return fx::sum(carry) + fx::sum(ys);
  };
  Tensor w = fx::tensor<double>({0.4, 0.7, -0.3});
  Tensor reference = fx::jacfwd(f)(w);
  CHECK(close(fx::grad(f)(w), reference));
  CHECK(close(fx::jit(fx::grad(f))(w), reference));
  CHECK(close(fx::hessian(f)(w), fx::jacfwd(fx::jacfwd(f))(w), 1e-8));
}

TEST_CASE("three levels: a scan of a while_loop of a cond, under grad and hessian") {
  auto f = [](const Tensor& x) {
    auto step = [](const Tensor& c, const Tensor& t) {
      Tensor inner = fx::while_loop([](const Tensor& a) { return fx::sum(a * a) < 2.0; },
                                    [](const Tensor& a) {
                                      return fx::cond(
                                          fx::sum(a) > 0.0, [](const Tensor& b) { return b * 1.2 + 0.05; },
                                          [](const Tensor& b) { return b * 1.1 - 0.05; }, a);
                                    },
                                    c, fx::max_steps(3));
      return std::make_pair(inner * t, fx::sum(inner));
    };
    auto [carry, ys] = fx::scan(step, x, fx::linspace(0.6, 0.9, 2));
    return fx::sum(carry * carry) + fx::sum(ys);
  };
  Tensor x = fx::tensor<double>({0.3, -0.2, 0.5});
  Tensor reference = fx::jacfwd(f)(x);
  CHECK(close(fx::grad(f)(x), reference));
  CHECK(close(fx::jit(fx::grad(f))(x), reference));
  CHECK(close(fx::hessian(f)(x), fx::jacfwd(fx::jacfwd(f))(x), 1e-8));
}
