// The one compile path: a jit signature runs the pass pipeline once (planning only inlines what
// optimize left), every sub-Jaxpr is optimized and planned once per device, and runtime::PlanCache
// compiles once under concurrent first calls.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "runtime/plan_cache.hpp"
#include "samples.hpp"
#include "passes/passes.hpp"

namespace fx = fluxion;
using fx::Tensor;

namespace {

Tensor mlp_loss(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = fx::tanh(fx::matmul(x, p[0]) + p[1]);
  return fx::sum(fx::matmul(h, p[2]) * fx::matmul(h, p[2]));
}

std::vector<Tensor> mlp_params() {
  return {fx::testing::random_tensor({4, 5}, fx::f64, 1), fx::testing::random_tensor({5}, fx::f64, 2),
          fx::testing::random_tensor({5, 3}, fx::f64, 3)};
}

void check_close(const Tensor& got, const Tensor& want) {
  const std::string diff = fx::testing::compare_tensors(got, want);
  CHECK_MESSAGE(diff.empty(), diff);
}

}  // namespace

TEST_CASE("jit: a signature without calls of their own runs the pass pipeline once, then none") {
  const std::vector<Tensor> p = mlp_params();
  const Tensor x = fx::testing::random_tensor({6, 4}, fx::f64, 4);
  auto g = fx::jit(fx::grad(mlp_loss));
  const uint64_t before = fx::passes::pipeline_runs();
  std::vector<Tensor> first = g(p, x);  // trace, optimize, plan, run
  CHECK(fx::passes::pipeline_runs() - before == 1);
  std::vector<Tensor> second = g(p, x);
  CHECK(fx::passes::pipeline_runs() - before == 1);
  const std::vector<Tensor> eager = fx::grad(mlp_loss)(p, x);
  for (size_t i = 0; i < eager.size(); ++i) {
    check_close(first[i], eager[i]);
    check_close(second[i], eager[i]);
  }
}

TEST_CASE("jit: calls with rules of their own are inlined and cleaned up when planned") {
  auto f = fx::custom_jvp([](const Tensor& x) { return fx::sin(x) * 2.0; },
                          [](const std::tuple<Tensor>& primals, const std::tuple<Tensor>& tangents) {
                            const Tensor& x = std::get<0>(primals);
                            return std::pair{fx::sin(x) * 2.0, fx::cos(x) * 2.0 * std::get<0>(tangents)};
                          });
  auto g = fx::jit([&](const Tensor& x) { return f(x) + 1.0; });
  const Tensor x = fx::testing::random_tensor({7}, fx::f64, 5);
  const uint64_t before = fx::passes::pipeline_runs();
  check_close(g(x), fx::sin(x) * 2.0 + 1.0);
  // optimize keeps the custom_jvp_call (outer transforms need its rule); planning inlines it.
  CHECK(fx::passes::pipeline_runs() - before == 2);
  g(x);
  CHECK(fx::passes::pipeline_runs() - before == 2);
}

TEST_CASE("scan: the body is optimized and planned once, not per call or per step") {
  auto f = fx::jit([](const Tensor& init, const Tensor& xs) {
    return fx::scan(
        [](const Tensor& c, const Tensor& x) {
          return std::pair{fx::tanh(c * x + 1.0), c * 2.0};
        },
        init, xs);
  });
  const Tensor init = fx::testing::random_tensor({3}, fx::f64, 6);
  const Tensor xs = fx::testing::random_tensor({5, 3}, fx::f64, 7);
  const uint64_t before = fx::passes::pipeline_runs();
  auto [carry, ys] = f(init, xs);
  CHECK(fx::passes::pipeline_runs() - before == 2);  // the jit signature, then the body
  f(init, xs);
  f(init, xs);
  CHECK(fx::passes::pipeline_runs() - before == 2);
  Tensor c = init;
  for (int64_t i = 0; i < 5; ++i) c = fx::tanh(c * fx::reshape(fx::slice(xs, {i, 0}, {i + 1, 3}), {3}) + 1.0);
  check_close(carry, c);
}

TEST_CASE("PlanCache: one plan per device, compiled once under concurrent first calls") {
  const Tensor x = fx::testing::random_tensor({4, 5}, fx::f64, 8);
  const fx::Jaxpr j = fx::make_jaxpr([](const Tensor& a) { return fx::exp(a) * 3.0 + a; })(x);
  fx::runtime::PlanCache cache(std::make_shared<const fx::Jaxpr>(j), fx::runtime::JaxprStage::traced);
  const uint64_t before = fx::passes::pipeline_runs();
  std::vector<std::shared_ptr<const fx::Executable>> seen(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] { seen[t] = cache.executable(fx::Device::cpu()); });
  for (std::thread& t : threads) t.join();
  CHECK(fx::passes::pipeline_runs() - before == 1);
  for (const auto& e : seen) CHECK(e == seen[0]);
  CHECK(cache.executable(fx::Device::cpu()) == seen[0]);
  check_close(cache.run({x})[0], fx::exp(x) * 3.0 + x);
  CHECK(fx::passes::pipeline_runs() - before == 1);
}

TEST_CASE("PlanCache: an optimized Jaxpr without calls is planned without running the pipeline") {
  const Tensor x = fx::testing::random_tensor({6}, fx::f64, 9);
  const fx::Jaxpr j = fx::passes::optimize(fx::make_jaxpr([](const Tensor& a) { return fx::sin(a) * a; })(x));
  fx::runtime::PlanCache cache(std::make_shared<const fx::Jaxpr>(j), fx::runtime::JaxprStage::optimized);
  const uint64_t before = fx::passes::pipeline_runs();
  check_close(cache.run({x})[0], fx::sin(x) * x);
  CHECK(fx::passes::pipeline_runs() == before);
}
