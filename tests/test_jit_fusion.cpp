// jit's plans: elementwise chains fused into groups, register programs, broadcasts read per row,
// sums ending groups, products computed by tiles inside the group reading them, and buffer reuse by
// liveness; each against eager evaluation.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "jit_util.hpp"
#include "samples.hpp"
#include "test_util.hpp"
#include "runtime/executable.hpp"

namespace fx = fluxion;
using fluxion::testing::random_tensor;
using namespace jit_test;

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
          fx::Tensor u = fx::tanh(x) * x + e;      // escapes
          fx::Tensor v = (y - u) / (y * y + 1.5);  // accumulator on the right of sub
          fx::Tensor w = 2.0 - v;                  // literal on the left
          fx::Tensor z = fx::sqrt(y * y + 1.0);
          fx::Tensor l = fx::log(z + e) / (1.0 + x * x);  // e read again, divisor in the accumulator
          fx::Tensor q = s * w - l / s;                   // rank-0 operand, both sides
          fx::Tensor r = e * e;
          fx::Tensor y2 = y * 3.0;
          fx::Tensor sum_y2 = fx::sum(y2);
          fx::Tensor y3 = y2 - r;  // read after the sum
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
    CHECK_MESSAGE(
        plan.find("register program of 15 instructions]\n  load x0; nmul acc; exp; mul# x0; store s0; "
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
      for (auto [g, w] :
           {std::make_pair(std::get<0>(got), std::get<0>(want)), std::make_pair(std::get<1>(got), std::get<1>(want))}) {
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
    fx::Tensor x = fx::full({4096}, big, dtype), y = fx::full({4096}, big, dtype),
               z = fx::full({4096}, -INFINITY, dtype);
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
      {{3}, {3, 700}, {0}},
      {{5}, {5, 2048}, {0}},
      {{2000}, {2000, 3}, {0}},
      {{1}, {1, 5003}, {0}},
      {{4}, {4, 3, 700}, {0}},
      {{3, 2}, {3, 2, 1365}, {0, 1}},
      {{8193}, {8193, 1}, {0}},
      {{700}, {3, 700}, {1}},
      // Rows repeated along a middle dim (copied from the output, doubling), cycles crossing blocks.
      {{25, 1, 2}, {25, 1000, 2}, {0, 1, 2}},
      {{25, 2}, {25, 1000, 2}, {0, 2}},
      {{4, 3}, {4, 700, 3}, {0, 2}},
      {{2, 5}, {2, 333, 5}, {0, 2}},
      {{3, 2}, {3, 50, 7, 2}, {0, 3}},
      {{7}, {3, 1100, 7}, {2}},
      // The whole operand repeated along leading dims, longer than a block: blocks inside one
      // repetition read it in place, blocks across two are copied.
      {{1500}, {5, 1500}, {1}},
      {{3000}, {4, 3000}, {1}},
      {{2, 1200}, {3, 2, 1200}, {1, 2}},
      // Shorter than a block: blocks spanning repetitions are copied, on every thread.
      {{160}, {1000, 160}, {1}},
      {{1023}, {5, 1023}, {1}},
      {{3}, {70000, 3}, {1}},
      {{2, 10}, {300, 2, 10}, {1, 2}},
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
      {{2000}, {2000, 1}, {0}}, {{1000}, {1000, 3}, {0}}, {{100}, {100, 32}, {0}},
      {{5}, {5, 1000}, {0}},    {{7}, {7, 1500}, {0}},    {{4, 3}, {4, 3, 100}, {0, 1}},
      {{1}, {5000}, {0}},       {{3}, {3, 2, 700}, {0}},  {{70}, {70, 1000}, {0}},  // the last: threads
  };
  using Fn = std::vector<fx::Tensor> (*)(const fx::Tensor&, const fx::Tensor&, const fx::Tensor&);
  const std::vector<std::pair<const char*, Fn>> fns = {
      {"left sub",
       [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) { return std::vector<fx::Tensor>{t - w}; }},
      {"right div",
       [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) { return std::vector<fx::Tensor>{w / t}; }},
      {"left div, right sub, with other members",
       [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{fx::exp(w) * 0.5 + (w - t) * (t / w) + fx::maximum(w, t)};
       }},
      {"a reader that needs the block",
       [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{fx::tanh(t) * w + w / t};
       }},
      {"both operands per row, and a literal",
       [](const fx::Tensor& t, const fx::Tensor& u, const fx::Tensor& w) {
         return std::vector<fx::Tensor>{(t / u) * w + (t - 1.5) * (u * t) - w / u};
       }},
      {"the broadcast escapes the group",
       [](const fx::Tensor& t, const fx::Tensor&, const fx::Tensor& w) {
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
  const std::vector<Case> cases = {{{3, 700}, {1}},
                                   {{5, 2048}, {1}},
                                   {{2000, 3}, {1}},
                                   {{4, 3, 700}, {1, 2}},
                                   {{5003}, {0}},
                                   {{64, 2048}, {1}},
                                   {{2, 65536}, {0, 1}},
                                   {{70000, 2}, {1}},
                                   {{700, 3}, {0}},
                                   {{3, 700}, {0}},
                                   {{2, 3, 700}, {0, 1}},
                                   {{70000, 2}, {0}},
                                   {{2, 70000}, {0}},
                                   {{300, 17}, {1}},
                                   {{1000, 37}, {1}},
                                   {{64, 63}, {1}},
                                   {{30, 8, 5}, {1, 2}},  // rows of 16..63: 8 partial sums
                                   // rows of 2..4, on every thread
                                   {{40000, 4}, {1}},
                                   {{50001, 3}, {1}},
                                   // rows of 8, 32, 64
                                   {{2000, 8}, {1}},
                                   {{500, 32}, {1}},
                                   {{300, 64}, {1}},
                                   {{7, 50, 32}, {2}},
                                   // 2..7 whole rows in a range
                                   {{5, 64}, {1}},
                                   {{3, 40}, {1}},
                                   {{2, 7, 48}, {2}},
                                   // rows of 9..63 not a multiple of 8
                                   {{1000, 10}, {1}},
                                   {{3001, 13}, {1}},
                                   {{70, 9}, {1}},
                                   {{20000, 10}, {1}},
                                   // middle dims: runs of 10, 3, 64, 100, on every thread
                                   {{100, 1000, 10}, {1}},
                                   {{7, 333, 3}, {1}},
                                   {{4, 300, 64}, {1}},
                                   {{3, 301, 100}, {1}},
                                   {{4, 30, 20, 10}, {1, 2}},
                                   {{3, 5, 2}, {1}}};
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
                   {std::get<0>(want), std::get<1>(want), std::get<2>(want)},
                   dtype == fx::f32 ? 1e-4 : 1e-10);  // f32 products of 500 terms
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
        if (c.w == fx::Shape{24, 700})
          CHECK_MESSAGE(exe->describe().find("x700 tiles") != std::string::npos, exe->describe());
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
    const char* want = threads == 1   ? "1000x320 in 334x320 tiles"
                       : threads == 2 ? "1000x320 in 250x320 tiles"
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
