// Edge cases of the CUDA backend's reduction, product and control-flow kernels, run on
// cuda_emulated (their bodies over the grid on the CPU) against the reference kernels: every
// dot_general layout the cuBLAS mapping distinguishes, integer products, empty reductions, NaN in
// max/min and argmax/argmin, signed zeros, integer wrap-around, cumsum both ways, gram and
// linalg_solve (singular matrices included), and while/scan/cond/call runners on sub-Jaxprs made of
// this family's primitives.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/control_flow.hpp"
#include "fluxion/fluxion.hpp"
#include "fluxion/lax.hpp"
#include "primitives/dot_general.hpp"
#include "primitives/gram.hpp"
#include "primitives/reduction.hpp"
#include "runtime/backend.hpp"
#include "sample_eval.hpp"

namespace fx = fluxion;
using fx::Backend;
using Dims = std::vector<int64_t>;
using fx::cuda::EmulatedExec;

namespace {

/// Runs `p` on `in` with the reference and the cuda_emulated kernels; checks equal avals, values
/// (compare_tensors' tolerances) and signs of zeros.
void check_same(const fx::Primitive& p, const std::vector<fx::Tensor>& in, const fx::Params& params) {
  CAPTURE(p.name);
  const std::vector<fx::Tensor> want = fx::eval_primitive(p, in, params, Backend::reference);
  const std::vector<fx::Tensor> got = fx::eval_primitive(p, in, params, Backend::cuda_emulated);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    CHECK(got[k].aval() == want[k].aval());
    const std::string diff = fx::testing::compare_tensors(got[k], want[k]);
    CHECK_MESSAGE(diff.empty(), diff);
    const std::string zeros = fx::testing::zero_sign_mismatch(got[k], want[k]);
    CHECK_MESSAGE(zeros.empty(), zeros);
  }
}

fx::Tensor grid(const Dims& shape, fx::DType dt, uint64_t seed) {
  return fx::testing::grid_tensor(fx::Shape(shape), dt, seed);
}

fx::Tensor values(const std::vector<double>& v, const Dims& shape, fx::DType dt) {
  return fx::astype(fx::from_vector(v, fx::Shape(shape)), dt);
}

void check_dot(const Dims& ls, const Dims& rs, const fx::AxisPair& contract, const fx::AxisPair& batch, uint64_t seed) {
  using fx::primitives::dot_general_family::dot_general_p;
  using fx::primitives::dot_general_family::DotGeneralParams;
  CAPTURE(fx::Shape(ls));
  CAPTURE(fx::Shape(rs));
  for (fx::DType dt : {fx::f32, fx::f64, fx::i32, fx::i64}) {
    CAPTURE(dt);
    check_same(dot_general_p(), {grid(ls, dt, seed), grid(rs, dt, seed + 1)}, DotGeneralParams(contract, batch));
  }
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("cuda_emulated dot_general: every layout of the GEMM mapping, f32 f64 i32 i64") {
  check_dot({5, 3}, {3, 4}, {{1}, {0}}, {}, 1);                            // in place
  check_dot({5, 3}, {4, 3}, {{1}, {1}}, {}, 2);                            // rhs transposed
  check_dot({3, 5}, {3, 4}, {{0}, {0}}, {}, 3);                            // lhs transposed
  check_dot({6, 5, 3}, {6, 3, 4}, {{2}, {1}}, {{0}, {0}}, 4);              // strided batch
  check_dot({2, 3, 5, 4}, {2, 3, 6, 4}, {{3}, {3}}, {{0, 1}, {0, 1}}, 5);  // two batch dims
  check_dot({7}, {7}, {{0}, {0}}, {}, 6);                                  // inner product
  check_dot({7}, {3}, {{}, {}}, {}, 7);                                    // outer product
  check_dot({3, 7}, {7}, {{1}, {0}}, {}, 8);                               // matrix-vector
  check_dot({5, 6, 3}, {6, 3, 4}, {{2}, {1}}, {{1}, {0}}, 9);              // batch dim not leading: a copy
  check_dot({5, 2, 3}, {2, 3, 4}, {{2, 1}, {1, 0}}, {}, 10);               // two contracting dims
  check_dot({4, 2, 3, 5}, {3, 5, 2}, {{2, 1}, {0, 2}}, {}, 11);            // both operands permuted
  check_dot({0, 3}, {3, 4}, {{1}, {0}}, {}, 12);                           // empty output
  check_dot({2, 0}, {0, 4}, {{1}, {0}}, {}, 13);                           // k = 0: zeros
  check_dot({2, 3, 0}, {2, 0, 4}, {{2}, {1}}, {{0}, {0}}, 14);             // batched k = 0
  check_dot({1, 3}, {3, 1}, {{1}, {0}}, {}, 15);                           // extents of 1
}

TEST_CASE("cuda_emulated dot_general: integer products wrap like the reference's") {
  using fx::primitives::dot_general_family::dot_general_p;
  using fx::primitives::dot_general_family::DotGeneralParams;
  const fx::Tensor big = values({2e9, 2e9, -2e9}, {3}, fx::i32);
  check_same(dot_general_p(), {big, big}, DotGeneralParams({{0}, {0}}, {}));
}

TEST_CASE("cuda_emulated reductions: any axes, empty ones, NaN, signed zeros, integer wrap") {
  using namespace fx::primitives::reduction_family;
  for (fx::DType dt : {fx::f32, fx::f64, fx::i32, fx::i64}) {
    CAPTURE(dt);
    const fx::Tensor x = grid({2, 3, 4, 5}, dt, 21);
    for (const Dims& axes : std::vector<Dims>{{}, {0}, {1}, {3}, {0, 2}, {1, 3}, {0, 1, 2, 3}})
      for (const fx::Primitive* p : {&reduce_sum_p(), &reduce_max_p(), &reduce_min_p(), &reduce_prod_p()})
        check_same(*p, {x}, ReduceParams(axes));
    // Reducing zero elements gives the identity (sum +0, prod 1, max -inf / lowest, min +inf / max).
    const fx::Tensor empty = grid({3, 0, 2}, dt, 22);
    for (const Dims& axes : std::vector<Dims>{{1}, {0, 1}, {0}, {0, 1, 2}})
      for (const fx::Primitive* p : {&reduce_sum_p(), &reduce_max_p(), &reduce_min_p(), &reduce_prod_p()})
        check_same(*p, {empty}, ReduceParams(axes));
    for (const fx::Primitive* p : {&argmax_p(), &argmin_p()})
      for (int64_t axis : {0, 1, 3}) check_same(*p, {x}, ArgParams({axis}, axis == 1 ? fx::i64 : fx::i32));
    for (bool reverse : {false, true})
      for (int64_t axis : {0, 2, 3}) check_same(cumsum_p(), {x}, CumsumParams(axis, reverse));
    check_same(cumsum_p(), {empty}, CumsumParams(1, false));
    check_same(cumsum_p(), {empty}, CumsumParams(2, true));
  }
  // NaN sticks in max/min, and the first NaN is argmax's and argmin's answer; infinities compare.
  for (fx::DType dt : {fx::f32, fx::f64}) {
    const fx::Tensor v = values({1, kNaN, 3, kNaN, -kInf, kInf, 2, 2, -0.0, 0.0, -1, kNaN}, {3, 4}, dt);
    for (const Dims& axes : std::vector<Dims>{{0}, {1}, {0, 1}}) {
      check_same(reduce_max_p(), {v}, ReduceParams(axes));
      check_same(reduce_min_p(), {v}, ReduceParams(axes));
      check_same(reduce_sum_p(), {v}, ReduceParams(axes));
    }
    for (int64_t axis : {0, 1}) {
      check_same(argmax_p(), {v}, ArgParams({axis}, fx::i32));
      check_same(argmin_p(), {v}, ArgParams({axis}, fx::i64));
      check_same(cumsum_p(), {v}, CumsumParams(axis, axis == 1));
    }
    // A sum of -0s is -0; a cumsum starts at +0 (the reference's); ties keep the first index.
    const fx::Tensor z = values({-0.0, -0.0, -0.0, 1, 1, 1}, {2, 3}, dt);
    check_same(reduce_sum_p(), {z}, ReduceParams({1}));
    check_same(cumsum_p(), {z}, CumsumParams(1, false));
    check_same(argmax_p(), {z}, ArgParams({1}, fx::i32));
    check_same(argmin_p(), {z}, ArgParams({1}, fx::i32));
    // Cancellation: the compensated sum gives what extended precision gives.
    const fx::Tensor c = values({1e16, 1, -1e16, 1, 3e-17, -3e-17}, {6}, dt);
    check_same(reduce_sum_p(), {c}, ReduceParams({0}));
    check_same(cumsum_p(), {c}, CumsumParams(0, true));
  }
  // Long reductions run in chunks merged in order (more than kReduceChunk elements per output).
  for (fx::DType dt : {fx::f32, fx::f64, fx::i32, fx::i64}) {
    CAPTURE(dt);
    const fx::Tensor x = grid({3, 5000, 2}, dt, 23);
    for (const Dims& axes : std::vector<Dims>{{1}, {0, 1}, {0, 1, 2}})
      for (const fx::Primitive* p : {&reduce_sum_p(), &reduce_max_p(), &reduce_min_p(), &reduce_prod_p()})
        check_same(*p, {x}, ReduceParams(axes));
  }
  // Long arg-reductions: chunk answers merged in order (ties across chunks, NaN in a later chunk).
  for (fx::DType dt : {fx::f32, fx::f64, fx::i32}) {
    CAPTURE(dt);
    const fx::Tensor t = values(std::vector<double>(2 * 9000, 1.0), {2, 9000}, dt);
    for (int64_t axis : {0, 1}) {
      check_same(argmax_p(), {t}, ArgParams({axis}, fx::i64));
      check_same(argmin_p(), {t}, ArgParams({axis}, fx::i32));
    }
    const fx::Tensor g = grid({3, 9000}, dt, 24);
    for (const fx::Primitive* p : {&argmax_p(), &argmin_p()}) {
      check_same(*p, {g}, ArgParams({1}, fx::i64));
      check_same(*p, {fx::lax::transpose(g, {1, 0})}, ArgParams({0}, fx::i32));
    }
  }
  // Long cumsums: chunk totals, their prefixes, then each chunk from its prefix.
  for (fx::DType dt : {fx::f32, fx::f64, fx::i32, fx::i64}) {
    CAPTURE(dt);
    const fx::Tensor g = grid({2, 9000}, dt, 25);
    for (bool reverse : {false, true}) {
      check_same(cumsum_p(), {g}, CumsumParams(1, reverse));
      check_same(cumsum_p(), {fx::lax::transpose(g, {1, 0})}, CumsumParams(0, reverse));
    }
  }
  for (fx::DType dt : {fx::f32, fx::f64}) {
    std::vector<double> v(9000, 0.0);
    v[10] = 1e16, v[5000] = 1, v[8500] = -1e16, v[8600] = kInf;  // cancellation across chunks, then inf
    for (bool reverse : {false, true}) check_same(cumsum_p(), {values(v, {9000}, dt)}, CumsumParams(0, reverse));
  }
  for (fx::DType dt : {fx::f32, fx::f64}) {
    std::vector<double> v(9000, 0.5);
    v[5000] = 3, v[8200] = 3, v[100] = -3, v[4300] = -3;
    check_same(argmax_p(), {values(v, {9000}, dt)}, ArgParams({0}, fx::i32));  // the first 3, in chunk 2
    check_same(argmin_p(), {values(v, {9000}, dt)}, ArgParams({0}, fx::i32));  // the first -3, in chunk 1
    v[8300] = kNaN, v[8301] = kNaN;
    check_same(argmax_p(), {values(v, {9000}, dt)}, ArgParams({0}, fx::i32));  // the first NaN, in chunk 3
    check_same(argmin_p(), {values(v, {9000}, dt)}, ArgParams({0}, fx::i64));
  }
  for (fx::DType dt : {fx::f32, fx::f64}) {
    std::vector<double> v(9000, -0.0);
    check_same(reduce_sum_p(), {values(v, {9000}, dt)}, ReduceParams({0}));  // -0 through the merge
    v[8500] = kNaN, v[100] = kInf, v[4100] = 1e16, v[4200] = 1, v[8999] = -1e16;
    for (const fx::Primitive* p : {&reduce_sum_p(), &reduce_max_p(), &reduce_min_p()})
      check_same(*p, {values(v, {9000}, dt)}, ReduceParams({0}));
    v[8500] = 0, v[100] = 0;
    check_same(reduce_sum_p(), {values(v, {9000}, dt)}, ReduceParams({0}));  // compensation across chunks
  }
  // Integer sums and products wrap modulo 2^bits.
  const fx::Tensor w = values({2e9, 2e9, 2e9, 65536, 65536, 3}, {2, 3}, fx::i32);
  check_same(reduce_sum_p(), {w}, ReduceParams({1}));
  check_same(reduce_prod_p(), {w}, ReduceParams({1}));
  check_same(cumsum_p(), {w}, CumsumParams(1, true));
}

TEST_CASE("cuda_emulated gram and linalg_solve: empty, batched, singular") {
  using fx::primitives::gram_detail::gram_p;
  const fx::Primitive& solve = *fx::find_primitive("linalg_solve");
  for (fx::DType dt : {fx::f32, fx::f64}) {
    CAPTURE(dt);
    check_same(gram_p(), {grid({7, 4}, dt, 31), grid({7}, dt, 32)}, fx::no_params());
    check_same(gram_p(), {grid({0, 3}, dt, 33), grid({0}, dt, 34)}, fx::no_params());  // N = 0: zeros
    check_same(gram_p(), {grid({5, 0}, dt, 35), grid({5}, dt, 36)}, fx::no_params());
    // Exactly symmetric, like the reference.
    const fx::Tensor g = fx::eval_primitive(gram_p(), {grid({9, 5}, dt, 37), grid({9}, dt, 38)}, fx::no_params(),
                                            Backend::cuda_emulated)[0];
    CHECK(fx::testing::compare_tensors(g, fx::lax::transpose(g, {1, 0})) == "");
    CHECK(g.to_vector<double>() == fx::lax::transpose(g, {1, 0}).to_vector<double>());
    // Diagonally dominant batches, a permutation needing pivots, k = 0, n = 0.
    const fx::Tensor a = fx::add(grid({2, 3, 4, 4}, dt, 39), fx::astype(fx::multiply(fx::eye(4), fx::scalar(6.0)), dt));
    check_same(solve, {a, grid({2, 3, 4, 2}, dt, 40)}, fx::no_params());
    const fx::Tensor perm = values({0, 0, 1, 1, 0, 0, 0, 1, 0}, {3, 3}, dt);
    check_same(solve, {perm, grid({3, 2}, dt, 41)}, fx::no_params());
    check_same(solve, {a, grid({2, 3, 4, 0}, dt, 42)}, fx::no_params());
    check_same(solve, {grid({2, 0, 0}, dt, 43), grid({2, 0, 3}, dt, 44)}, fx::no_params());
    // Systems from kStepwiseSolve on run column by column (the one-thread path's arithmetic, in parallel).
    const fx::Tensor big =
        fx::add(grid({2, 50, 50}, dt, 46), fx::astype(fx::multiply(fx::eye(50), fx::scalar(9.0)), dt));
    check_same(solve, {big, grid({2, 50, 3}, dt, 47)}, fx::no_params());
    check_same(solve, {fx::lax::transpose(big, {0, 2, 1}), grid({2, 50, 0}, dt, 48)}, fx::no_params());
    // A singular matrix at batch index 1 throws the reference's Error, word for word, small or large.
    std::vector<double> sv(2 * 50 * 50, 0.0);
    for (int64_t i = 0; i < 100; ++i) sv[static_cast<size_t>(i * 50 + i % 50)] = 1 + i % 3;  // diagonals
    for (int64_t i = 50; i < 100; ++i) sv[static_cast<size_t>(i * 50 + 7)] = 0;              // matrix 1: column 7 zero
    const std::vector<std::pair<fx::Tensor, fx::Tensor>> singular{
        {values({2, 0, 0, 3, 1, 2, 2, 4}, {2, 2, 2}, dt), grid({2, 2, 1}, dt, 45)},
        {values(sv, {2, 50, 50}, dt), grid({2, 50, 2}, dt, 49)}};
    for (const auto& [sa, sb] : singular) {
      std::string want, got;
      try {
        fx::eval_primitive(solve, {sa, sb}, fx::no_params(), Backend::reference);
      } catch (const fx::Error& e) { want = e.what(); }
      try {
        fx::eval_primitive(solve, {sa, sb}, fx::no_params(), Backend::cuda_emulated);
      } catch (const fx::Error& e) { got = e.what(); }
      CHECK(want.find("batch index 1") != std::string::npos);
      CHECK(got == want);
    }
  }
}

// The control-flow runners on sub-Jaxprs made only of this family's primitives (the other
// families' cuda_emulated kernels live in their own headers).
namespace {

using Fn = std::function<std::vector<fx::Tensor>(const std::vector<fx::Tensor>&)>;
fx::Jaxpr trace(const Fn& f, const std::vector<fx::Tensor>& example) { return fx::make_jaxpr(f)(example); }

/// a (last dim) contracted with b (first dim).
fx::Tensor contract(const fx::Tensor& a, const fx::Tensor& b) {
  return fx::lax::dot_general(a, b, {{a.ndim() - 1}, {0}});
}

std::vector<fx::Tensor> outputs_like(const std::vector<fx::Tensor>& ts) {
  std::vector<fx::Tensor> out;
  for (const fx::Tensor& t : ts) out.push_back(fx::empty(t.aval(), t.device()));
  return out;
}

void check_values(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    CAPTURE(k);
    CHECK(got[k].aval() == want[k].aval());
    const std::string diff = fx::testing::compare_tensors(got[k], want[k]);
    CHECK_MESSAGE(diff.empty(), diff);
  }
}

}  // namespace

TEST_CASE("cuda_emulated while runner: max_steps, an initially false predicate, consts of the sub-Jaxprs") {
  using namespace fx::cuda::control_flow_kernels;
  const fx::Tensor flag = fx::scalar(true), x = values({1, 1, 1}, {3}, fx::f64);
  const fx::Tensor w = values({1, 0, 0, 1, 1, 0, 0, 1, 1}, {3, 3}, fx::f64);
  // cond(carry) = the carried flag; body(w, carry) = (flag, cumsum(w x)) with w also a constant.
  const fx::Jaxpr cond =
      trace([](const std::vector<fx::Tensor>& in) { return std::vector<fx::Tensor>{in[0]}; }, {flag, x});
  const fx::Jaxpr body = trace(
      [&](const std::vector<fx::Tensor>& in) {
        return std::vector<fx::Tensor>{in[1], fx::lax::cumsum(contract(w, contract(in[0], in[2])), 0, false)};
      },
      {w, flag, x});
  for (int64_t steps : {0, 1, 4}) {
    CAPTURE(steps);
    fx::Tensor want = x;
    for (int64_t s = 0; s < steps; ++s) want = fx::lax::cumsum(fx::matmul(w, fx::matmul(w, want)), 0);
    std::vector<fx::Tensor> out = outputs_like({flag, x});
    run_while<EmulatedExec>(cond, body, 0, 1, steps, {w, flag, x}, out);
    check_values(out, {flag, want});
  }
  std::vector<fx::Tensor> out = outputs_like({flag, x});
  run_while<EmulatedExec>(cond, body, 0, 1, -1, {w, fx::scalar(false), x}, out);  // never runs the body
  check_values(out, {fx::scalar(false), x});
}

TEST_CASE("cuda_emulated scan runner: forward and reverse, ys stacked in the order of xs, length 0") {
  using namespace fx::cuda::control_flow_kernels;
  const fx::Tensor w = grid({3, 3}, fx::f64, 51), c0 = grid({3}, fx::f64, 52), xs = grid({4, 3}, fx::f64, 53);
  // body(w, c, x) = (c' = w x, ys = (c . x, reverse cumsum of x)): a carry, a scalar y and a vector y.
  auto step = [](const fx::Tensor& w, const fx::Tensor& c, const fx::Tensor& x) {
    return std::pair<fx::Tensor, std::vector<fx::Tensor>>{contract(w, x),
                                                          {contract(c, x), fx::lax::cumsum(x, 0, true)}};
  };
  const fx::Jaxpr body = trace(
      [&](const std::vector<fx::Tensor>& in) {
        auto [c, ys] = step(in[0], in[1], in[2]);
        return std::vector<fx::Tensor>{c, ys[0], ys[1]};
      },
      {w, c0, fx::lax::reshape(fx::lax::slice(xs, {0, 0}, {1, 3}), fx::Shape{3})});
  for (bool reverse : {false, true}) {
    CAPTURE(reverse);
    // The expected result, step by step on the CPU.
    fx::Tensor c = c0;
    std::vector<std::vector<double>> y0(4), y1(4);
    for (int64_t s = 0; s < 4; ++s) {
      const int64_t i = reverse ? 3 - s : s;
      const fx::Tensor x = fx::lax::reshape(fx::lax::slice(xs, {i, 0}, {i + 1, 3}), fx::Shape{3});
      auto [next, ys] = step(w, c, x);
      y0[static_cast<size_t>(i)] = ys[0].to_vector<double>();
      y1[static_cast<size_t>(i)] = ys[1].to_vector<double>();
      c = next;
    }
    std::vector<double> flat0, flat1;
    for (int i = 0; i < 4; ++i) {
      flat0.insert(flat0.end(), y0[i].begin(), y0[i].end());
      flat1.insert(flat1.end(), y1[i].begin(), y1[i].end());
    }
    const std::vector<fx::Tensor> want{c, values(flat0, {4}, fx::f64), values(flat1, {4, 3}, fx::f64)};
    std::vector<fx::Tensor> out = outputs_like(want);
    run_scan<EmulatedExec>(body, 1, 1, 4, reverse, {w, c0, xs}, out);
    check_values(out, want);
  }
  // Length 0: the carry passes through, the ys are empty.
  std::vector<fx::Tensor> out = outputs_like({c0, grid({0}, fx::f64, 54), grid({0, 3}, fx::f64, 55)});
  run_scan<EmulatedExec>(body, 1, 1, 0, false, {w, c0, grid({0, 3}, fx::f64, 56)}, out);
  check_values({out[0]}, {c0});
}

TEST_CASE("cuda_emulated cond and call runners: clamped index, bool index, literal outputs") {
  using namespace fx::cuda::control_flow_kernels;
  const fx::Tensor x = grid({3, 4}, fx::f32, 61);
  const fx::Jaxpr sum = trace(
      [](const std::vector<fx::Tensor>& in) { return std::vector<fx::Tensor>{fx::lax::reduce_sum(in[0], {1})}; }, {x});
  const fx::Jaxpr max = trace(
      [](const std::vector<fx::Tensor>& in) { return std::vector<fx::Tensor>{fx::lax::reduce_max(in[0], {1})}; }, {x});
  const fx::Tensor want_sum = fx::lax::reduce_sum(x, {1}), want_max = fx::lax::reduce_max(x, {1});
  const std::vector<std::pair<fx::Tensor, fx::Tensor>> cases{
      {fx::scalar<int32_t>(-3), want_sum}, {fx::scalar<int32_t>(0), want_sum}, {fx::scalar<int32_t>(1), want_max},
      {fx::scalar<int32_t>(7), want_max},  {fx::scalar(false), want_sum},      {fx::scalar(true), want_max}};
  for (const auto& [index, want] : cases) {
    std::vector<fx::Tensor> out = outputs_like({want});
    run_cond<EmulatedExec>({&sum, &max}, {index, x}, out);
    check_values(out, {want});
  }
  // A call whose outputs are an input passed through and a constant.
  const fx::Tensor k = grid({2}, fx::f32, 62);
  const fx::Jaxpr pass = trace(
      [&](const std::vector<fx::Tensor>& in) {
        return std::vector<fx::Tensor>{in[0], k};
      },
      {x});
  std::vector<fx::Tensor> out = outputs_like({x, k});
  run_call<EmulatedExec>("jit_call", pass, {x}, out);
  check_values(out, {x, k});
}

TEST_CASE("cuda_emulated jit_call: a jitted function of products and reductions runs on the kernel table") {
  const fx::Tensor a = grid({4, 3}, fx::f64, 71), b = grid({3, 5}, fx::f64, 72);
  auto f = fx::jit([](const fx::Tensor& p, const fx::Tensor& q) {
    return fx::lax::reduce_max(fx::lax::dot_general(p, q, {{1}, {0}}), {0});
  });
  const fx::Jaxpr outer = fx::make_jaxpr([&](const std::vector<fx::Tensor>& in) {
    return std::vector<fx::Tensor>{f(in[0], in[1])};
  })(std::vector<fx::Tensor>{a, b});
  REQUIRE(outer.equations.size() == 1);
  const fx::Equation& e = outer.equations[0];
  CHECK(e.primitive->name == "jit_call");
  check_same(*e.primitive, {a, b}, *e.params);
}

// The kernels filed for cond, while, scan and checkpoint (params: primitives/control_flow_params.hpp), on
// primitives staged by the public API with bodies made of this family's primitives.
namespace {

/// Stages fn on `in`; its one equation run on cuda_emulated against the reference.
void check_staged(const Fn& fn, const std::vector<fx::Tensor>& in, const char* name) {
  const fx::Jaxpr j = trace(fn, in);
  REQUIRE(j.equations.size() == 1);
  const fx::Equation& e = j.equations[0];
  CHECK(e.primitive->name == name);
  std::map<int32_t, fx::Tensor> env;
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i]] = in[i];
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i]] = j.consts[i];
  std::vector<fx::Tensor> args;
  for (const fx::Atom& a : e.inputs) args.push_back(a.is_literal() ? a.literal : env.at(a.var));
  check_same(*e.primitive, args, *e.params);
}

}  // namespace

TEST_CASE("cuda_emulated kernels of while, scan, cond and checkpoint: staged primitives against the reference") {
  const fx::Tensor w = grid({3, 3}, fx::f64, 81), x = grid({3}, fx::f64, 82), xs = grid({5, 3}, fx::f64, 83);
  for (bool go : {true, false})
    check_staged(
        [&](const std::vector<fx::Tensor>& in) {
          return fx::while_loop([](const std::vector<fx::Tensor>& c) { return c[0]; },
                                [&](const std::vector<fx::Tensor>& c) {
                                  return std::vector<fx::Tensor>{c[0], fx::lax::cumsum(contract(w, c[1]), 0)};
                                },
                                in, fx::max_steps(3));
        },
        {fx::scalar(go), x}, "while");
  for (bool reverse : {false, true})
    check_staged(
        [&](const std::vector<fx::Tensor>& in) {
          auto step = [&](const fx::Tensor& c, const fx::Tensor& row) {
            return std::pair<fx::Tensor, fx::Tensor>{contract(w, row), contract(c, row)};
          };
          auto [c, ys] = reverse ? fx::scan(step, in[0], in[1], fx::reverse) : fx::scan(step, in[0], in[1]);
          return std::vector<fx::Tensor>{c, ys};
        },
        {x, xs}, "scan");
  for (bool pred : {true, false})
    check_staged(
        [&](const std::vector<fx::Tensor>& in) {
          return std::vector<fx::Tensor>{fx::cond(
              in[0], [](const fx::Tensor& v) { return fx::lax::reduce_max(v, {0}); },
              [](const fx::Tensor& v) { return fx::lax::reduce_sum(v, {0}); }, in[1])};
        },
        {fx::scalar(pred), x}, "cond");
  check_staged(
      [&](const std::vector<fx::Tensor>& in) {
        auto f = fx::checkpoint([&](const fx::Tensor& v) { return fx::lax::cumsum(contract(w, v), 0, true); });
        return std::vector<fx::Tensor>{f(in[0])};
      },
      {x}, "checkpoint");
}
