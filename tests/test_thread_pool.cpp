// Fluxion's CPU thread pool (backends/cpu/thread_pool.hpp): every task exactly once, worker
// indices in range, exceptions, nested loops, resizing through set_num_threads, concurrent callers,
// and a fused jit'd function and a large product on 1 and 2 threads against one thread.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "backends/cpu/kernel_threads.hpp"
#include "backends/cpu/thread_pool.hpp"

namespace fx = fluxion;

namespace {

/// Restores the thread count and spin time a test changes.
struct ThreadsGuard {
  int threads = fx::num_threads(), spin = fx::cpu::spin_microseconds();
  ~ThreadsGuard() {
    fx::set_num_threads(threads);
    fx::cpu::set_spin_microseconds(spin);
  }
};

/// Runs parallel_for over n tasks on `threads` threads with `grain`, and checks each task ran
/// exactly once on a worker index below `threads`.
void check_coverage(int64_t n, int threads, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<bool> bad_worker{false};
  fx::cpu::parallel_for(n, threads, grain, [&](int64_t i, int worker) {
    if (worker < 0 || worker >= threads) bad_worker.store(true);
    hits[static_cast<size_t>(i)].fetch_add(1);
  });
  CHECK_FALSE(bad_worker.load());
  int64_t wrong = 0;
  for (auto& h : hits) wrong += h.load() != 1;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("thread pool: every task runs exactly once, for many sizes, grains and thread counts") {
  ThreadsGuard guard;
  fx::set_num_threads(4);
  for (int threads : {1, 2, 3, 4})
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 4097})
      for (int64_t grain : {1, 3, 16, 5000}) {
        CAPTURE(threads);
        CAPTURE(n);
        CAPTURE(grain);
        check_coverage(n, threads, grain);
      }
}

TEST_CASE("thread pool: parallel_ranges and parallel_chunks cover [0, n) exactly once") {
  ThreadsGuard guard;
  fx::set_num_threads(3);
  for (int64_t n : {1, 5, 16, 17, 100, 12345})
    for (int64_t align : {1, 4, 16}) {
      CAPTURE(n);
      CAPTURE(align);
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<bool> misaligned{false};
      fx::cpu::parallel_ranges(n, 3, 2, align, [&](int64_t b, int64_t e, int) {
        if (b % align != 0 || e <= b) misaligned.store(true);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      fx::cpu::parallel_chunks(n, 3, 7, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      CHECK_FALSE(misaligned.load());
      int64_t wrong = 0;
      for (auto& h : hits) wrong += h.load() != 2;
      CHECK(wrong == 0);
    }
}

TEST_CASE("thread pool: more tasks than threads, many loops in a row, with and without spinning") {
  ThreadsGuard guard;
  fx::set_num_threads(2);
  for (int spin : {0, 5, 1000}) {
    CAPTURE(spin);
    fx::cpu::set_spin_microseconds(spin);
    std::atomic<int64_t> total{0};
    for (int loop = 0; loop < 2000; ++loop)
      fx::cpu::parallel_for(37, 2, [&](int64_t i, int) { total.fetch_add(i + 1, std::memory_order_relaxed); });
    CHECK(total.load() == 2000 * 37 * 38 / 2);
    // Plain (non-atomic) writes by the tasks are visible to the caller once the loop returns.
    std::vector<int64_t> out(10000, -1);
    for (int loop = 0; loop < 50; ++loop) {
      fx::cpu::parallel_for(10000, 2, 64, [&](int64_t i, int) { out[static_cast<size_t>(i)] = i * loop; });
      int64_t wrong = 0;
      for (int64_t i = 0; i < 10000; ++i) wrong += out[static_cast<size_t>(i)] != i * loop;
      REQUIRE(wrong == 0);
    }
  }
}

TEST_CASE("thread pool: an exception thrown by a task reaches the caller, and the pool keeps working") {
  ThreadsGuard guard;
  fx::set_num_threads(2);
  for (int64_t bad : {0, 5, 99}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(fx::cpu::parallel_for(100, 2,
                                               [&](int64_t i, int) {
                                                 if (i == bad) throw std::runtime_error("task failed");
                                               }),
                         "task failed", std::runtime_error);
  }
  check_coverage(1000, 2, 1);
}

TEST_CASE("thread pool: loops nested in a task run serially on that task's thread") {
  ThreadsGuard guard;
  fx::set_num_threads(3);
  CHECK_FALSE(fx::cpu::in_parallel_region());
  CHECK(fx::cpu::kernel_threads() == 3);
  std::atomic<int64_t> inner_total{0};
  std::atomic<bool> inner_not_serial{false}, kernel_threads_not_one{false};
  fx::cpu::parallel_for(6, 3, [&](int64_t, int) {
    if (!fx::cpu::in_parallel_region()) inner_not_serial.store(true);
    if (fx::cpu::kernel_threads() != 1) kernel_threads_not_one.store(true);
    const std::thread::id me = std::this_thread::get_id();
    fx::cpu::parallel_for(50, 3, [&](int64_t j, int worker) {
      if (worker != 0 || std::this_thread::get_id() != me) inner_not_serial.store(true);
      inner_total.fetch_add(j);
    });
  });
  CHECK_FALSE(inner_not_serial.load());
  CHECK_FALSE(kernel_threads_not_one.load());
  CHECK(inner_total.load() == 6 * (49 * 50 / 2));
  CHECK_FALSE(fx::cpu::in_parallel_region());
}

TEST_CASE("thread pool: set_num_threads resizes the pool") {
  ThreadsGuard guard;
  fx::set_num_threads(3);
  check_coverage(64, 3, 1);
  CHECK(fx::cpu::thread_pool_workers() == 2);
  fx::set_num_threads(1);
  CHECK(fx::cpu::thread_pool_workers() == 0);
  // One thread: everything on the caller, worker 0.
  const std::thread::id me = std::this_thread::get_id();
  bool elsewhere = false;
  fx::cpu::parallel_for(
      100, 4, [&](int64_t, int worker) { elsewhere = elsewhere || worker != 0 || std::this_thread::get_id() != me; });
  CHECK_FALSE(elsewhere);
  CHECK(fx::cpu::thread_pool_workers() == 0);
  fx::set_num_threads(2);
  check_coverage(64, 8, 1);  // asks for 8, gets at most num_threads()
  CHECK(fx::cpu::thread_pool_workers() == 1);
}

TEST_CASE("thread pool: loops from several threads at once (one uses the workers, the others run alone)") {
  ThreadsGuard guard;
  fx::set_num_threads(2);
  std::atomic<int64_t> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int loop = 0; loop < 300; ++loop) {
        std::vector<int> hits(257, 0);
        fx::cpu::parallel_for(257, 2, [&](int64_t i, int) { hits[static_cast<size_t>(i)] += 1; });
        for (int h : hits) wrong.fetch_add(h != 1);
      }
    });
  for (std::thread& t : callers) t.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("thread pool: jit'd fused groups, sums and a large product agree on 1 and 2 threads") {
  ThreadsGuard guard;
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) {
    fx::Tensor h = fx::tanh(fx::matmul(x, w)) * 0.5 + fx::sum(fx::sin(x), {1}, true);
    return fx::sum(h * h, {1});
  };
  fx::Tensor x = fx::reshape(fx::sin(fx::arange(512.0 * 300.0)), {512, 300});
  fx::Tensor w = fx::reshape(fx::cos(fx::arange(300.0 * 300.0) * 0.01), {300, 300});
  std::vector<double> want;
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    fx::set_num_threads(threads);
    auto jf = fx::jit(f);  // a new function: planned for this thread count
    std::vector<double> got = jf(x, w).to_vector<double>();
    std::vector<double> again = jf(x, w).to_vector<double>();
    CHECK(got == again);  // reproducible on a given thread count
    if (want.empty()) want = got;
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
    CHECK(worst < 1e-12);
  }
}
