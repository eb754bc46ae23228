// The run-time ISA dispatch of a portable build (backends/cpu/isa.hpp), measured: each workload under
// every variant this library holds and this CPU runs, interleaved round by round, best time per cell.
// A native build (FLUXION_NATIVE=ON) holds one variant: its single column is the reference the
// portable columns are compared with (bench/RESULTS.md).
//   isa_dispatch [rounds=7]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/isa.hpp"
#include "fluxion/fluxion.hpp"

namespace fx = fluxion;

int main(int argc, char** argv) {
  fx::set_num_threads(1);
  const int64_t n = int64_t{1} << 20;
  fx::Tensor x = fx::random::normal(fx::random::key(1), {n}, fx::f32);
  fx::Tensor y = fx::random::normal(fx::random::key(2), {n}, fx::f32);
  auto special = fx::jit([](const fx::Tensor& a, const fx::Tensor& b) { return fx::tanh(a) * b + fx::exp(-(a * a)); });
  auto arith = fx::jit(
      [](const fx::Tensor& a, const fx::Tensor& b) { return (a * b - b) / (a * a + 2.0) + fx::sqrt(b * b + 1.0); });
  auto reduce = fx::jit([](const fx::Tensor& a, const fx::Tensor& b) { return fx::sum(a * b + a); });
  struct Workload {
    const char* name;
    std::function<fx::Tensor()> run;
  };
  const std::vector<Workload> workloads = {{"jit tanh(x)*y + exp(-x^2)", [&] { return special(x, y); }},
                                           {"jit arithmetic + sqrt chain", [&] { return arith(x, y); }},
                                           {"jit sum(x*y + x)", [&] { return reduce(x, y); }},
                                           {"eager exp(x)", [&] { return fx::exp(x); }},
                                           {"eager x*y", [&] { return x * y; }},
                                           {"eager sum(x)", [&] { return fx::sum(x); }}};
  std::vector<fx::cpu::Isa> isas;
  for (int i = 0; i <= static_cast<int>(fx::cpu::supported_isa()); ++i) isas.push_back(static_cast<fx::cpu::Isa>(i));
  const int rounds = argc > 1 ? std::max(1, std::stoi(argv[1])) : 7;
  std::vector<std::vector<double>> best(workloads.size(), std::vector<double>(isas.size(), 1e300));
  for (int r = 0; r < rounds; ++r) {
    for (size_t w = 0; w < workloads.size(); ++w) {
      for (size_t i = 0; i < isas.size(); ++i) {
        fx::cpu::set_isa(isas[i]);
        workloads[w].run();  // warm: traced, planned, buffers held
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < 20; ++k) workloads[w].run();
        const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        best[w][i] = std::min(best[w][i], us / 20);
      }
    }
  }
  std::printf("f32[%lld], 1 thread, best of %d interleaved rounds (us per call)\n", static_cast<long long>(n), rounds);
  std::printf("%-30s", "workload");
  for (fx::cpu::Isa isa : isas) std::printf(" %12s", isas.size() == 1 ? "this build" : fx::cpu::isa_name(isa));
  std::printf("\n");
  for (size_t w = 0; w < workloads.size(); ++w) {
    std::printf("%-30s", workloads[w].name);
    for (double us : best[w]) std::printf(" %12.1f", us);
    std::printf("\n");
  }
}
