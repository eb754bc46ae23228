// checkpoint (rematerialisation): equal to the plain function under every transform, the linear
// Jaxpr stores the call's inputs instead of its residuals, the backward pass recomputes them, and
// the peak live memory of grad drops on a long chain.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <regex>

#include "samples.hpp"
#include "src/allocator.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fx::Tensor;
using Vec = std::vector<Tensor>;

namespace {

Tensor chain3(const Tensor& x) { return fx::sin(fx::sin(fx::sin(x)) * 1.5) + x * x; }

// Checkpointed and plain versions of one loss (of x and a weight w).
Tensor loss(const Tensor& x, const Tensor& w) { return fx::sum(fx::tanh(chain3(x) * w)); }
Tensor loss_ck(const Tensor& x, const Tensor& w) {
  auto ck = fx::checkpoint([](const Tensor& a, const Tensor& b) { return fx::tanh(chain3(a) * b); });
  return fx::sum(ck(x, w));
}

void require_close(const Tensor& got, const Tensor& want) {
  std::string diff = fx::testing::compare_tensors(got, want);
  CHECK_MESSAGE(diff.empty(), diff);
}

size_t count_equations(const fx::Jaxpr& j, const std::string& name) {
  return static_cast<size_t>(std::count_if(j.equations.begin(), j.equations.end(),
                                           [&](const fx::Equation& e) { return e.primitive->name == name; }));
}

std::string params_text(const fx::Params& p) {
  std::ostringstream os;
  p.print(os);
  return os.str();
}

std::ptrdiff_t count_text(const std::string& text, const std::string& word) {
  std::regex re(word);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

}  // namespace

TEST_CASE("checkpoint: equals the plain function in value, grad, jvp, vmap, hessian and with jit") {
  Tensor x = fx::testing::random_tensor({4}, fx::f64, 1), w = fx::testing::random_tensor({4}, fx::f64, 2);
  Tensor t = fx::testing::random_tensor({4}, fx::f64, 3);
  require_close(loss_ck(x, w), loss(x, w));
  require_close(fx::jit(loss_ck)(x, w), loss(x, w));
  // Reverse mode in both arguments.
  auto g = fx::grad(loss, fx::argnums<0, 1>)(x, w);
  auto g_ck = fx::grad(loss_ck, fx::argnums<0, 1>)(x, w);
  require_close(std::get<0>(g_ck), std::get<0>(g));
  require_close(std::get<1>(g_ck), std::get<1>(g));
  // Forward mode.
  auto in_x = [&w](auto f) { return [f, &w](const Tensor& v) { return f(v, w); }; };
  require_close(fx::jvp(in_x(loss_ck), x, t).second, fx::jvp(in_x(loss), x, t).second);
  // vmap of the function and of its gradient.
  Tensor xs = fx::stack({x, x * 0.5, -x}), ws = fx::stack({w, w, w * 2.0});
  require_close(fx::vmap(loss_ck)(xs, ws), fx::vmap(loss)(xs, ws));
  require_close(fx::vmap(fx::grad(loss_ck))(xs, ws), fx::vmap(fx::grad(loss))(xs, ws));
  // Second order, and jit on either side of grad.
  require_close(fx::hessian(in_x(loss_ck))(x), fx::hessian(in_x(loss))(x));
  require_close(fx::jit(fx::grad(loss_ck))(x, w), fx::grad(loss)(x, w));
  require_close(fx::grad(fx::jit(loss_ck))(x, w), fx::grad(loss)(x, w));
  // grad of grad (reverse over reverse) through the checkpoint.
  auto gsum = [](auto f) { return [f](const Tensor& v) { return fx::sum(fx::grad(f)(v) * v); }; };
  require_close(fx::grad(gsum(in_x(loss_ck)))(x), fx::grad(gsum(in_x(loss)))(x));
}

TEST_CASE("checkpoint: pytrees, static arguments, closures over traced values and nesting") {
  Tensor x = fx::testing::random_tensor({3}, fx::f64, 4), y = fx::testing::random_tensor({3}, fx::f64, 5);
  auto body = [](const std::pair<Tensor, Tensor>& p, double scale) {
    return std::make_tuple(fx::sin(p.first) * p.second * scale, fx::exp(p.second));
  };
  auto ck = fx::checkpoint(body);
  auto total = [](auto f) {
    return [f](const Tensor& a, const Tensor& b) {
      auto [u, v] = f(std::make_pair(a, b), 2.0);
      return fx::sum(u * v);
    };
  };
  require_close(fx::grad(total(ck), fx::argnums<1>)(x, y), fx::grad(total(body), fx::argnums<1>)(x, y));
  // A checkpointed function closing over the differentiated value: d/dw sum(sin(x w) w).
  auto closing = [&x](bool use_ck) {
    return [&x, use_ck](const Tensor& w) {
      auto f = [w](const Tensor& v) { return fx::sin(v * w) * w; };
      return fx::sum(use_ck ? fx::checkpoint(f)(x) : f(x));
    };
  };
  require_close(fx::grad(closing(true))(y), fx::grad(closing(false))(y));
  require_close(fx::hessian(closing(true))(y), fx::hessian(closing(false))(y));
  // Nested checkpoints, one of them around a cond.
  auto inner = [](const Tensor& v) { return fx::tanh(v) * v; };
  auto outer = [inner](bool use_ck) {
    return [inner, use_ck](const Tensor& v) {
      auto in = [&](const Tensor& a) { return use_ck ? fx::checkpoint(inner)(a) : inner(a); };
      auto body = [&](const Tensor& a) {
        Tensor b = in(fx::sin(a));
        return fx::cond(
            fx::sum(b) > 100.0, [](const Tensor& c) { return c; }, [](const Tensor& c) { return fx::exp(c); }, in(b));
      };
      return fx::sum(use_ck ? fx::checkpoint(body)(v) : body(v));
    };
  };
  require_close(fx::grad(outer(true))(x), fx::grad(outer(false))(x));
  require_close(fx::hessian(outer(true))(x), fx::hessian(outer(false))(x));
  require_close(fx::jit(fx::grad(outer(true)))(x), fx::grad(outer(false))(x));
}

TEST_CASE("checkpoint: the linear Jaxpr stores the inputs, and the backward pass recomputes the residuals") {
  Tensor x = fx::testing::random_tensor({4}, fx::f64, 6);
  auto f = [](const Tensor& v) { return fx::sin(fx::sin(fx::sin(v))); };
  auto linear = [&x](auto g) {
    return fx::transform_detail::linearize_flat("vjp", {x}, [&g](const Vec& v) { return Vec{g(v[0])}; }).linear;
  };
  // Plain: one residual (a cosine) per sin. Checkpointed: x only, and one checkpoint equation.
  auto plain = linear(f);
  auto ck = linear(fx::checkpoint(f));
  CHECK(plain->consts.size() == 3);
  REQUIRE(ck->consts.size() == 1);
  CHECK(ck->consts[0].impl() == x.impl());
  CHECK(count_equations(*ck, "checkpoint") == 1);
  CHECK(ck->equations.size() == 1);
  // Staged grad: the forward checkpoint computes the primal only (no cosines); the backward one
  // recomputes the sines from x, then the cosines and the cotangents.
  fx::Jaxpr g = fx::make_jaxpr(fx::grad([](const Tensor& v) {
    return fx::sum(fx::checkpoint([](const Tensor& u) { return fx::sin(fx::sin(fx::sin(u))); })(v));
  }))(x);
  fx::typecheck(g);
  REQUIRE(count_equations(g, "checkpoint") == 2);
  std::vector<std::string> calls;  // in order: the forward call, then the backward one
  for (const fx::Equation& e : g.equations)
    if (e.primitive->name == "checkpoint") calls.push_back(params_text(*e.params));
  const std::string &forward = calls[0], &backward = calls[1];
  CHECK(count_text(forward, "sin") == 3);
  CHECK(count_text(forward, "cos") == 0);
  CHECK(count_text(backward, "sin") >= 2);
  CHECK(count_text(backward, "cos") == 3);
}

TEST_CASE("checkpoint: peak live memory of grad drops on a 64-step chain of a 1M-element vector") {
  const int64_t n = int64_t(1) << 20;
  const int kSteps = 64, kSegments = 8;
  auto step = [](const Tensor& v) { return fx::sin(v) * 0.9 + v * 0.2 + 0.1; };
  auto segment = [step](const Tensor& v) {
    Tensor y = v;
    for (int i = 0; i < kSteps / kSegments; ++i) y = step(y);
    return y;
  };
  auto plain = [step](const Tensor& v) {
    Tensor y = v;
    for (int i = 0; i < kSteps; ++i) y = step(y);
    return fx::sum(y);
  };
  auto checkpointed = [segment](const Tensor& v) {
    auto seg = fx::checkpoint(segment);
    Tensor y = v;
    for (int i = 0; i < kSegments; ++i) y = seg(y);
    return fx::sum(y);
  };
  Tensor x = fx::testing::random_tensor({n}, fx::f32, 7);
  auto peak_of = [&x](auto f, Tensor& grad) {
    namespace mem = fx::cpu_memory;
    const size_t before = mem::stats().live_bytes;
    mem::reset_peak();
    grad = fx::grad(f)(x);
    return mem::stats().peak_live_bytes - before;
  };
  Tensor g_plain, g_ck;
  const size_t peak_plain = peak_of(plain, g_plain);
  const size_t peak_ck = peak_of(checkpointed, g_ck);
  std::cout << "[checkpoint] grad peak live bytes over a 64-step chain of f32[" << n << "]: plain " << peak_plain
            << ", 8 checkpointed segments " << peak_ck << " ("
            << static_cast<double>(peak_ck) / static_cast<double>(peak_plain) << "x)\n";
  // Plain stores one f32[n] residual per step; checkpointed stores the 8 segment inputs plus one
  // segment's recomputed residuals at a time.
  CHECK(peak_plain >= static_cast<size_t>(kSteps) * static_cast<size_t>(n) * 4);
  CHECK(static_cast<double>(peak_ck) < 0.5 * static_cast<double>(peak_plain));
  // The gradients agree (the executor's fused kernels round differently from eager ones).
  double worst = fx::max(fx::abs(g_ck - g_plain)).item<double>(), scale = fx::max(fx::abs(g_plain)).item<double>();
  CHECK(worst <= 1e-4 * scale);
}

TEST_CASE("checkpoint: a throw inside the function while tracing leaves no broken state") {
  bool fail = true;
  auto ck = fx::checkpoint([&fail](const Tensor& v) {
    if (fail) throw std::runtime_error("boom");
    return fx::sin(v) * v;
  });
  auto f = [ck](const Tensor& v) { return fx::sum(ck(v)); };
  Tensor x = fx::testing::random_tensor({3}, fx::f64, 8);
  auto jf = fx::jit(f);
  CHECK_THROWS_AS(f(x), std::runtime_error);
  CHECK_THROWS_AS(fx::grad(f)(x), std::runtime_error);
  CHECK_THROWS_AS(fx::vmap(f)(fx::stack({x, x})), std::runtime_error);
  CHECK_THROWS_AS(jf(x), std::runtime_error);
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
  fail = false;
  require_close(fx::grad(f)(x), fx::sin(x) + x * fx::cos(x));
  require_close(jf(x), f(x));
  CHECK(jf.cache_size() == 1);
}
