// jit: caching per signature, composition with every transform, the executor against eager
// evaluation on every primitive's samples, allocation-free steady state, threads (fused groups,
// register programs, tiles and buffer reuse: test_jit_fusion.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <thread>

#include <fluxion/fluxion.hpp>

#include "alloc_count.hpp"
#include "jit_util.hpp"
#include "samples.hpp"
#include "test_util.hpp"
#include "runtime/executable.hpp"

namespace fx = fluxion;
using alloc_count::steady_allocations;
using fluxion::testing::compare_tensors;
using fluxion::testing::message_of;
using fluxion::testing::random_tensor;

using namespace jit_test;

TEST_CASE("jit: same values as eager, traced once per signature") {
  int traces = 0;
  auto f = fx::jit([&traces](const fx::Tensor& x, const fx::Tensor& y) {
    ++traces;
    return fx::sin(x) * y + x * x / (y * y + 1.0);
  });
  fx::Tensor x = random_tensor({3, 4}, fx::f32, 1), y = random_tensor({3, 4}, fx::f32, 2);
  check_close(f(x, y), fx::sin(x) * y + x * x / (y * y + 1.0));
  f(x, y);
  f(random_tensor({3, 4}, fx::f32, 3), y);
  CHECK(traces == 1);
  CHECK(f.cache_size() == 1);
  f(random_tensor({5}, fx::f32, 1), random_tensor({5}, fx::f32, 2));        // new shape: retrace
  f(random_tensor({3, 4}, fx::f64, 1), random_tensor({3, 4}, fx::f64, 2));  // new dtype: retrace
  CHECK(traces == 3);
  CHECK(f.cache_size() == 3);
  // Alternating signatures: each call finds its own entry (the latest one is matched first).
  for (int i = 0; i < 3; ++i) {
    fx::Tensor a = random_tensor({5}, fx::f32, 10 + i), b = random_tensor({5}, fx::f32, 20 + i);
    check_close(f(a, b), fx::sin(a) * b + a * a / (b * b + 1.0));
    check_close(f(x, y), fx::sin(x) * y + x * x / (y * y + 1.0));
  }
  CHECK(traces == 3);
  // The caller's arguments are untouched by the call (the plan takes over its own copies).
  const std::vector<float> x_before = x.to_vector<float>();
  f(x, y);
  REQUIRE(x.impl() != nullptr);
  CHECK(x.to_vector<float>() == x_before);
}

TEST_CASE("jit: static arguments are part of the cache key, compared by value") {
  int traces = 0;
  auto f = fx::jit([&traces](const fx::Tensor& x, int power, const std::string& op) {
    ++traces;
    fx::Tensor r = x;
    for (int i = 1; i < power; ++i) r = r * x;
    return op == "neg" ? -r : r;
  });
  fx::Tensor x = fx::tensor({1.0, 2.0, 3.0});
  check_close(f(x, 3, std::string("id")), fx::tensor({1.0, 8.0, 27.0}));
  check_close(f(x, 2, std::string("neg")), fx::tensor({-1.0, -4.0, -9.0}));
  check_close(f(x, 3, std::string("id")), fx::tensor({1.0, 8.0, 27.0}));
  CHECK(traces == 2);
}

TEST_CASE("jit: a throw while tracing leaves the cache usable") {
  auto f = fx::jit([](const fx::Tensor& x) {
    if (x.ndim() != 1) throw std::runtime_error("rank");
    return fx::sum(x * x);
  });
  CHECK_THROWS_AS(f(fx::zeros({2, 2})), std::runtime_error);
  CHECK(f.cache_size() == 0);
  CHECK(val(f(fx::tensor({1.0, 2.0}))) == doctest::Approx(5.0));
  // A shape error inside the traced function names the operation; the interpreter stack is intact.
  auto g = fx::jit([](const fx::Tensor& a, const fx::Tensor& b) { return a + b; });
  CHECK(message_of<fx::ShapeError>([&] { g(fx::zeros({3}), fx::zeros({4})); }).find("[add]") != std::string::npos);
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
  check_close(g(fx::ones({3}), fx::ones({3})), fx::full({3}, 2.0));
}

TEST_CASE("jit: results the caller holds are never overwritten by later calls") {
  auto f = fx::jit([](const fx::Tensor& x) { return fx::exp(x) * 2.0; });
  fx::Tensor a = f(fx::tensor({0.0, 1.0}));
  fx::Tensor b = f(fx::tensor({2.0, 3.0}));
  check_close(a, fx::tensor({2.0, 2.0 * std::exp(1.0)}));
  check_close(b, fx::tensor({2.0 * std::exp(2.0), 2.0 * std::exp(3.0)}));
}

TEST_CASE("jit: grad(jit(f)), jit(grad(f)), vmap(jit(f)), jit(vmap(grad(f))) agree with eager") {
  fx::Tensor x = random_tensor({6}, fx::f64, 1), y = random_tensor({6}, fx::f64, 2);
  auto g = fx::grad(loss, fx::argnums<0, 1>);
  auto [gx, gy] = g(x, y);
  auto [jx, jy] = fx::grad(fx::jit(loss), fx::argnums<0, 1>)(x, y);
  check_close(jx, gx);
  check_close(jy, gy);
  auto [kx, ky] = fx::jit(g)(x, y);
  check_close(kx, gx);
  check_close(ky, gy);
  fx::Tensor xs = random_tensor({4, 6}, fx::f64, 3), ys = random_tensor({4, 6}, fx::f64, 4);
  check_close(fx::vmap(fx::jit(loss))(xs, ys), fx::vmap(loss)(xs, ys));
  auto per_example = fx::vmap(fx::grad(loss), fx::in_axes(0, fx::none));
  check_close(fx::jit(per_example)(xs, y), per_example(xs, y));
  // Repeated calls reuse the derived (jvp / partial-eval / transpose) Jaxprs.
  auto [jx2, jy2] = fx::grad(fx::jit(loss), fx::argnums<0, 1>)(x, y);
  check_close(jx2, gx);
  (void)jy2;
}

TEST_CASE("jit: hessian, jacfwd, jacrev, hvp and vjp through a jit'd function") {
  auto f = [](const fx::Tensor& x) { return fx::sum(fx::sin(x) * x * x); };
  auto vec = [](const fx::Tensor& x) { return fx::tanh(x) * x; };
  fx::Tensor x = random_tensor({5}, fx::f64, 5), v = random_tensor({5}, fx::f64, 6);
  check_close(fx::hessian(fx::jit(f))(x), fx::hessian(f)(x));
  check_close(fx::jit(fx::hessian(f))(x), fx::hessian(f)(x));
  check_close(fx::jacfwd(fx::jit(vec))(x), fx::jacfwd(vec)(x));
  check_close(fx::jacrev(fx::jit(vec))(x), fx::jacrev(vec)(x));
  check_close(fx::hvp(fx::jit(f), x, v), fx::hvp(f, x, v));
  auto [y, pullback] = fx::vjp(fx::jit(vec), x);
  check_close(y, vec(x));
  auto [ct1] = pullback(v);
  auto [ct2] = pullback(v * 2.0);
  check_close(ct1, std::get<0>(fx::vjp(vec, x).second(v)));
  check_close(ct2, ct1 * 2.0);
}

TEST_CASE("jit: values closed over from an enclosing transform are inputs, not stale constants") {
  // d/dx [x * jit(y -> x * y)(x)] = d/dx x^3 = 3 x^2: x is a grad tracer inside the jit'd lambda.
  auto outer = [](const fx::Tensor& x) {
    auto inner = fx::jit([x](const fx::Tensor& y) { return x * y; });
    return x * inner(x);
  };
  CHECK(val(fx::grad(outer)(fx::scalar(2.0))) == doctest::Approx(12.0));
  CHECK(val(fx::grad(outer)(fx::scalar(3.0))) == doctest::Approx(27.0));
}

TEST_CASE("jit: make_jaxpr shows a jit'd call as one jit_call holding its Jaxpr") {
  auto f = fx::jit([](const fx::Tensor& x) { return fx::sin(x) * 2.0; });
  auto g = [f](const fx::Tensor& x) { return f(x) + x; };
  std::ostringstream os;
  os << fx::make_jaxpr(g)(fx::zeros({3}, fx::f32));
  CHECK(os.str() ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = jit_call[name=jit jaxpr={ lambda ; a:f32[3]. let\n"
        "          b:f32[3] = sin a\n"
        "          c:f32[3] = mul b 2.0:f32[]\n"
        "        in (c,) }] a\n"
        "    c:f32[3] = add b a\n"
        "  in (c,) }");
}

TEST_CASE("jit: steady-state calls of jit(grad(f)) allocate nothing") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return fx::sin(x) * y + x * x / y; };
  auto g = fx::jit(fx::grad(f, fx::argnums<0, 1>));
  fx::Tensor x = fx::scalar(0.5), y = fx::scalar(1.5);
  CHECK(steady_allocations([&] { return g(x, y); }, 100) == 0);
  auto [dx, dy] = g(x, y);
  CHECK(val(dx) == doctest::Approx(std::cos(0.5) * 1.5 + 2 * 0.5 / 1.5));
  CHECK(val(dy) == doctest::Approx(std::sin(0.5) - 0.25 / (1.5 * 1.5)));
}

TEST_CASE("jit: movement kernels (slice, pad, transpose, concatenate, broadcasts) allocate nothing per call") {
  // Their strides and box dims live in cpu::SmallVector: bench W7's Rosenbrock Hessians made 32-37
  // allocations a call in std::vector temporaries before.
  auto rosenbrock = [](const fx::Tensor& x) {
    const int64_t d = x.shape()[0];
    fx::Tensor head = fx::slice(x, {0}, {d - 1}), tail = fx::slice(x, {1}, {d});
    return fx::sum(100.0 * fx::square(tail - fx::square(head)) + fx::square(1.0 - head));
  };
  for (int64_t d : {2, 10}) {
    CAPTURE(d);
    auto h = fx::jit(fx::hessian(rosenbrock));
    fx::Tensor x = random_tensor({d}, fx::f32, 40);
    CHECK(steady_allocations([&] { return h(x); }) == 0);
    check_close(h(x), fx::hessian(rosenbrock)(x));
  }
  auto moves = [](const fx::Tensor& x) {
    fx::Tensor c = fx::concatenate({x, fx::slice(x, {0, 1}, {3, 3})}, 1);   // [3, 6]
    fx::Tensor t = fx::transpose(c, {1, 0});                                // [6, 3]
    return fx::lax::pad(t, fx::scalar(0.0), {1, 0}, {0, 2}, {0, 1}) + 1.0;  // [7, 7]
  };
  auto m = fx::jit(moves);
  fx::Tensor x = random_tensor({3, 4}, fx::f64, 41);
  CHECK(steady_allocations([&] { return m(x); }) == 0);
  check_close(m(x), moves(x));
}

TEST_CASE(
    "jit: products with permuted operands, interleaved reductions, gathers and views of arguments allocate nothing per "
    "call") {
  // dot_general's layout planning and operand copies, a reduction over interleaved axes, the
  // clamped indices of gather / scatter_add (the GMM gradient) and the views that reshape an
  // argument (rebound each call) all ran through std::vector or make_shared before.
  auto f = [](const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& idx) {
    fx::Tensor p = fx::lax::dot_general(a, b, {{0, 2}, {2, 0}}, {{}, {}});  // [4, 5]: a permuted copy
    fx::Tensor r = fx::sum(fx::reshape(a, {3, 2, 4}) * 2.0, {0, 2});        // interleaved axes
    return fx::sum(fx::take(p, idx, 1)) + fx::sum(r);
  };
  fx::Tensor a = random_tensor({3, 4, 2}, fx::f64, 42), b = random_tensor({2, 5, 3}, fx::f64, 43);
  fx::Tensor idx = fx::from_vector(std::vector<int32_t>{4, 0, 2, 2}, fx::Shape{4});
  auto value = fx::jit(f);
  auto gradient = fx::jit(fx::grad(f, fx::argnums<0, 1>));
  CHECK(steady_allocations([&] { return value(a, b, idx); }) == 0);
  CHECK(steady_allocations([&] { return gradient(a, b, idx); }) == 0);
  check_close(value(a, b, idx), f(a, b, idx));
  auto [ga, gb] = gradient(a, b, idx);
  auto [wa, wb] = fx::grad(f, fx::argnums<0, 1>)(a, b, idx);
  check_close(ga, wa);
  check_close(gb, wb);
  // A view of an argument returned to the caller is not rebound by the next call.
  auto view = fx::jit([](const fx::Tensor& x) { return fx::reshape(x, {6}); });
  fx::Tensor x1 = random_tensor({2, 3}, fx::f32, 44), x2 = random_tensor({2, 3}, fx::f32, 45);
  fx::Tensor r1 = view(x1), r2 = view(x2);
  check_close(r1, fx::reshape(x1, {6}));
  check_close(r2, fx::reshape(x2, {6}));
}

TEST_CASE("jit: concurrent calls from several threads are safe") {
  auto f = fx::jit([](const fx::Tensor& x) { return fx::sum(fx::tanh(x) * x); });
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        fx::Tensor x = random_tensor({static_cast<int64_t>(100 + t)}, fx::f64, static_cast<uint64_t>(i));
        if (!compare_tensors(f(x), fx::sum(fx::tanh(x) * x)).empty()) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  CHECK(f.cache_size() == 4);
}

namespace {
bool all_floating(const std::vector<fx::Tensor>& ts) {
  for (const fx::Tensor& t : ts)
    if (!fx::is_floating(t.dtype())) return false;
  return true;
}
}  // namespace

TEST_CASE("jit: the executor matches eager evaluation on every primitive's samples, and under vjp and vmap") {
  size_t checked = 0, vjps = 0, vmaps = 0;
  for (const auto& [name, samples] : fluxion::testing::sample_registry()) {
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const auto& s : samples.make(dt)) {
        CAPTURE(name);
        CAPTURE(s.label);
        std::vector<fx::Tensor> want = s.fn(s.inputs);
        check_close_reordered(fx::jit(s.fn)(s.inputs), want);
        ++checked;
        if (s.differentiable && all_floating(s.inputs) && all_floating(want)) {
          std::vector<fx::Tensor> cts;
          for (size_t k = 0; k < want.size(); ++k)
            cts.push_back(random_tensor(want[k].shape(), want[k].dtype(), 100 + k));
          auto pull = [fn = s.fn](const std::vector<fx::Tensor>& in, const std::vector<fx::Tensor>& ct) {
            return std::get<0>(fx::vjp(fn, in).second(ct));
          };
          check_close_reordered(fx::jit(pull)(s.inputs, cts), pull(s.inputs, cts));
          ++vjps;
        }
        // Batch of two: each input stacked twice on a new leading axis.
        std::vector<fx::Tensor> batched;
        for (const fx::Tensor& t : s.inputs) batched.push_back(fx::stack({t, t}));
        check_close_reordered(fx::jit(fx::vmap(s.fn))(batched), fx::vmap(s.fn)(batched));
        ++vmaps;
      }
    }
  }
  MESSAGE("[jit] executor checks: " << checked << " samples, " << vjps << " vjps, " << vmaps << " vmaps");
  CHECK(checked > 500);
}

TEST_CASE("jit: a lone large elementwise operation is split over the threads as a fused step of one member") {
  // With several threads, an operation alone in its group with 2^16+ elements (W5's final adds of
  // two weight gradients) runs as a fused step, whose blocks go to every thread; on one thread,
  // and below that size, it stays a kernel. Values equal eager either way, a scalar operand too.
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) {
    return fx::lax::dot_general(x, y, {{1}, {0}}, {{}, {}}) + y;
  };
  auto g = [](const fx::Tensor& x, const fx::Tensor& y) { return x * 0.5 + y; };
  const int before = fx::num_threads();
  for (int threads : {1, 2}) {
    fx::set_num_threads(threads);
    for (int64_t n : {int64_t(100), int64_t(300)}) {  // 10^4 and 9 * 10^4 elements
      CAPTURE(threads);
      CAPTURE(n);
      fx::Tensor x = random_tensor({n, n}, fx::f32, 51), y = random_tensor({n, n}, fx::f32, 52);
      const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(f)(x, y), fx::Device::cpu())->describe();
      const bool split = threads > 1 && n * n >= (int64_t(1) << 16);
      CHECK_MESSAGE((plan.find("fused[1 ops") != std::string::npos) == split, plan);
      check_within({fx::jit(f)(x, y)}, {f(x, y)}, 1e-5);
      check_within({fx::jit(g)(x, y)}, {g(x, y)}, 1e-6);
    }
  }
  fx::set_num_threads(before);
}

TEST_CASE("jit: independent products run side by side on the threads, one thread each") {
  // On 2 threads, a run of consecutive kernels that do not read each other's outputs goes in rounds
  // (runtime/side_by_side.cpp): two equal large products side by side and the third alone
  // (with every thread); a product reading one of them (p . e) waits for the run; two small
  // products (2^20 multiply-adds, each on one thread anyway) side by side. u = tanh(x) dies in the
  // run while q and r are written: their storage must not be u's. On 1 thread nothing changes.
  auto f = [](const fx::Tensor& x, const fx::Tensor& w, const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& e) {
    fx::Tensor u = fx::tanh(x);
    fx::Tensor p = fx::lax::dot_general(u, a, {{1}, {0}}, {{}, {}});
    fx::Tensor q = fx::lax::dot_general(w, b, {{1}, {0}}, {{}, {}});
    fx::Tensor r = fx::lax::dot_general(w, a, {{1}, {0}}, {{}, {}});
    fx::Tensor pe = fx::lax::dot_general(p, e, {{1}, {0}}, {{}, {}});
    return std::make_tuple(p + q * r, pe);
  };
  auto g = [](const fx::Tensor& s, const fx::Tensor& t, const fx::Tensor& d) {
    return fx::lax::dot_general(s, d, {{1}, {0}}, {{}, {}}) - fx::lax::dot_general(t, d, {{1}, {0}}, {{}, {}});
  };
  const int before = fx::num_threads();
  for (int threads : {1, 2}) {
    fx::set_num_threads(threads);
    for (fx::DType dtype : {fx::f32, fx::f64}) {
      CAPTURE(threads);
      CAPTURE(dtype);
      // 128 x 256 x 128: 2^22 multiply-adds, a product that threads itself when alone.
      fx::Tensor x = random_tensor({128, 256}, dtype, 61), w = random_tensor({128, 256}, dtype, 62);
      fx::Tensor a = random_tensor({256, 128}, dtype, 63), b = random_tensor({256, 128}, dtype, 64);
      fx::Tensor e = random_tensor({128, 128}, dtype, 65);
      const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(f)(x, w, a, b, e), fx::Device::cpu())->describe();
      const bool side = threads > 1;
      CHECK_MESSAGE((plan.find("side by side[dot_general | dot_general]\ndot_general\ndot_general\n") !=
                     std::string::npos) == side,
                    plan);
      const double tol = dtype == fx::f32 ? 1e-4 : 1e-11;
      auto got = fx::jit(f)(x, w, a, b, e);
      auto want = f(x, w, a, b, e);
      check_within({std::get<0>(got), std::get<1>(got)}, {std::get<0>(want), std::get<1>(want)}, tol);

      fx::Tensor s = random_tensor({64, 256}, dtype, 66), t = random_tensor({64, 256}, dtype, 67);
      fx::Tensor d = random_tensor({256, 64}, dtype, 68);
      const std::string small = fx::compile_jaxpr(fx::make_jaxpr(g)(s, t, d), fx::Device::cpu())->describe();
      CHECK_MESSAGE((small.find("side by side[dot_general | dot_general]") != std::string::npos) == side, small);
      auto jg = fx::jit(g);
      check_within({jg(s, t, d)}, {g(s, t, d)}, tol);
      if (dtype == fx::f32) CHECK(steady_allocations([&] { jg(s, t, d); }, 5) == 0);
    }
  }
  fx::set_num_threads(before);
}

TEST_CASE("jit: a kernel throwing side by side throws the Error from the call and leaves the function usable") {
  // Two independent 384 x 384 solves run side by side on 2 threads; a singular matrix makes its
  // kernel throw on a worker thread, and the call throws that Error. The next call works.
  auto f = [](const fx::Tensor& a1, const fx::Tensor& a2, const fx::Tensor& b) {
    return fx::solve(a1, b) + fx::solve(a2, b);
  };
  const int before = fx::num_threads();
  fx::set_num_threads(2);
  const int64_t n = 384;
  fx::Tensor good = fx::eye(n, fx::f64) * 2.0 + random_tensor({n, n}, fx::f64, 71) * 0.01;
  fx::Tensor b = random_tensor({n}, fx::f64, 72);
  fx::Tensor singular = fx::zeros({n, n}, fx::f64);
  const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(f)(good, good, b), fx::Device::cpu())->describe();
  CHECK_MESSAGE(plan.find("side by side[linalg_solve | linalg_solve]") != std::string::npos, plan);
  auto jf = fx::jit(f);
  for (int bad : {0, 1}) {
    CAPTURE(bad);
    const std::string m = message_of<fx::Error>([&] { jf(bad ? good : singular, bad ? singular : good, b); });
    CHECK_MESSAGE(m.find("[linalg_solve] the matrix f64[384,384] is singular") == 0, m);
    check_within({jf(good, good, b)}, {f(good, good, b)}, 1e-10);
  }
  fx::set_num_threads(before);
}
