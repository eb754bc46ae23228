/// How many threads a CPU kernel uses: the size from which a product threads itself, and the
/// threads a kernel may take where it is started (the planner also reads both).
#pragma once

#include "backends/cpu/thread_pool.hpp"
#include "fluxion/device.hpp"

namespace fluxion::cpu {

/// Multiply-adds (m*n*k) from which a GEMM is "large": it runs on kernel_threads() threads, in
/// slices over Fluxion's thread pool (thread_pool.hpp), each slice one single-threaded library
/// product (on one thread, through OpenBLAS when choose_product says so). Smaller products run on
/// the calling thread only (waking the workers costs more than such a product saves). Only one
/// thread pool is ever awake, Fluxion's, which the plan runner's fused groups use too: OpenBLAS is
/// kept single-threaded (src/threads.cpp). Its yielding workers and a busy-waiting team slowed
/// each other down 2-10x when both were awake on 2 cores (a 2-thread f64 product workload: 7.75
/// ms against 1.68 on one; measured: bench/RESULTS.md).
inline constexpr double kLargeWork = 1 << 22;

/// Threads a kernel started on the calling thread may use: num_threads(), or 1 inside a parallel
/// region (a pool task: the plan runner runs independent kernels side by side, one per thread),
/// where a nested loop would run serially anyway.
inline int kernel_threads() {
  if (in_parallel_region()) return 1;
  return num_threads();
}

}  // namespace fluxion::cpu
