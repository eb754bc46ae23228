// jit: caching per signature, composition with every transform, the executor against eager
// evaluation on every primitive's samples, fusion and buffer reuse, allocation-free steady state.
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
#include "samples.hpp"
#include "test_util.hpp"
#include "transforms/executor.hpp"

namespace fx = fluxion;
using fluxion::testing::compare_tensors;
using fluxion::testing::message_of;
using fluxion::testing::random_tensor;
using alloc_count::steady_allocations;

namespace {
double val(const fx::Tensor& t) { return t.item<double>(); }

void check_close(const fx::Tensor& got, const fx::Tensor& want) {
  std::string diff = compare_tensors(got, want);
  CHECK_MESSAGE(diff.empty(), diff);
}
void check_close(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) check_close(got[i], want[i]);
}

// The passes may reorder a product's accumulation (dot_general with swapped operands), which in
// f32 moves a sum of K terms by ~K ulps of its largest term: compare f32 against the scale of the
// whole result; f64 and integers stay exact to compare_tensors' tolerances.
void check_close_reordered(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i].dtype() != fx::f32 || compare_tensors(got[i], want[i]).empty()) {
      check_close(got[i], want[i]);
      continue;
    }
    std::vector<double> g = got[i].to_vector<double>(), w = want[i].to_vector<double>();
    double scale = 1;
    for (double v : w) scale = std::isfinite(v) ? std::max(scale, std::abs(v)) : scale;
    for (size_t k = 0; k < g.size(); ++k) {
      bool same = (std::isnan(g[k]) && std::isnan(w[k])) || g[k] == w[k] || std::abs(g[k] - w[k]) <= 1e-5 * scale;
      if (!same) {
        CHECK_MESSAGE(same, "element " << k << ": got " << g[k] << ", want " << w[k] << " (scale " << scale << ")");
        break;
      }
    }
  }
}

/// Each got[i] within tol * (1 + |want|) of want[i] elementwise (the first miss per output reported).
void check_within(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<double> g = got[i].to_vector<double>(), w = want[i].to_vector<double>();
    REQUIRE(g.size() == w.size());
    for (size_t k = 0; k < g.size(); ++k)
      if (std::abs(g[k] - w[k]) > tol * (1 + std::abs(w[k]))) {
        CHECK_MESSAGE(false, "output " << i << " element " << k << ": got " << g[k] << ", want " << w[k]);
        break;
      }
  }
}

fx::Tensor loss(const fx::Tensor& x, const fx::Tensor& y) { return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x)) * y); }
}  // namespace

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
  f(random_tensor({5}, fx::f32, 1), random_tensor({5}, fx::f32, 2));  // new shape: retrace
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

TEST_CASE("jit: an elementwise chain runs as one fused group over blocks") {
  auto f = [](const fx::Tensor& x) { return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x))); };
  auto g = fx::grad(f);
  fx::Tensor x = random_tensor({5000}, fx::f32, 7);
  fx::Jaxpr j = fx::make_jaxpr(g)(x);
  auto exe = fx::compile_jaxpr(j, fx::Device::cpu());
  std::string plan = exe->describe();
  CHECK_MESSAGE(plan.find("0 kernels, 1 fused groups") != std::string::npos, plan);
  check_close(fx::jit(g)(x), g(x));
}

TEST_CASE("jit: elementwise groups of tile forms run as register programs, matching eager") {
  // Every member of these groups has a TileOp, so the group runs as a register program over whole
  // tiles and the block path takes the remainder. Covered: each tile operation; a value kept in
  // the accumulator along a chain, and values read again later (stored to scratch, incl. by the
  // member after a sum); left and right operands of sub and div (the accumulator on either side);
  // x * x from one operand; literal and rank-0 operands; an intermediate escaping as an output;
  // two full sums; sizes below, at, between and above whole tiles, and groups split over threads.
  const int before = fx::num_threads();
  for (int threads : {1, 2}) {
    fx::set_num_threads(threads);
    for (fx::DType dtype : {fx::f32, fx::f64}) {
      for (int64_t n : {int64_t(64), int64_t(100), int64_t(1000), int64_t(5003), int64_t(70000), int64_t(131079)}) {
        CAPTURE(threads);
        CAPTURE(dtype);
        CAPTURE(n);
        auto f = [](const fx::Tensor& x, const fx::Tensor& y, const fx::Tensor& s) {
          fx::Tensor e = fx::exp(-(x * x));
          fx::Tensor u = fx::tanh(x) * x + e;                      // escapes
          fx::Tensor v = (y - u) / (y * y + 1.5);                  // accumulator on the right of sub
          fx::Tensor w = 2.0 - v;                                  // literal on the left
          fx::Tensor z = fx::sqrt(y * y + 1.0);
          fx::Tensor l = fx::log(z + e) / (1.0 + x * x);           // e read again, divisor in the accumulator
          fx::Tensor q = s * w - l / s;                            // rank-0 operand, both sides
          fx::Tensor r = e * e;
          fx::Tensor y2 = y * 3.0;
          fx::Tensor sum_y2 = fx::sum(y2);
          fx::Tensor y3 = y2 - r;                                  // read after the sum
          return std::make_tuple(q, u, fx::sum(q * x), sum_y2, y3);
        };
        fx::Tensor x = random_tensor({n}, dtype, 41), y = random_tensor({n}, dtype, 42);
        fx::Tensor s = fx::full({}, 0.75, dtype);
        auto exe = fx::compile_jaxpr(fx::make_jaxpr(f)(x, y, s), fx::Device::cpu());
        const std::string plan = exe->describe();
        CHECK_MESSAGE(plan.find("register program") != std::string::npos, plan);
        CHECK_MESSAGE(plan.find("0 kernels, 1 fused groups") != std::string::npos, plan);
        auto got = fx::jit(f)(x, y, s);
        auto wide = [](const fx::Tensor& t) { return fx::lax::convert_element_type(t, fx::f64); };
        auto want = f(wide(x), wide(y), wide(s));
        check_within({std::get<0>(got), std::get<1>(got), std::get<2>(got), std::get<3>(got), std::get<4>(got)},
                     {std::get<0>(want), std::get<1>(want), std::get<2>(want), std::get<3>(want), std::get<4>(want)},
                     dtype == fx::f32 ? 2e-5 : 1e-12);
      }
    }
  }
  fx::set_num_threads(before);
  {
    // Members are reordered so a value's only reader runs right after it: W1's gradient reads
    // exp(-x^2) once, in x * exp(-x^2), so that product moves up (`mul# x0` right after `exp`;
    // keeping the group's order stores the exp and the sum before it, 3 instructions more).
    // Multiplies are not contracted with the adds after them (eager rounds both); -(x x) is one
    // negated product (nmul: the same bits).
    auto w1 = [](const fx::Tensor& x) { return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x))); };
    fx::Tensor x = random_tensor({4099}, fx::f32, 44);
    auto exe = fx::compile_jaxpr(fx::make_jaxpr(fx::grad(w1))(x), fx::Device::cpu());
    const std::string plan = exe->describe();
    CHECK_MESSAGE(plan.find("register program of 15 instructions]\n  load x0; nmul acc; exp; mul# x0; store s0; "
                            "load x0; tanh; store s1; mul acc; sub# c; mul# x0; add# s1; sub s0; sub s0; store x1;\n") !=
                      std::string::npos,
                  plan);
    check_close(fx::jit(fx::grad(w1))(x), fx::grad(w1)(x));
  }
  {
    // A program longer than the interpreter's inline array of handler addresses (64) takes the
    // per-thread array instead: a chain of 90 members, on 1 and 2 threads.
    auto chain = [](const fx::Tensor& x) {
      fx::Tensor y = x;
      for (int i = 0; i < 30; ++i) y = fx::tanh(y * 1.25 + x) - 0.125 * x;
      return y;
    };
    fx::Tensor x = random_tensor({5003}, fx::f32, 45);
    const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(chain)(x), fx::Device::cpu())->describe();
    const size_t at = plan.find("register program of ");
    REQUIRE_MESSAGE(at != std::string::npos, plan);
    CHECK_MESSAGE(std::stoi(plan.substr(at + 20)) > 64, plan);
    for (int threads : {1, 2}) {
      fx::set_num_threads(threads);
      check_within({fx::jit(chain)(x)}, {chain(fx::lax::convert_element_type(x, fx::f64))}, 1e-4);
    }
    fx::set_num_threads(before);
  }
  // A member without a tile form (sin) keeps the whole group on the block path.
  auto g = [](const fx::Tensor& x) { return fx::sin(x) * x + 1.0; };
  fx::Tensor x = random_tensor({1000}, fx::f32, 43);
  auto exe = fx::compile_jaxpr(fx::make_jaxpr(g)(x), fx::Device::cpu());
  CHECK(exe->describe().find("register program") == std::string::npos);
  check_close(fx::jit(g)(x), g(x));
}

TEST_CASE("jit: register programs round each product before the add reading it, as eager does") {
  // No multiply-add contraction (issue 36): each form (acc b + c, acc b - c, c - acc b, -(acc b))
  // with each operand source (external, scratch, literal, rank-0, the accumulator itself), in f32
  // and f64, over whole tiles and a remainder, gives eager's bits, in range and where a product
  // overflows next to an infinite addend (fused: -inf; rounded first, as eager: NaN).
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(dtype);
    auto f = [](const fx::Tensor& x, const fx::Tensor& y, const fx::Tensor& s) {
      fx::Tensor e = fx::exp(x);
      fx::Tensor a = x * y + e;              // x * y, then + e in scratch
      fx::Tensor b = fx::sqrt(a * a + 1.0);  // acc * acc, then a literal
      fx::Tensor c = 3.0 - b * s;            // rank-0 factor, literal minuend
      fx::Tensor d = c * y - x;              // external subtrahend
      fx::Tensor g = -(d * e);
      return std::make_tuple(g, a * y - x);
    };
    for (int64_t n : {int64_t(64), int64_t(4099)}) {
      CAPTURE(n);
      fx::Tensor x = random_tensor({n}, dtype, 51), y = random_tensor({n}, dtype, 52);
      fx::Tensor s = fx::full({}, 0.625, dtype);
      const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(f)(x, y, s), fx::Device::cpu())->describe();
      CHECK_MESSAGE(plan.find("register program") != std::string::npos, plan);
      for (const char* form : {"madd", "msub", "nmadd"})
        CHECK_MESSAGE(plan.find(std::string(form) + " ") == std::string::npos, form << " in\n" << plan);
      auto got = fx::jit(f)(x, y, s);
      auto want = f(x, y, s);
      for (auto [g, w] : {std::make_pair(std::get<0>(got), std::get<0>(want)), std::make_pair(std::get<1>(got), std::get<1>(want))}) {
        std::vector<double> gv = g.to_vector<double>(), wv = w.to_vector<double>();
        for (size_t i = 0; i < gv.size(); ++i) {
          if (gv[i] == wv[i] || (std::isnan(gv[i]) && std::isnan(wv[i]))) continue;
          CHECK_MESSAGE(gv[i] == wv[i], "element " << i << ": jit " << gv[i] << ", eager " << wv[i]);
          break;
        }
      }
    }
    // x y overflowing, z = -inf: x y + z is NaN (inf - inf) in eager mode, and under jit.
    auto fma_form = [](const fx::Tensor& x, const fx::Tensor& y, const fx::Tensor& z) { return x * y + z; };
    const double big = dtype == fx::f32 ? 1e30 : 1e300;
    fx::Tensor x = fx::full({4096}, big, dtype), y = fx::full({4096}, big, dtype), z = fx::full({4096}, -INFINITY, dtype);
    CHECK(std::isnan(fma_form(x, y, z).to_vector<double>()[0]));
    std::vector<double> jitted = fx::jit(fma_form)(x, y, z).to_vector<double>();
    CHECK(std::isnan(jitted[0]));
    CHECK(std::isnan(jitted[4095]));
  }
  // -(x y) gives the uncontracted values bit for bit, the sign of zero products too
  // (+0 * 1, 1 * -0, -0 * -1, 1 * 2).
  auto neg_product = [](const fx::Tensor& x, const fx::Tensor& y) { return -(x * y); };
  std::vector<float> xs(4096), ys(4096);
  const float pairs[4][2] = {{0.0f, 1.0f}, {1.0f, -0.0f}, {-0.0f, -1.0f}, {1.0f, 2.0f}};
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = pairs[i % 4][0], ys[i] = pairs[i % 4][1];
  fx::Tensor x = fx::from_vector(xs), y = fx::from_vector(ys);
  std::vector<float> got = fx::jit(neg_product)(x, y).to_vector<float>();
  std::vector<float> want = neg_product(x, y).to_vector<float>();
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(got[i] == want[i]);
    CHECK(std::signbit(got[i]) == std::signbit(want[i]));
  }
}

TEST_CASE("jit: broadcasts inside fused groups, one value per block row, match eager") {
  // A value broadcast along trailing dims is constant over runs of a block; the executor keeps
  // such blocks as one value and feeds them to later members as scalars. Shapes where rows cross
  // block boundaries (700, 5003 columns), rows longer than a block (2048), short rows (3), a last
  // block shorter than a vector (8193 elements), and an output computed from broadcasts only.
  struct Case {
    fx::Shape v_shape, shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {{3}, {3, 700}, {0}},       {{5}, {5, 2048}, {0}},    {{2000}, {2000, 3}, {0}},
      {{1}, {1, 5003}, {0}},      {{4}, {4, 3, 700}, {0}},  {{3, 2}, {3, 2, 1365}, {0, 1}},
      {{8193}, {8193, 1}, {0}},   {{700}, {3, 700}, {1}},
      // Rows repeated along a middle dim (copied from the output, doubling), cycles crossing blocks.
      {{25, 1, 2}, {25, 1000, 2}, {0, 1, 2}}, {{25, 2}, {25, 1000, 2}, {0, 2}}, {{4, 3}, {4, 700, 3}, {0, 2}},
      {{2, 5}, {2, 333, 5}, {0, 2}}, {{3, 2}, {3, 50, 7, 2}, {0, 3}}, {{7}, {3, 1100, 7}, {2}},
      // The whole operand repeated along leading dims, longer than a block: blocks inside one
      // repetition read it in place, blocks across two are copied.
      {{1500}, {5, 1500}, {1}}, {{3000}, {4, 3000}, {1}}, {{2, 1200}, {3, 2, 1200}, {1, 2}},
      // Shorter than a block, in groups of 4096 elements or more: blocks read a replica of the
      // operand repeated to a block's length plus a period, on every thread.
      {{160}, {1000, 160}, {1}}, {{1023}, {5, 1023}, {1}}, {{3}, {70000, 3}, {1}}, {{2, 10}, {300, 2, 10}, {1, 2}},
  };
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    for (const Case& c : cases) {
      CAPTURE(c.shape);
      auto f = [&](const fx::Tensor& v, const fx::Tensor& w) {
        fx::Tensor t = fx::lax::broadcast_in_dim(v, c.shape, c.dims);
        fx::Tensor u = fx::exp(t) * 0.5 + fx::tanh(t);  // from the broadcast only
        return std::vector<fx::Tensor>{u * w + fx::sin(t) - w, fx::exp(-(t * t)) + 1.0};
      };
      fx::Tensor v = random_tensor(c.v_shape, dtype, 11);
      fx::Tensor w = random_tensor(c.shape, dtype, 12);
      check_close(fx::jit(f)(v, w), f(v, w));
      const bool short_period = c.v_shape.num_elements() < 1024 && c.dims.front() > 0;
      if (short_period && c.shape.num_elements() >= 4096) {
        const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(f)(v, w), fx::Device::cpu())->describe();
        CHECK_MESSAGE(plan.find("periodic replicas") != std::string::npos, plan);
      }
    }
  }
}

TEST_CASE("jit: broadcasts along trailing dims are read per row by binary members, match eager") {
  // A broadcast constant along runs of R elements is not filled into a block when its readers in
  // the group are binary members: they read one value per run. Runs of 1 and 3 (the fill path),
  // 32, 1000 and 1500 (runs crossing the 1024-element blocks, blocks inside one run), a size-1
  // operand (one run), a group large enough to split over threads; left and right operands of
  // sub and div, several readers, a reader that needs the block (tanh), both operands per row, a
  // literal operand, and the broadcast escaping the group as an output.
  struct Case {
    fx::Shape v_shape, shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {{2000}, {2000, 1}, {0}}, {{1000}, {1000, 3}, {0}},     {{100}, {100, 32}, {0}},
      {{5}, {5, 1000}, {0}},    {{7}, {7, 1500}, {0}},        {{4, 3}, {4, 3, 100}, {0, 1}},
      {{1}, {5000}, {0}},       {{3}, {3, 2, 700}, {0}},      {{70}, {70, 1000}, {0}},  // the last: threads
  };
  using Fn = std::vector<fx::Tensor> (*)(const fx::Tensor&, const fx::Tensor&, const fx::Tensor&);
  const std::vector<std::pair<const char*, Fn>> fns = {
      {"left sub", [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{t - w};
       }},
      {"right div", [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{w / t};
       }},
      {"left div, right sub, with other members",
       [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{fx::exp(w) * 0.5 + (w - t) * (t / w) + fx::maximum(w, t)};
       }},
      {"a reader that needs the block", [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{fx::tanh(t) * w + w / t};
       }},
      {"both operands per row, and a literal", [](const fx::Tensor& t, const fx::Tensor& u, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{(t / u) * w + (t - 1.5) * (u * t) - w / u};
       }},
      {"the broadcast escapes the group", [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{t, w - t, t / w};
       }},
  };
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    for (const Case& c : cases) {
      for (const auto& [name, fn] : fns) {
        const std::string label = std::string(name) + ", " + fx::dtype_name(dtype);
        CAPTURE(label);
        CAPTURE(c.shape);
        Fn g = fn;
        auto f = [&c, g](const fx::Tensor& v, const fx::Tensor& u, const fx::Tensor& w) {
          return g(fx::lax::broadcast_in_dim(v, c.shape, c.dims), fx::lax::broadcast_in_dim(u, c.shape, c.dims), w);
        };
        fx::Tensor v = random_tensor(c.v_shape, dtype, 31, 0.5, 2.0), u = random_tensor(c.v_shape, dtype, 32, 0.5, 2.0);
        fx::Tensor w = random_tensor(c.shape, dtype, 33, 0.5, 2.0);
        check_close(fx::jit(f)(v, u, w), f(v, u, w));
      }
    }
  }
  // Integers take the kernels' scalar-functor path (wrapping sub, truncating div, comparisons).
  for (int64_t run : {32, 1500}) {
    CAPTURE(run);
    auto f = [run](const fx::Tensor& v, const fx::Tensor& w) {
      fx::Tensor t = fx::lax::broadcast_in_dim(v, {7, run}, {0});
      return std::vector<fx::Tensor>{t - w, w / t, fx::lax::lt(t, w)};
    };
    fx::Tensor v = random_tensor({7}, fx::i32, 36, -50, 50), w = random_tensor({7, run}, fx::i32, 37, -50, 50);
    check_close(fx::jit(f)(v, w), f(v, w));
  }
  // Runs of 32 are read per row (the broadcast never runs); runs of 3 are filled as before.
  auto plan_of = [](int64_t rows, int64_t run) {
    auto f = [&](const fx::Tensor& v, const fx::Tensor& w) {
      return fx::lax::broadcast_in_dim(v, {rows, run}, {0}) / w;
    };
    fx::Tensor v = random_tensor({rows}, fx::f32, 34), w = random_tensor({rows, run}, fx::f32, 35);
    return fx::compile_jaxpr(fx::make_jaxpr(f)(v, w), fx::Device::cpu())->describe();
  };
  CHECK_MESSAGE(plan_of(100, 32).find("1 broadcasts read by rows") != std::string::npos, plan_of(100, 32));
  CHECK_MESSAGE(plan_of(1000, 3).find("read by rows") == std::string::npos, plan_of(1000, 3));
}

TEST_CASE("jit: comparisons and dtype conversions fuse with the arithmetic around them") {
  // relu's derivative (eq -> bool -> f32), a narrowing f64 -> f32 and a widening bool -> f64 in one
  // group: converted blocks never overwrite inputs not read yet, whatever the element sizes.
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor r = fx::maximum(x, 0.0);
    fx::Tensor mask = fx::lax::convert_element_type(fx::lax::eq(x, r), fx::f32);
    fx::Tensor narrow = fx::lax::convert_element_type(fx::lax::convert_element_type(y, fx::f64) * 3.0, fx::f32);
    fx::Tensor wide = fx::lax::convert_element_type(fx::lax::gt(x, y), fx::f64);
    return std::make_tuple(mask * y + narrow, wide + 1.0);
  };
  auto g = fx::grad([](const fx::Tensor& x) { return fx::sum(fx::maximum(x, 0.0) * x); });
  for (int64_t n : {5, 1000, 5000}) {
    fx::Tensor x = random_tensor({n}, fx::f32, 21), y = random_tensor({n}, fx::f32, 22);
    auto exe = fx::compile_jaxpr(fx::make_jaxpr(f)(x, y), fx::Device::cpu());
    CHECK_MESSAGE(exe->describe().find("convert_element_type") == std::string::npos, exe->describe());
    auto [a, b] = fx::jit(f)(x, y);
    auto [wa, wb] = f(x, y);
    check_close(a, wa);
    check_close(b, wb);
    auto grad_exe = fx::compile_jaxpr(fx::make_jaxpr(g)(x), fx::Device::cpu());
    CHECK_MESSAGE(grad_exe->describe().find("0 kernels, 1 fused groups") != std::string::npos, grad_exe->describe());
    check_close(fx::jit(g)(x), g(x));
  }
}

TEST_CASE("jit: sums over leading, trailing or middle dims end fused groups as per-output sums") {
  // sum(f(x), axes) is accumulated block by block; rows cross blocks (700, 3 columns), are longer
  // than a block (2048), come from a broadcast (one value per block row), and the sums feed a
  // broadcast back into the same shape (which must wait for the whole group). Leading axes
  // (column sums, bias gradients), trailing axes and middle axes (runs of the trailing dims add
  // into runs of outputs); 2^17 elements and more run on every thread.
  struct Case {
    fx::Shape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {{{3, 700}, {1}},     {{5, 2048}, {1}},      {{2000, 3}, {1}},  {{4, 3, 700}, {1, 2}},
                                   {{5003}, {0}},       {{64, 2048}, {1}},     {{2, 65536}, {0, 1}}, {{70000, 2}, {1}},
                                   {{700, 3}, {0}},     {{3, 700}, {0}},       {{2, 3, 700}, {0, 1}}, {{70000, 2}, {0}},
                                   {{2, 70000}, {0}},   {{300, 17}, {1}},      {{1000, 37}, {1}}, {{64, 63}, {1}},
                                   {{30, 8, 5}, {1, 2}},  // rows of 16..63: 8 partial sums
                                   // rows of 2..4: whole rows in one loop (sum_short_rows), on every thread
                                   {{40000, 4}, {1}}, {{50001, 3}, {1}},
                                   // rows of 8, 32, 64: eight rows at a time (sum_8_rows)
                                   {{2000, 8}, {1}}, {{500, 32}, {1}}, {{300, 64}, {1}}, {{7, 50, 32}, {2}},
                                   // 2..7 whole rows in a range: the other accumulators stay zero
                                   {{5, 64}, {1}}, {{3, 40}, {1}}, {{2, 7, 48}, {2}},
                                   // rows of 9..63 not a multiple of 8: the row's last 8, masked
                                   {{1000, 10}, {1}}, {{3001, 13}, {1}}, {{70, 9}, {1}}, {{20000, 10}, {1}},
                                   // middle dims: runs of 10, 3, 64 (whole periods of 40, 24, 64
                                   // elements at once), 100 (longer than a period), on every thread
                                   {{100, 1000, 10}, {1}}, {{7, 333, 3}, {1}}, {{4, 300, 64}, {1}},
                                   {{3, 301, 100}, {1}}, {{4, 30, 20, 10}, {1, 2}}, {{3, 5, 2}, {1}}};
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    for (const Case& c : cases) {
      CAPTURE(c.shape);
      CAPTURE(c.axes);
      std::vector<int64_t> keep, rows_dims;
      for (int64_t d = 0; d < c.shape.size(); ++d)
        if (std::find(c.axes.begin(), c.axes.end(), d) == c.axes.end()) {
          keep.push_back(d);
          rows_dims.push_back(c.shape[d]);
        }
      const fx::Shape rows_shape(rows_dims);
      auto f = [&](const fx::Tensor& x, const fx::Tensor& v) {
        fx::Tensor y = fx::tanh(x) * x + 0.5;
        fx::Tensor s = fx::sum(y, c.axes);
        fx::Tensor back = fx::lax::broadcast_in_dim(s, c.shape, keep) * x;  // reads the sums
        fx::Tensor b = fx::lax::broadcast_in_dim(v, c.shape, keep);
        fx::Tensor u = fx::sum(fx::exp(b) * 2.0, c.axes);  // uniform blocks
        return std::make_tuple(s, fx::sum(back * back, c.axes), u, y);
      };
      fx::Tensor x = random_tensor(c.shape, dtype, 31);
      fx::Tensor v = random_tensor(rows_shape, dtype, 32);
      auto exe = fx::compile_jaxpr(fx::make_jaxpr(f)(x, v), fx::Device::cpu());
      CHECK_MESSAGE(exe->describe().find("row sums") != std::string::npos, exe->describe());
      auto got = fx::jit(f)(x, v);
      // The reference: eager evaluation in f64 of the same values. Eager f32 sums of 10^5 terms are
      // off by ~1e-4 relative, the group's (added in double) are not; every term here is >= 0.
      auto want = f(fx::lax::convert_element_type(x, fx::f64), fx::lax::convert_element_type(v, fx::f64));
      check_within({std::get<0>(got), std::get<1>(got), std::get<2>(got), std::get<3>(got)},
                   {std::get<0>(want), std::get<1>(want), std::get<2>(want), std::get<3>(want)},
                   dtype == fx::f32 ? 1e-5 : 1e-10);
    }
  }
  // Integer sums keep the reduction kernel (exact in any order).
  auto g = [](const fx::Tensor& x) { return fx::sum(x * x, {1}); };
  fx::Tensor xi = fx::lax::convert_element_type(random_tensor({4, 300}, fx::f32, 33) * 100.0, fx::i32);
  auto exe = fx::compile_jaxpr(fx::make_jaxpr(g)(xi), fx::Device::cpu());
  CHECK(exe->describe().find("row sums") == std::string::npos);
  check_close(fx::jit(g)(xi), g(xi));
}

TEST_CASE("jit: a sum joins the group computing its operand when a product reads that operand first") {
  // W8's gradient: y = 2 x c (a [K, n, d] group) is read by a batched product, then summed over
  // n. The sum is planned right after y, so the group keeps its sums instead of a reduce_sum
  // kernel reading y again; the product still reads the stored y.
  const int before = fx::num_threads();
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    for (int threads : {1, 2}) {
      CAPTURE(dtype);
      CAPTURE(threads);
      fx::set_num_threads(threads);
      auto f = [](const fx::Tensor& x, const fx::Tensor& c, const fx::Tensor& w) {
        fx::Tensor y = x * fx::expand_dims(c, 2);
        y = y + y;
        fx::Tensor p = fx::matmul(fx::transpose(y, {0, 2, 1}), w);  // [K, d, d]
        return std::make_tuple(p, fx::sum(y, {1}), fx::sum(y, {2}));
      };
      fx::Tensor x = random_tensor({20, 500, 10}, dtype, 41);
      fx::Tensor c = random_tensor({20, 500}, dtype, 42);
      fx::Tensor w = random_tensor({20, 500, 10}, dtype, 43);
      auto exe = fx::compile_jaxpr(fx::make_jaxpr(f)(x, c, w), fx::Device::cpu());
      const std::string plan = exe->describe();
      CHECK_MESSAGE(plan.find("reduce_sum") == std::string::npos, plan);
      CHECK_MESSAGE(plan.find("2 row sums") != std::string::npos, plan);
      auto got = fx::jit(f)(x, c, w);
      auto want = f(fx::lax::convert_element_type(x, fx::f64), fx::lax::convert_element_type(c, fx::f64),
                    fx::lax::convert_element_type(w, fx::f64));
      check_within({std::get<0>(got), std::get<1>(got), std::get<2>(got)},
                   {std::get<0>(want), std::get<1>(want), std::get<2>(want)}, dtype == fx::f32 ? 1e-4 : 1e-10);  // f32 products of 500 terms
    }
  }
  fx::set_num_threads(before);
}

TEST_CASE("jit: a large product read only by one fused group is computed by tiles, matching eager") {
  // The group subtracts a broadcast, squares, and sums rows (trailing dims) and columns (the
  // leading dim) of the product; its tiles do not divide the product evenly. Operands plain, as
  // transposed matrices, and with two free dims; one and two threads.
  struct Case {
    fx::Shape x, w;
    fx::AxisPair contract;
  };
  // Products of 0.3-0.4 M elements (from 1.3 MB in f32): 2 x 2 tiles of 150-151 rows, 704
  // columns and the rest (columns start at multiples of 64);
  // and tiles of whole rows (401 x 700: 3 tiles of 134 x 700), which the group runs as one range
  // of the product's elements each, the broadcast's rows then copied per block.
  const std::vector<Case> cases = {{{301, 24}, {24, 1301}, {{1}, {0}}},
                                   {{24, 301}, {1301, 24}, {{0}, {1}}},
                                   {{301, 24}, {7, 187, 24}, {{1}, {2}}},
                                   {{3, 100, 16}, {16, 1101}, {{2}, {0}}},
                                   {{401, 24}, {24, 700}, {{1}, {0}}}};
  const int before = fx::num_threads();
  for (int threads : {1, 2}) {
    fx::set_num_threads(threads);
    for (fx::DType dtype : {fx::f32, fx::f64}) {
      for (const Case& c : cases) {
        CAPTURE(threads);
        CAPTURE(dtype);
        CAPTURE(c.x);
        CAPTURE(c.w);
        auto f = [&](const fx::Tensor& x, const fx::Tensor& w, const fx::Tensor& b) {
          fx::Tensor p = fx::lax::dot_general(x, w, c.contract, {{}, {}});
          const int64_t lead = p.shape().size() - b.shape().size();
          std::vector<int64_t> trailing, leading;
          for (int64_t d = 0; d < p.shape().size(); ++d) (d < lead ? leading : trailing).push_back(d);
          fx::Tensor y = p - fx::lax::broadcast_in_dim(b, p.shape(), trailing);
          return std::make_tuple(fx::sum(y * y, trailing), fx::sum(fx::tanh(y), leading));
        };
        std::vector<int64_t> free_w;
        for (int64_t d = 0; d < c.w.size(); ++d)
          if (d != c.contract.second[0]) free_w.push_back(c.w[d]);
        fx::Tensor x = random_tensor(c.x, dtype, 41), w = random_tensor(c.w, dtype, 42);
        fx::Tensor b = random_tensor(fx::Shape(free_w), dtype, 43);
        auto exe = fx::compile_jaxpr(fx::make_jaxpr(f)(x, w, b), fx::Device::cpu());
        CHECK_MESSAGE(exe->describe().find("tiles") != std::string::npos, exe->describe());
        if (c.w == fx::Shape{24, 700}) CHECK_MESSAGE(exe->describe().find("x700 tiles") != std::string::npos, exe->describe());
        // No buffer holds the product.
        const int64_t product_bytes = c.x.num_elements() / c.x[c.contract.first[0]] *
                                      (c.w.num_elements() / c.w[c.contract.second[0]]) *
                                      static_cast<int64_t>(fx::dtype_size(dtype));
        CHECK(exe->intermediate_bytes() < product_bytes);
        auto got = fx::jit(f)(x, w, b);
        auto want = f(fx::lax::convert_element_type(x, fx::f64), fx::lax::convert_element_type(w, fx::f64),
                      fx::lax::convert_element_type(b, fx::f64));
        check_within({std::get<0>(got), std::get<1>(got)}, {std::get<0>(want), std::get<1>(want)},
                     dtype == fx::f32 ? 1e-4 : 1e-10);
      }
    }
  }
  fx::set_num_threads(before);
  // The product also returned (or read by a second step) is stored whole, as before.
  auto both = [](const fx::Tensor& x, const fx::Tensor& w) {
    fx::Tensor p = fx::matmul(x, w);
    return std::make_tuple(fx::sum(p * p, {1}), p);
  };
  fx::Tensor x = random_tensor({600, 32}, fx::f64, 44), w = random_tensor({32, 600}, fx::f64, 45);
  auto exe = fx::compile_jaxpr(fx::make_jaxpr(both)(x, w), fx::Device::cpu());
  CHECK(exe->describe().find("tiles") == std::string::npos);
  auto got = fx::jit(both)(x, w);
  auto want = both(x, w);
  check_close(std::get<0>(got), std::get<0>(want));
  check_close(std::get<1>(got), std::get<1>(want));
}

TEST_CASE("jit: a tiled product's few tiles split evenly over the threads") {
  // W8's objective at d=64, K=5: a 1000 x 320 product read by a sum of squares. Tiles of at most
  // 2^17 elements make 3 of 334 rows; on 2 threads (2 + 1 tiles) it ran as slowly as on one, so
  // the plan cuts 4 of 250 rows there. Values equal on both.
  fx::Tensor x = random_tensor({1000, 64}, fx::f64, 46), w = random_tensor({64, 320}, fx::f64, 47);
  auto f = [](const fx::Tensor& a, const fx::Tensor& b) {
    fx::Tensor p = fx::matmul(a, b) - 0.25;
    return fx::sum(p * p, {1});
  };
  const int before = fx::num_threads();
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    fx::set_num_threads(threads);
    const std::string plan = fx::compile_jaxpr(fx::make_jaxpr(f)(x, w), fx::Device::cpu())->describe();
    const char* want = threads == 1 ? "1000x320 in 334x320 tiles" : threads == 2 ? "1000x320 in 250x320 tiles"
                                                                                : "1000x320 in 334x320 tiles";
    CHECK_MESSAGE(plan.find(want) != std::string::npos, plan);
    check_within({fx::jit(f)(x, w)}, {f(x, w)}, 1e-12);
  }
  fx::set_num_threads(before);
}

TEST_CASE("jit: intermediate buffers are reused by liveness") {
  // Ten matrix products in a chain: only two intermediates are live at any time.
  auto f = [](const fx::Tensor& a) {
    fx::Tensor r = a;
    for (int i = 0; i < 10; ++i) r = fx::matmul(r, a) * 0.5;
    return r;
  };
  fx::Tensor a = random_tensor({64, 64}, fx::f64, 8);
  auto exe = fx::compile_jaxpr(fx::make_jaxpr(f)(a), fx::Device::cpu());
  CHECK_MESSAGE(exe->intermediate_bytes() <= 3 * 64 * 64 * 8, exe->describe());
  check_close(fx::jit(f)(a), f(a));
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
    fx::Tensor c = fx::concatenate({x, fx::slice(x, {0, 1}, {3, 3})}, 1);      // [3, 6]
    fx::Tensor t = fx::transpose(c, {1, 0});                                     // [6, 3]
    return fx::lax::pad(t, fx::scalar(0.0), {1, 0}, {0, 2}, {0, 1}) + 1.0;      // [7, 7]
  };
  auto m = fx::jit(moves);
  fx::Tensor x = random_tensor({3, 4}, fx::f64, 41);
  CHECK(steady_allocations([&] { return m(x); }) == 0);
  check_close(m(x), moves(x));
}

TEST_CASE("jit: products with permuted operands, interleaved reductions, gathers and views of arguments allocate nothing per call") {
  // dot_general's layout planning and operand copies, a reduction over interleaved axes, the
  // clamped indices of gather / scatter_add (the GMM gradient) and the views that reshape an
  // argument (rebound each call) all ran through std::vector or make_shared before.
  auto f = [](const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& idx) {
    fx::Tensor p = fx::lax::dot_general(a, b, {{0, 2}, {2, 0}}, {{}, {}});  // [4, 5]: a permuted copy
    fx::Tensor r = fx::sum(fx::reshape(a, {3, 2, 4}) * 2.0, {0, 2});          // interleaved axes
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
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return fx::lax::dot_general(x, y, {{1}, {0}}, {{}, {}}) + y; };
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
  // (executor.cpp, plan_side_by_side): two equal large products side by side and the third alone
  // (with every thread); a product reading one of them (p . e) waits for the run; two small
  // products (2^20 multiply-adds, each on one thread anyway) side by side. u = tanh(x) dies in the
  // run while q and r are written: their storage must not be u's. On 1 thread nothing changes.
  auto f = [](const fx::Tensor& x, const fx::Tensor& w, const fx::Tensor& a, const fx::Tensor& b,
              const fx::Tensor& e) {
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
