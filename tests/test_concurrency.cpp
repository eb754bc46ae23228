// Concurrency: one jit'd function called from many threads while each keeps and reads its last
// result, grad / vmap under jit from several threads, eager ops, first-call compile races and the
// plan cache. Values are small integers in f64, so every result is exact and checked exactly.
// scripts/test.sh runs this suite under ThreadSanitizer (FLUXION_SANITIZE=thread) with 1 and 2
// kernel threads; a data race there fails the run.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "passes/passes.hpp"
#include "runtime/plan_cache.hpp"

namespace fx = fluxion;
using fx::Tensor;

namespace {

constexpr int kThreads = 8;

/// Starts `n` threads running `body(t)` at once (each waits until all have started) and joins them.
template <class Body> void run_together(int n, const Body& body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      body(t);
    });
  for (std::thread& th : threads) th.join();
}

/// [offset, offset + 1, ...] of `n` elements in f64 (exact).
Tensor counting(int64_t n, double offset) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = offset + static_cast<double>(i);
  return fx::from_vector(v, fx::Shape{n});
}

/// Elements of `t` (f64) that differ from want(i): counted, not CHECKed, so threads never call doctest.
template <class Want> int64_t mismatches(const Tensor& t, int64_t n, const Want& want) {
  if (t.size() != n || t.dtype() != fx::f64) return n + 1;
  const double* p = t.data<double>();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += p[i] != want(i);
  return bad;
}

}  // namespace

TEST_CASE("concurrency: one jit'd function from 8 threads, each reading its last result while calling again") {
  // Fused elementwise output, a reduction, a view of the argument and a view of the output: every
  // kind of value the executor hands out, large enough for blocked (and, with threads, parallel)
  // fused loops. A result must never change while its thread holds it.
  constexpr int64_t n = 1 << 17;  // past kParallelElements: fused loops run on every kernel thread
  auto f = fx::jit([](const Tensor& x, const Tensor& k) {
    Tensor y = (x * k + 1.0) * 2.0 - x;
    return std::make_tuple(y, fx::sum(y), fx::reshape(x, {n / 2, 2}), fx::reshape(y, {2, n / 2}));
  });
  const int calls = 12;
  std::atomic<int64_t> wrong{0};
  run_together(kThreads, [&](int t) {
    const Tensor x = counting(n, t);
    auto expected_y = [&](int64_t i, double k) { return ((t + i) * k + 1.0) * 2.0 - (t + i); };
    auto check = [&](const std::tuple<Tensor, Tensor, Tensor, Tensor>& r, double k) {
      const auto& [y, total, xv, yv] = r;
      int64_t bad = mismatches(y, n, [&](int64_t i) { return expected_y(i, k); });
      bad += mismatches(fx::reshape(yv, {n}), n, [&](int64_t i) { return expected_y(i, k); });
      bad += mismatches(fx::reshape(xv, {n}), n, [&](int64_t i) { return static_cast<double>(t + i); });
      // sum over i of ((t + i) k + 1) 2 - (t + i) = (2k - 1) (n t + n (n - 1) / 2) + 2n, exact in f64.
      const double s = (2 * k - 1) * (static_cast<double>(n) * t + n * (n - 1) / 2.0) + 2.0 * n;
      bad += total.item<double>() != s;
      return bad;
    };
    auto last = f(x, fx::scalar(1.0));
    double last_k = 1;
    for (int i = 2; i < 2 + calls; ++i) {
      auto now = f(x, fx::scalar(static_cast<double>(i)));
      wrong += check(last, last_k);  // read while other threads (and this one) run f again
      wrong += check(now, i);
      last = std::move(now);
      last_k = i;
    }
    wrong += check(last, last_k);
  });
  CHECK(wrong.load() == 0);
  CHECK(f.cache_size() == 1);
}

TEST_CASE("concurrency: a held view of an output keeps its bytes; results outlive their jit function") {
  constexpr int64_t n = 64;
  Tensor kept_view, kept;
  {
    auto f = fx::jit([](const Tensor& x) {
      Tensor y = x * 3.0;
      return std::make_tuple(y, fx::reshape(y, {8, 8}));
    });
    // Only the view of the first output is kept: its bytes must not be reused by the next calls.
    kept_view = std::get<1>(f(counting(n, 0)));
    for (int i = 1; i < 4; ++i)
      CHECK(mismatches(std::get<0>(f(counting(n, i))), n, [&](int64_t k) { return 3.0 * (i + k); }) == 0);
    CHECK(mismatches(fx::reshape(kept_view, {n}), n, [](int64_t k) { return 3.0 * k; }) == 0);
    auto g = fx::jit([](const Tensor& x) { return x * 5.0; });
    for (int i = 0; i < 3; ++i) g(counting(n, i));
    kept = g(counting(n, 7));  // the output buffer the earlier calls reused
  }                            // the jit functions, their plans and their states are gone; the results stay valid
  CHECK(mismatches(fx::reshape(kept_view, {n}), n, [](int64_t k) { return 3.0 * k; }) == 0);
  CHECK(mismatches(kept, n, [](int64_t k) { return 5.0 * (7 + k); }) == 0);
}

TEST_CASE("concurrency: jit(grad), jit(vmap) and vmap(jit) from several threads") {
  constexpr int64_t n = 4096;
  auto loss = [](const Tensor& x, const Tensor& w) { return fx::sum(x * x * w); };
  auto grad = fx::jit(fx::grad(loss));                                            // 2 x w
  auto rows = fx::jit(fx::vmap([](const Tensor& r) { return fx::sum(r * r); }));  // per-row sums
  auto mapped = fx::vmap(fx::jit([](const Tensor& r) { return r * 2.0 + 1.0; }));
  std::atomic<int64_t> wrong{0};
  run_together(kThreads, [&](int t) {
    const Tensor x = counting(n, t);
    const Tensor m = fx::reshape(counting(n, t), {64, n / 64});
    for (int i = 1; i <= 6; ++i) {
      Tensor g = grad(x, fx::scalar(static_cast<double>(i)));
      Tensor s = rows(m);
      Tensor v = mapped(m);
      wrong += mismatches(g, n, [&](int64_t j) { return 2.0 * (t + j) * i; });
      wrong += mismatches(s, 64, [&](int64_t r) {
        double acc = 0;
        for (int64_t c = 0; c < n / 64; ++c) acc += (t + r * (n / 64) + c) * (t + r * (n / 64) + c);
        return acc;
      });
      wrong += mismatches(fx::reshape(v, {n}), n, [&](int64_t j) { return (t + j) * 2.0 + 1.0; });
    }
  });
  CHECK(wrong.load() == 0);
}

TEST_CASE("concurrency: eager ops from several threads on shared and own tensors") {
  constexpr int64_t n = 48;
  const Tensor shared = fx::reshape(counting(n * n, 0), {n, n});  // read by every thread
  std::atomic<int64_t> wrong{0};
  run_together(kThreads, [&](int t) {
    const Tensor own = fx::reshape(counting(n * n, t), {n, n});
    for (int i = 0; i < 4; ++i) {
      Tensor p = fx::matmul(shared, own);  // entries < 2^53: exact in any summation order
      Tensor e = fx::sum(fx::exp(shared * 0.0) * own + 1.0, {1});
      const double* sp = shared.data<double>();
      const double* op = own.data<double>();
      wrong += mismatches(fx::reshape(p, {n * n}), n * n, [&](int64_t k) {
        const int64_t r = k / n, c = k % n;
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += sp[r * n + j] * op[j * n + c];
        return acc;
      });
      wrong += mismatches(e, n, [&](int64_t r) { return n * (t + r * n) + n * (n - 1) / 2.0 + n; });
    }
  });
  CHECK(wrong.load() == 0);
}

TEST_CASE("concurrency: 8 threads calling a fresh jit at once compile it once per signature and agree") {
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    auto f = fx::jit([](const Tensor& x) { return fx::tanh(x * 0.0) + x * x; });  // tanh(0) = 0
    std::atomic<int64_t> wrong{0};
    run_together(kThreads, [&](int t) {
      // Two signatures: threads race on each one's first call.
      const int64_t n = t % 2 ? 300 : 200;
      wrong += mismatches(f(counting(n, t)), n, [&](int64_t i) { return static_cast<double>((t + i) * (t + i)); });
    });
    CHECK(wrong.load() == 0);
    CHECK(f.cache_size() == 2);
  }
}

TEST_CASE("concurrency: a PlanCache's first plan and its runs from several threads") {
  constexpr int64_t n = 1000;
  const fx::Jaxpr j = fx::make_jaxpr([](const Tensor& a) { return a * 3.0 + 1.0; })(counting(n, 0));
  fx::runtime::PlanCache cache(std::make_shared<const fx::Jaxpr>(j), fx::runtime::JaxprStage::traced);
  const uint64_t before = fx::passes::pipeline_runs();
  std::atomic<int64_t> wrong{0};
  run_together(kThreads, [&](int t) {
    for (int i = 0; i < 5; ++i) {
      std::vector<Tensor> out = cache.run({counting(n, t + i)});
      wrong += out.size() == 1 ? mismatches(out[0], n, [&](int64_t k) { return (t + i + k) * 3.0 + 1.0; }) : 1;
    }
  });
  CHECK(wrong.load() == 0);
  CHECK(fx::passes::pipeline_runs() - before == 1);
}
