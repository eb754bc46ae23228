/// How many threads a CPU kernel uses: the size from which a product threads itself, and the
/// threads a kernel may take where it is started (the planner also reads both).
#pragma once

#include "fluxion/device.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fluxion::cpu {

/// Multiply-adds (m*n*k) from which a GEMM is "large": it runs on kernel_threads() threads through
/// Eigen's OpenMP product (on one thread, through OpenBLAS when blas_for() says so). Smaller
/// products run on the calling thread only (Eigen's own rule would thread even 64^3, where
/// starting the team and its barrier cost more than the product). Only one thread pool is ever
/// awake, OpenMP's, which the plan runner's fused groups use too: OpenBLAS is kept single-threaded
/// (src/threads.cpp). Its yielding workers and OpenMP's busy-waiting team slowed each other down
/// 2-10x when both were awake on 2 cores (a 2-thread f64 product workload: 7.75 ms against 1.68 on one; measured: bench/RESULTS.md).
inline constexpr double kLargeWork = 1 << 22;

/// Threads a kernel started on the calling thread may use: num_threads(), or 1 inside an OpenMP
/// parallel region, where the plan runner runs independent kernels side by side, one per thread
/// (a nested team would only be serialized by OpenMP).
inline int kernel_threads() {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
#endif
  return num_threads();
}

}  // namespace fluxion::cpu
