// The time of one small collective across processes, with and without the cross-rank check of each call
// (FLUXION_DISTRIBUTED_CHECKS): `mpirun -np 2 build/bench/collective_latency [calls] [elements]` prints the
// median over 5 rounds of `calls` eager fx::all_sum calls of `elements` f64, per call, on rank 0.
// bench/data_parallel.sh runs it both ways.
#include <fluxion/fluxion.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fx = fluxion;

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int64_t elements = argc > 2 ? std::atoll(argv[2]) : 4;
  try {
    fx::distributed::init();
    fx::Tensor x = fx::ones({elements});
    for (int i = 0; i < 50; ++i) fx::all_sum(x, "world");  // warm up
    std::vector<double> rounds;
    for (int round = 0; round < 5; ++round) {
      fx::distributed::barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) fx::all_sum(x, "world");
      rounds.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                       calls);
    }
    std::sort(rounds.begin(), rounds.end());
    const char* checks = std::getenv("FLUXION_DISTRIBUTED_CHECKS");
    if (fx::distributed::rank() == 0)
      std::printf("all_sum of %lld f64 on %d ranks, check %s: %.2f us per call (median of 5 x %d calls)\n",
                  static_cast<long long>(elements), fx::distributed::size(),
                  checks && std::string(checks) == "0" ? "off" : "on", rounds[2], calls);
    fx::distributed::finalize();
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fx::distributed::finalize();
    return 2;
  }
  return 0;
}
