// Control flow in use: an RK4 pendulum differentiated through scan, reverse mode through a bounded
// while_loop, vmap of cond and while_loop with per-lane trip counts, jit of each, and rollback
// after a throw during tracing.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "runtime/executable.hpp"
#include "runtime/loop_runner.hpp"
#include "runtime/switches.hpp"
#include "samples.hpp"
#include "src/allocator.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fx::Tensor;

namespace {

double num(const Tensor& t) { return t.item<double>(); }

// Damped pendulum theta'' = -(g/l) sin(theta) - c theta'; params = (g/l, c).
Tensor pendulum_final(const Tensor& params, int steps, double dt) {
  auto rhs = [params](const Tensor& s) {
    Tensor th = fx::slice(s, {0}, {1}), om = fx::slice(s, {1}, {2});
    Tensor k = fx::slice(params, {0}, {1}), c = fx::slice(params, {1}, {2});
    return fx::concatenate({om, -k * fx::sin(th) - c * om}, 0);
  };
  auto step = [rhs, dt](const Tensor& s, const Tensor&) {
    Tensor k1 = rhs(s), k2 = rhs(s + k1 * (dt / 2)), k3 = rhs(s + k2 * (dt / 2)), k4 = rhs(s + k3 * dt);
    Tensor next = s + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (dt / 6);
    return std::make_pair(next, fx::sum(next));
  };
  Tensor s0 = fx::tensor<double>({1.0, 0.0});
  return fx::scan(step, s0, fx::zeros({steps}, fx::f64)).first;
}

Tensor pendulum_loss(const Tensor& params) {
  Tensor s = pendulum_final(params, 50, 0.05);
  return fx::sum(s * s);
}

}  // namespace

TEST_CASE("scan: gradient of an RK4 damped pendulum's final state matches central differences") {
  Tensor p = fx::tensor<double>({9.81, 0.3});
  Tensor g = fx::grad(pendulum_loss)(p);
  std::vector<double> gv = g.to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    std::vector<double> e{0.0, 0.0};
    e[static_cast<size_t>(i)] = 1e-6;
    Tensor d = fx::tensor<double>({e[0], e[1]});
    double fd = (num(pendulum_loss(p + d)) - num(pendulum_loss(p - d))) / 2e-6;
    CHECK(std::fabs(gv[static_cast<size_t>(i)] - fd) <= 1e-6 + 1e-5 * std::fabs(fd));
  }
  // Forward mode agrees, and so does the jit'd gradient.
  Tensor t = fx::tensor<double>({1.0, 0.0});
  CHECK(std::fabs(num(fx::jvp(pendulum_loss, std::make_tuple(p), std::make_tuple(t)).second) - gv[0]) < 1e-9);
  auto jg = fx::jit([](const Tensor& q) { return fx::grad(pendulum_loss)(q); });
  CHECK(fx::testing::compare_tensors(jg(p), g).empty());
}

TEST_CASE("while_loop: reverse mode with max_steps; a clear error without") {
  // x -> x * 1.5 until it exceeds 10 (3 steps from 2): d/dx = 1.5^3.
  auto f = [](const Tensor& x, fx::MaxSteps steps) {
    return fx::while_loop([](const Tensor& v) { return v < 10.0; },
                          [](const Tensor& v) { return v * 1.5 + fx::sin(v) * 0.0; }, x, steps);
  };
  Tensor x = fx::scalar<double>(2.0);
  Tensor g = fx::grad([&](const Tensor& v) { return f(v, fx::max_steps(8)); })(x);
  CHECK(num(g) == doctest::Approx(std::pow(1.5, 4)).epsilon(1e-12));  // 2 -> 3 -> 4.5 -> 6.75 -> 10.125
  Tensor fwd = fx::jvp([&](const Tensor& v) { return f(v, fx::MaxSteps{}); }, std::make_tuple(x),
                       std::make_tuple(fx::scalar<double>(1.0)))
                   .second;
  CHECK(num(fwd) == doctest::Approx(std::pow(1.5, 4)).epsilon(1e-12));
  try {
    fx::grad([&](const Tensor& v) { return f(v, fx::MaxSteps{}); })(x);
    FAIL("expected NotImplementedError");
  } catch (const fx::NotImplementedError& e) {
    CHECK(std::string(e.what()).find("fx::max_steps(n)") != std::string::npos);
  }
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
  // A gradient through a loop state that depends on a closed-over parameter.
  auto h = [](const Tensor& a) {
    auto st =
        fx::while_loop([](const std::pair<Tensor, Tensor>& s) { return s.first < 4.0; },
                       [a](const std::pair<Tensor, Tensor>& s) { return std::make_pair(s.first + 1.0, s.second * a); },
                       std::make_pair(fx::scalar<double>(0.0), fx::scalar<double>(1.0)), fx::max_steps(10));
    return st.second;  // a^4
  };
  CHECK(num(fx::grad(h)(fx::scalar<double>(1.3))) == doctest::Approx(4 * std::pow(1.3, 3)).epsilon(1e-12));
}

TEST_CASE("vmap: cond with a batched predicate and while_loop with per-lane trip counts equal a loop") {
  auto piecewise = [](const Tensor& x) {
    return fx::cond(
        x > 0.0, [](const Tensor& v) { return fx::sqrt(v); }, [](const Tensor& v) { return v * v; }, x);
  };
  Tensor xs = fx::tensor<double>({-2.0, 4.0, 0.5, -0.5});
  Tensor got = fx::vmap(piecewise)(xs);
  std::vector<double> want;
  for (double v : xs.to_vector<double>()) want.push_back(v > 0 ? std::sqrt(v) : v * v);
  CHECK(fx::testing::compare_tensors(got, fx::from_vector(want)).empty());

  auto collatz_steps = [](const Tensor& n) {
    auto st = fx::while_loop([](const std::pair<Tensor, Tensor>& s) { return s.first > 1; },
                             [](const std::pair<Tensor, Tensor>& s) {
                               Tensor even = fx::remainder(s.first, fx::scalar<int32_t>(2)) == 0;
                               return std::make_pair(fx::astype(fx::where(even, s.first / 2, s.first * 3 + 1), fx::i32),
                                                     s.second + 1);
                             },
                             std::make_pair(n, fx::scalar<int32_t>(0)));
    return st.second;
  };
  Tensor ns = fx::tensor<int32_t>({1, 6, 7, 27});
  Tensor steps = fx::vmap(collatz_steps)(ns);
  std::vector<int32_t> want_steps;
  for (int32_t n : ns.to_vector<int32_t>()) want_steps.push_back(collatz_steps(fx::scalar<int32_t>(n)).item<int32_t>());
  CHECK(steps.to_vector<int32_t>() == want_steps);
  CHECK(want_steps == std::vector<int32_t>{0, 8, 16, 111});
  // jit of the vmapped loop, and make_jaxpr shows the primitives.
  CHECK(fx::jit(fx::vmap(collatz_steps))(ns).to_vector<int32_t>() == want_steps);
  std::ostringstream text;
  text << fx::make_jaxpr(piecewise)(fx::scalar<double>(1.0));
  CHECK(text.str().find("cond[") != std::string::npos);
}

TEST_CASE("jit: cond, while_loop, scan and fori_loop; grad of jit and jit of grad") {
  auto f = [](const Tensor& x) {
    Tensor y = fx::cond(
        fx::sum(x) > 0.0, [](const Tensor& v) { return fx::sin(v); }, [](const Tensor& v) { return fx::cos(v); }, x);
    Tensor z = fx::fori_loop(
        0, 3, [](const Tensor& i, const Tensor& c) { return c * 0.5 + fx::astype(i, fx::f64); }, y);
    auto [c, ys] = fx::scan([](const Tensor& c, const Tensor& v) { return std::make_pair(c + v * c, fx::tanh(c)); },
                            fx::scalar<double>(1.0), z);
    Tensor w = fx::while_loop([](const Tensor& v) { return fx::sum(v) < 5.0; },
                              [](const Tensor& v) { return v * 1.3 + 0.1; }, z, fx::max_steps(20));
    return fx::sum(ys) + c + fx::sum(w);
  };
  Tensor x = fx::tensor<double>({0.3, -0.1, 0.7});
  auto jf = fx::jit(f);
  CHECK(fx::testing::compare_tensors(jf(x), f(x)).empty());
  Tensor g = fx::grad(f)(x);
  // grad of jit: jit_call's partial evaluation and transpose split each loop with its own rule.
  CHECK(fx::testing::compare_tensors(fx::grad(fx::jit(f))(x), g).empty());
  CHECK(fx::testing::compare_tensors(fx::hessian(fx::jit(f))(x), fx::hessian(f)(x)).empty());
  auto no_loops = [](const Tensor& v) {
    return fx::sum(fx::cond(
        fx::sum(v) > 0.0, [](const Tensor& u) { return fx::sin(u); }, [](const Tensor& u) { return fx::cos(u); }, v));
  };
  CHECK(fx::testing::compare_tensors(fx::grad(fx::jit(no_loops))(x), fx::grad(no_loops)(x)).empty());
  CHECK(fx::testing::compare_tensors(fx::jit(fx::grad(f))(x), g).empty());
  // Finite differences of the composite.
  for (int i = 0; i < 3; ++i) {
    std::vector<double> e(3, 0.0);
    e[static_cast<size_t>(i)] = 1e-6;
    Tensor d = fx::from_vector(e);
    double fd = (num(f(x + d)) - num(f(x - d))) / 2e-6;
    CHECK(std::fabs(g.to_vector<double>()[static_cast<size_t>(i)] - fd) <= 1e-6 + 1e-5 * std::fabs(fd));
  }
  // fori_loop with traced bounds lowers to while_loop.
  auto tri = fx::jit([](const Tensor& n) {
    return fx::fori_loop(
        fx::scalar<int32_t>(0), n, [](const Tensor& i, const Tensor& c) { return c + i; }, fx::scalar<int32_t>(0));
  });
  CHECK(tri(fx::scalar<int32_t>(5)).item<int32_t>() == 10);
}

TEST_CASE("control flow: a throw inside a branch or loop body during tracing leaves no broken state") {
  bool fail = true;
  auto f = [&fail](const Tensor& x) {
    Tensor a = fx::cond(
        x > 0.0,
        [&fail](const Tensor& v) {
          if (fail) throw std::runtime_error("boom");
          return v * 2.0;
        },
        [](const Tensor& v) { return -v; }, x);
    return fx::scan(
               [&fail](const Tensor& c, const Tensor& v) {
                 if (fail) throw std::runtime_error("boom");
                 return std::make_pair(c + v, c);
               },
               a, fx::ones({3}, fx::f64))
        .first;
  };
  auto jf = fx::jit(f);
  CHECK_THROWS_AS(jf(fx::scalar<double>(1.0)), std::runtime_error);
  CHECK_THROWS_AS(fx::grad(f)(fx::scalar<double>(1.0)), std::runtime_error);
  CHECK_THROWS_AS(fx::while_loop([](const Tensor& v) -> Tensor { throw std::runtime_error("cond"); },
                                 [](const Tensor& v) { return v; }, fx::scalar<double>(1.0)),
                  std::runtime_error);
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
  fail = false;
  CHECK(num(jf(fx::scalar<double>(1.0))) == doctest::Approx(2.0 + 3.0));
  CHECK(num(fx::grad(f)(fx::scalar<double>(1.0))) == doctest::Approx(2.0));
  CHECK(jf.cache_size() == 1);
}

namespace {

// A scan whose body's outputs alias its inputs: carries 0 and 1 are swapped, (c0, c1, c2) ->
// (c1, c0, next), and the ys pass a carry and the x slice through; w is a captured const.
std::vector<Tensor> aliasing_scan(const Tensor& w, const Tensor& c0, const Tensor& c1, const Tensor& c2,
                                  const Tensor& xs, bool rev) {
  using Carry = std::tuple<Tensor, Tensor, Tensor>;
  auto body = [w](const Carry& c, const Tensor& x) {
    const auto& [a, b, acc] = c;
    Tensor next = acc + a * fx::tanh(x * w) - b;
    return std::make_pair(Carry{b, a, next}, std::make_tuple(a, x, next * 2.0));
  };
  Carry init{c0, c1, c2};
  auto [carry, ys] = rev ? fx::scan(body, init, xs, fx::reverse) : fx::scan(body, init, xs);
  return {std::get<0>(carry), std::get<1>(carry), std::get<2>(carry),
          std::get<0>(ys),    std::get<1>(ys),    std::get<2>(ys)};
}

}  // namespace

// The compiled scan kernel reuses its argument, carry and output buffers across steps; the
// reference kernel evaluates each step afresh. They must agree on every length (0 and 1
// included), in both directions, and the caller's init must be left unchanged.
TEST_CASE("scan: the compiled kernel equals the reference kernel over lengths 0, 1, 2, 7, both directions") {
  for (bool rev : {false, true})
    for (int64_t length : {0, 1, 2, 7}) {
      CAPTURE(rev);
      CAPTURE(length);
      Tensor w = fx::tensor<double>({0.5, -1.5, 2.0});
      Tensor c0 = fx::tensor<double>({1.0, 2.0, 3.0}), c1 = fx::tensor<double>({-0.5, 0.25, 4.0}), c2 = c0 * c1;
      Tensor xs = fx::reshape(fx::arange(0, length * 3, 1, fx::f64), {length, 3}) * 0.1;
      auto f = [rev](const Tensor& w_, const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& x) {
        return aliasing_scan(w_, a, b, c, x, rev);
      };
      fx::Jaxpr j = fx::make_jaxpr(f)(w, c0, c1, c2, xs);
      const fx::Equation* scan = nullptr;
      for (const fx::Equation& e : j.equations)
        if (e.primitive == &fx::scan_p()) scan = &e;
      REQUIRE(scan != nullptr);
      // The scan's inputs are the traced inputs (w captured as a const).
      std::vector<Tensor> values{w, c0, c1, c2, xs}, in;
      for (const fx::Atom& a : scan->inputs) {
        REQUIRE_FALSE(a.is_literal());
        for (size_t i = 0; i < j.invars.size(); ++i)
          if (j.invars[i] == a.var) in.push_back(values[i]);
      }
      REQUIRE(in.size() == 5);
      auto cpu = fx::eval_primitive(fx::scan_p(), in, *scan->params, fx::Backend::cpu);
      auto again = fx::eval_primitive(fx::scan_p(), in, *scan->params, fx::Backend::cpu);
      auto ref = fx::eval_primitive(fx::scan_p(), in, *scan->params, fx::Backend::reference);
      REQUIRE(cpu.size() == 6);
      CHECK(cpu[3].shape().dims() == std::vector<int64_t>{length, 3});
      for (size_t k = 0; k < cpu.size(); ++k) {
        CAPTURE(k);
        CHECK(fx::testing::compare_tensors(cpu[k], ref[k]).empty());
        CHECK(fx::testing::compare_tensors(again[k], ref[k]).empty());
      }
      // Carries 0 and 1 swap every step; the caller's init is never written.
      CHECK(cpu[0].to_vector<double>() == (length % 2 ? c1 : c0).to_vector<double>());
      CHECK(cpu[1].to_vector<double>() == (length % 2 ? c0 : c1).to_vector<double>());
      CHECK(c0.to_vector<double>() == std::vector<double>{1.0, 2.0, 3.0});
      CHECK(c1.to_vector<double>() == std::vector<double>{-0.5, 0.25, 4.0});
      CHECK(c2.to_vector<double>() == std::vector<double>{-0.5, 0.5, 12.0});
      // Eager and jit (whose plan holds the scan) agree with the reference too, twice in a row
      // with the first results kept alive.
      auto jf = fx::jit(f);
      std::vector<Tensor> first = jf(w, c0, c1, c2, xs), second = jf(w, c0, c1, c2, xs), eager = f(w, c0, c1, c2, xs);
      for (size_t k = 0; k < ref.size(); ++k) {
        CAPTURE(k);
        CHECK(fx::testing::compare_tensors(first[k], ref[k]).empty());
        CHECK(fx::testing::compare_tensors(second[k], ref[k]).empty());
        CHECK(fx::testing::compare_tensors(eager[k], ref[k]).empty());
      }
    }
}

// Gradients through scans of 0, 1 and 3 steps (the transposed scan runs the compiled kernel in the
// opposite direction, reading stacked residuals) match central differences.
TEST_CASE("scan: gradients through 0, 1 and 3 steps match finite differences") {
  for (int64_t length : {0, 1, 3}) {
    CAPTURE(length);
    auto f = [length](const Tensor& p) {
      auto body = [p](const Tensor& c, const Tensor& x) {
        Tensor next = fx::tanh(fx::matmul(fx::reshape(p, {2, 2}), c) + x);
        return std::make_pair(next, fx::sum(next * c));
      };
      Tensor xs = fx::reshape(fx::arange(0, length * 2, 1, fx::f64), {length, 2}) * 0.3;
      auto [c, ys] = fx::scan(body, fx::tensor<double>({0.4, -0.7}), xs);
      return fx::sum(c * c) + fx::sum(ys);
    };
    Tensor p = fx::tensor<double>({0.3, -0.2, 0.5, 0.9});
    Tensor g = fx::grad(f)(p), gj = fx::jit(fx::grad(f))(p);
    CHECK(fx::testing::compare_tensors(gj, g).empty());
    for (int i = 0; i < 4; ++i) {
      std::vector<double> e(4, 0.0);
      e[static_cast<size_t>(i)] = 1e-6;
      Tensor d = fx::from_vector(e);
      const double fd = (num(f(p + d)) - num(f(p - d))) / 2e-6;
      CHECK(std::fabs(g.to_vector<double>()[static_cast<size_t>(i)] - fd) <= 1e-7 + 1e-6 * std::fabs(fd));
    }
  }
}

TEST_CASE("control flow: static leaves of a branch's or loop carry's pytree must not change") {
  using P = std::pair<Tensor, int>;
  const Tensor one = fx::scalar(1.0);
  // Equal static leaves pass through, from whichever branch runs.
  P same = fx::cond(
      fx::scalar(true),
      [](const Tensor& v) {
        return P{v * 2.0, 7};
      },
      [](const Tensor& v) {
        return P{v, 7};
      },
      one);
  CHECK(same.second == 7);
  CHECK(num(same.first) == 2.0);
  // Different ones are refused (before: the first traced branch's value came back for either).
  auto branches = [&] {
    return fx::cond(
        fx::scalar(true),
        [](const Tensor& v) {
          return P{v, 1};
        },
        [](const Tensor& v) {
          return P{v, 2};
        },
        one);
  };
  CHECK(fx::testing::message_of<fx::ShapeError>(branches).find("[cond] the branches return pytrees of different "
                                                               "structures") != std::string::npos);
  std::vector<std::function<P(const Tensor&)>> fns{[](const Tensor& v) {
                                                     return P{v, 1};
                                                   },
                                                   [](const Tensor& v) {
                                                     return P{v, 2};
                                                   }};
  CHECK(fx::testing::message_of<fx::ShapeError>([&] {
          fx::switch_(fx::scalar<int32_t>(1), fns, one);
        }).find("[switch_]") != std::string::npos);
  // A loop carry's static leaf is part of its structure (before: the body's change was dropped).
  auto counting = [&] {
    return fx::while_loop([](const P& c) { return c.first < 3.0; },
                          [](const P& c) {
                            return P{c.first + 1.0, c.second + 1};
                          },
                          P{one, 0});
  };
  CHECK(fx::testing::message_of<fx::ShapeError>(counting).find("[while_loop] body_fn returns a carry whose structure "
                                                               "differs from init's") != std::string::npos);
  auto scanning = [&] {
    return fx::scan(
        [](const P& c, const Tensor& x) {
          return std::make_pair(P{c.first + x, c.second + 1}, x);
        },
        P{one, 0}, fx::ones({3}));
  };
  CHECK(fx::testing::message_of<fx::ShapeError>(scanning).find("[scan] f returns a carry") != std::string::npos);
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
}

namespace {

/// Restores "every optimization on" when a test case ends, however it ends.
struct LoopsOnAtExit {
  ~LoopsOnAtExit() { fx::runtime::set_disabled(""); }
};

/// Every element of every output, for bitwise comparison.
std::vector<std::vector<double>> values_of(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> v;
  for (const Tensor& t : ts) v.push_back(t.to_vector<double>());
  return v;
}

/// Scans whose body outputs alias its inputs in every way the loop runner distinguishes: a carry
/// passed through unchanged, carries swapped, a carry also returned as a y, an x row as the new
/// carry, one value returned as two carries, a literal carry, a pytree (tuple and map) of carries.
std::vector<Tensor> aliasing_loops(const Tensor& w, const Tensor& xs, bool rev) {
  using Carry = std::tuple<Tensor, std::pair<Tensor, Tensor>, std::map<std::string, Tensor>>;
  auto body = [w](const Carry& c, const Tensor& x) {
    const auto& [still, swapped, named] = c;
    const Tensor& acc = named.at("acc");
    Tensor next = acc * 0.5 + fx::tanh(x * w) + swapped.first - still;
    std::map<std::string, Tensor> out{{"acc", next}, {"row", x}, {"twice_a", next}, {"twice_b", next}};
    out.emplace("one", fx::full_like(acc, 1.0));
    return std::make_pair(Carry{still, {swapped.second, swapped.first}, out}, std::make_tuple(next, still, x));
  };
  std::map<std::string, Tensor> named{
      {"acc", w * 0.1}, {"row", w * 0.2}, {"twice_a", w * 0.3}, {"twice_b", w * 0.4}, {"one", w}};
  Carry init{w * -1.0, {w + 1.0, w - 2.0}, named};
  auto [carry, ys] = rev ? fx::scan(body, init, xs, fx::reverse) : fx::scan(body, init, xs);
  std::vector<Tensor> out = fx::tree_leaves(carry);
  for (const Tensor& y : fx::tree_leaves(ys)) out.push_back(y);
  return out;
}

/// A while_loop whose carries are swapped, passed through and counted: (i, a, b, k) -> (i + 1, b,
/// a * w + b, k) while i < n; and a fori_loop accumulating into a pair.
std::vector<Tensor> aliasing_while(const Tensor& w, const Tensor& n) {
  using Carry = std::tuple<Tensor, Tensor, Tensor, Tensor>;
  Carry init{fx::scalar<int32_t>(0), w, w * 2.0, w * 3.0};
  Carry done = fx::while_loop([n](const Carry& c) { return std::get<0>(c) < n; },
                              [w](const Carry& c) {
                                const auto& [i, a, b, k] = c;
                                return Carry{i + 1, b, a * fx::sin(w) + b * 0.25, k};
                              },
                              init);
  auto pair = fx::fori_loop(
      0, 5,
      [w](const Tensor& i, const std::pair<Tensor, Tensor>& p) {
        return std::make_pair(p.second, p.first + w * fx::astype(i, fx::f64));
      },
      std::make_pair(w, w * 0.0));
  std::vector<Tensor> out = fx::tree_leaves(done);
  out.push_back(pair.first);
  out.push_back(pair.second);
  return out;
}

}  // namespace

// The loops switch off runs one plan call per step (the former kernels); on, one held state with
// carries exchanged in place. Every aliasing case, every length, both directions, and scans under
// vmap, grad and jit must give bitwise the same results either way.
TEST_CASE("loops: scan and while_loop give identical results with the loops switch on and off") {
  LoopsOnAtExit restore;
  const Tensor w = fx::tensor<double>({0.5, -1.5, 2.0});
  auto loss = [](const Tensor& w_, const Tensor& xs) {
    Tensor total = fx::scalar<double>(0.0);
    for (const Tensor& t : aliasing_loops(w_, xs, false)) total = total + fx::sum(t * t);
    for (const Tensor& t : aliasing_loops(w_, xs, true)) total = total + fx::sum(fx::sin(t));
    return total;
  };
  for (int64_t length : {0, 1, 2, 7}) {
    CAPTURE(length);
    const Tensor xs = fx::reshape(fx::arange(0, length * 3, 1, fx::f64), {length, 3}) * 0.1;
    const Tensor batch = fx::stack({w, w * 0.5, w + 0.25});
    auto run_all = [&] {
      std::vector<Tensor> out;
      for (bool rev : {false, true}) {
        for (const Tensor& t : aliasing_loops(w, xs, rev)) out.push_back(t);
        auto jf = fx::jit([rev](const Tensor& w_, const Tensor& x) { return aliasing_loops(w_, x, rev); });
        for (const Tensor& t : jf(w, xs)) out.push_back(t);
      }
      out.push_back(fx::grad(loss)(w, xs));
      out.push_back(fx::jit(fx::grad(loss))(w, xs));
      out.push_back(fx::vmap(loss, fx::in_axes(0, fx::none))(batch, xs));
      out.push_back(fx::jit(fx::vmap(fx::grad(loss), fx::in_axes(0, fx::none)))(batch, xs));
      for (const Tensor& t : aliasing_while(w, fx::scalar<int32_t>(static_cast<int32_t>(length)))) out.push_back(t);
      auto jw = fx::jit([](const Tensor& w_, const Tensor& n) { return aliasing_while(w_, n); });
      for (const Tensor& t : jw(w, fx::scalar<int32_t>(static_cast<int32_t>(length)))) out.push_back(t);
      auto per_lane = fx::vmap([](const Tensor& w_, const Tensor& n) { return aliasing_while(w_, n); });
      for (const Tensor& t : per_lane(batch, fx::tensor<int32_t>({0, 1, static_cast<int32_t>(length)})))
        out.push_back(t);
      return values_of(out);
    };
    fx::runtime::set_disabled("");
    const auto on = run_all();
    fx::runtime::set_disabled("loops");
    const auto off = run_all();
    REQUIRE(on.size() == off.size());
    for (size_t k = 0; k < on.size(); ++k) {
      CAPTURE(k);
      CHECK(on[k] == off[k]);
    }
    // And the reference kernels (the executable spec) agree with both.
    const auto ref = values_of(aliasing_loops(w, xs, false));
    for (size_t k = 0; k < ref.size(); ++k) CHECK(ref[k] == on[k]);
  }
}

// A loop allocates per call (its state's outputs, its carries' second buffers), never per step:
// a jit'd scan and while_loop of 1000 steps allocate as often as the same loops of 10 steps.
TEST_CASE("loops: a compiled scan or while_loop allocates nothing per step") {
  LoopsOnAtExit restore;
  fx::runtime::set_disabled("");
  auto scan_fn = fx::jit([](const Tensor& c0, const Tensor& xs) {
    auto [c, ys] = fx::scan(
        [](const Tensor& c, const Tensor& x) {
          Tensor next = fx::tanh(c * x + 0.5);
          return std::make_pair(next, next * 2.0);
        },
        c0, xs);
    return std::make_pair(c, ys);
  });
  auto while_fn = fx::jit([](const Tensor& c0, const Tensor& n) {
    using Carry = std::pair<Tensor, Tensor>;
    return fx::while_loop([n](const Carry& c) { return c.first < n; },
                          [](const Carry& c) {
                            return Carry{c.first + 1, fx::cos(c.second) * 0.9};
                          },
                          Carry{fx::scalar<int32_t>(0), c0})
        .second;
  });
  const Tensor c0 = fx::tensor<double>({0.1, 0.2, 0.3, 0.4});
  auto allocations = [](auto&& call) {
    call();  // compiles, and warms the allocator's cache
    const auto before = fx::cpu_memory::stats();
    call();
    const auto after = fx::cpu_memory::stats();
    return (after.hits + after.misses) - (before.hits + before.misses);
  };
  const auto scan10 = allocations([&] { return scan_fn(c0, fx::ones({10, 4}, fx::f64)); });
  const auto scan1000 = allocations([&] { return scan_fn(c0, fx::ones({1000, 4}, fx::f64)); });
  const auto while10 = allocations([&] { return while_fn(c0, fx::scalar<int32_t>(10)); });
  const auto while1000 = allocations([&] { return while_fn(c0, fx::scalar<int32_t>(1000)); });
  CHECK(scan1000 == scan10);
  CHECK(while1000 == while10);
}

// The loop runner on its own: a body (a, b, k) -> (b, a + b, a * k) run step after step, carries
// (a, b) exchanged and k bound once, equals the same steps taken one call at a time; misuse is a
// clear error.
TEST_CASE("loops: LoopRunner runs a body step after step and rejects misuse with clear errors") {
  auto step = [](const Tensor& a, const Tensor& b, const Tensor& k) { return std::make_tuple(b, a + b, a * k); };
  const Tensor a0 = fx::tensor<double>({0.0, 1.0}), b0 = fx::tensor<double>({1.0, 1.0}), k = fx::scalar<double>(2.0);
  fx::Jaxpr j = fx::make_jaxpr(step)(a0, b0, k);
  auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
  {
    fx::runtime::LoopRunner loop(exe);
    loop.carry(0, 0, a0);
    loop.carry(1, 1, b0);
    loop.bind(2, k);
    Tensor a = a0, b = b0;
    for (int i = 0; i < 10; ++i) {
      loop.run();
      std::vector<Tensor> want;
      exe->run({a, b, k}, want);
      CHECK(loop.result(2).to_vector<double>() == want[2].to_vector<double>());
      loop.advance();
      a = want[0], b = want[1];
      CHECK(loop.argument(0).to_vector<double>() == a.to_vector<double>());
      CHECK(loop.argument(1).to_vector<double>() == b.to_vector<double>());
    }
    CHECK(b.to_vector<double>() == std::vector<double>{89.0, 144.0});
    CHECK(a0.to_vector<double>() == std::vector<double>{0.0, 1.0});  // the initial carry is copied, never written
    CHECK(fx::testing::message_of<fx::Error>([&] { loop.carry(0, 0, a0); }) ==
          "[loop] argument 0 is carried twice. Carry each argument once.");
    CHECK(fx::testing::message_of<fx::ShapeError>([&] {
            loop.bind(2, a0);
          }).find("[loop] argument 2 is f64[2] but the body was traced for f64[]") == 0);
    CHECK(fx::testing::message_of<fx::ShapeError>([&] {
            loop.carry(2, 2, k);
          }).find("[loop] output 2 is f64[2] but carried argument 2 is f64[]") == 0);
    CHECK(fx::testing::message_of<fx::Error>([&] { loop.next_buffer(2); }).find("[loop] argument 2 is not carried.") ==
          0);
    CHECK(fx::testing::message_of<fx::Error>([&] {
            loop.bind(3, k);
          }).find("[loop] argument 3 does not exist: the body takes 3 arguments.") == 0);
  }
  // The state went back to the executable's pool usable: a plain call still gives the right values.
  std::vector<Tensor> out;
  exe->run({a0, b0, k}, out);
  CHECK(out[1].to_vector<double>() == std::vector<double>{1.0, 2.0});
}
