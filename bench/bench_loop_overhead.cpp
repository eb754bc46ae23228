// Per-step overhead of compiled loops (issue 34): scans and while_loops of trivial bodies, where the
// body's arithmetic is a few nanoseconds and everything else is the loop's own cost. Each case runs
// with the `loops` switch on (the body's plan run on one held state, runtime/loop_runner.hpp) and
// off (one plan call per step); counters:
//   ns_per_step   time per call / steps
// Cases:
//   scan_add      carry + 1 on an f64 scalar, no xs, no ys
//   scan_xs_ys    carry * 0.5 + x on an f64 scalar, x read from xs, the new carry also stacked as a y
//   scan_swap     two f64[4] carries swapped and one added: (a, b) -> (b, a + b)
//   while_count   while i < n: (i + 1, x * 0.999) on an i32 counter and an f64 scalar
// Compare on and off in one run with interleaved repetitions:
//   ./build-bench/bench/bench_loop_overhead --benchmark_repetitions=5 \
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include <cmath>
#include <string>

#include "runtime/switches.hpp"
#include "workloads.hpp"

namespace bench_loop {

constexpr int64_t kSteps = 100000;

/// Runs `call` under the switch setting, reporting ns per loop step.
template <class Call, class Check> void time_loop(benchmark::State& st, bool loops, Call call, Check check) {
  fx::runtime::set_disabled(loops ? "" : "loops");
  wl::run_case(st, call, check);
  st.counters["ns_per_step"] = benchmark::Counter(
      static_cast<double>(kSteps) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  fx::runtime::set_disabled("");
}

void register_cases() {
  for (bool loops : {true, false}) {
    const std::string mode = loops ? "/loops_on" : "/loops_off";
    wl::reg(
        "loop/scan_add" + mode,
        [loops](benchmark::State& st) {
          auto f = fx::jit([](const fx::Tensor& c0, const fx::Tensor& xs) {
            return fx::scan(
                       [](const fx::Tensor& c, const fx::Tensor&) { return std::make_pair(c + 1.0, std::tuple<>{}); },
                       c0, xs)
                .first;
          });
          const fx::Tensor c0 = fx::scalar<double>(0.0), xs = fx::zeros({kSteps, 0}, fx::f64);
          time_loop(
              st, loops, [&] { return f(c0, xs); },
              [](const fx::Tensor& c) { return wl::compare_values("carry", {c.item<double>()}, {double(kSteps)}, 0); });
        },
        benchmark::kMicrosecond);
    wl::reg(
        "loop/scan_xs_ys" + mode,
        [loops](benchmark::State& st) {
          auto f = fx::jit([](const fx::Tensor& c0, const fx::Tensor& xs) {
            auto [c, ys] = fx::scan(
                [](const fx::Tensor& c, const fx::Tensor& x) {
                  fx::Tensor next = c * 0.5 + x;
                  return std::make_pair(next, next);
                },
                c0, xs);
            return fx::sum(ys) + c;
          });
          const fx::Tensor c0 = fx::scalar<double>(0.0), xs = fx::ones({kSteps}, fx::f64);
          // c_i = 2 (1 - 2^-i): the sum over i = 1..N is 2N - 2 (1 - 2^-N), and c_N adds 2 (1 - 2^-N).
          const double want = 2.0 * kSteps;
          time_loop(
              st, loops, [&] { return f(c0, xs); },
              [want](const fx::Tensor& v) { return wl::compare_values("sum", {v.item<double>()}, {want}, 1e-9); });
        },
        benchmark::kMicrosecond);
    wl::reg(
        "loop/scan_swap" + mode,
        [loops](benchmark::State& st) {
          auto f = fx::jit([](const fx::Tensor& a0, const fx::Tensor& b0, const fx::Tensor& xs) {
            using Carry = std::pair<fx::Tensor, fx::Tensor>;
            auto body = [](const Carry& c, const fx::Tensor&) {
              return std::make_pair(Carry{c.second, (c.first + c.second) * 0.5}, std::tuple<>{});
            };
            Carry c = fx::scan(body, Carry{a0, b0}, xs).first;
            return fx::sum(c.first) + fx::sum(c.second);
          });
          const fx::Tensor a0 = fx::ones({4}, fx::f64), b0 = fx::ones({4}, fx::f64) * 3.0;
          const fx::Tensor xs = fx::zeros({kSteps, 0}, fx::f64);
          // The pair converges to (a0 + 2 b0) / 3 = 7/3 in every element.
          time_loop(
              st, loops, [&] { return f(a0, b0, xs); },
              [](const fx::Tensor& v) { return wl::compare_values("sum", {v.item<double>()}, {8 * 7.0 / 3}, 1e-9); });
        },
        benchmark::kMicrosecond);
    wl::reg(
        "loop/while_count" + mode,
        [loops](benchmark::State& st) {
          auto f = fx::jit([](const fx::Tensor& x0, const fx::Tensor& n) {
            using Carry = std::pair<fx::Tensor, fx::Tensor>;
            return fx::while_loop([n](const Carry& c) { return c.first < n; },
                                  [](const Carry& c) {
                                    return Carry{c.first + 1, c.second * 0.999};
                                  },
                                  Carry{fx::scalar<int32_t>(0), x0})
                .second;
          });
          const fx::Tensor x0 = fx::scalar<double>(1.0), n = fx::scalar<int32_t>(static_cast<int32_t>(kSteps));
          const double want = std::pow(0.999, double(kSteps));
          time_loop(
              st, loops, [&] { return f(x0, n); },
              [want](const fx::Tensor& v) { return wl::compare_values("x", {v.item<double>()}, {want}, 1e-9); });
        },
        benchmark::kMicrosecond);
  }
}

}  // namespace bench_loop

int main(int argc, char** argv) { return wl::run_main(argc, argv, bench_loop::register_cases); }
