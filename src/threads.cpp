// CPU threads for large kernels: fluxion::num_threads / set_num_threads, and whether OpenBLAS's
// kernels suit this CPU (backends/cpu/gemm_choice.hpp asks before handing it a product).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>

#include "backends/cpu/gemm_choice.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "fluxion/device.hpp"

#if FLUXION_WITH_BLAS
#include <cblas.h>  // OpenBLAS's: openblas_set_num_threads, openblas_get_corename
#endif

namespace fluxion {
namespace threads_detail {

int default_threads() {
  if (const char* env = std::getenv("FLUXION_NUM_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return static_cast<int>(std::min<long>(v, 1024));
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

std::atomic<int> g_threads{0};  // 0: not configured yet
std::mutex g_mutex;

// The threads are Fluxion's pool (backends/cpu/thread_pool.hpp): a new count stops its workers,
// and loops start as many as they need. OpenBLAS always runs on the calling thread: with its own
// workers awake next to another team (products and fused groups), each pool waited for cores the
// other held (kernel_threads.hpp, kLargeWork), so multi-threaded products run as slices over the
// pool.
void apply(int n, bool resize) {
  (void)n;
#if FLUXION_WITH_BLAS
  openblas_set_num_threads(1);
#endif
  if (resize) cpu::stop_thread_pool();
}

}  // namespace threads_detail

int num_threads() {
  using namespace threads_detail;
  int n = g_threads.load(std::memory_order_acquire);
  if (n > 0) return n;
  std::lock_guard<std::mutex> lock(g_mutex);
  n = g_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = default_threads();
    apply(n, false);
    g_threads.store(n, std::memory_order_release);
  }
  return n;
}

void set_num_threads(int n) {
  using namespace threads_detail;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (n <= 0) n = default_threads();
  apply(n, g_threads.load(std::memory_order_relaxed) != n);
  g_threads.store(n, std::memory_order_release);
}

namespace cpu {
bool blas_usable() {
#if FLUXION_WITH_BLAS
  // OpenBLAS picks its kernels at load time from the CPU model; a version older than the CPU
  // falls back to generic ones (Debian 12's 0.3.21 runs its Prescott SSE3 kernels on the Emerald
  // Rapids development machine, 4-5x slower than Eigen with AVX-512). Use it only when its kernels
  // are at least as wide as the ISA Eigen was compiled for; OPENBLAS_CORETYPE=SkylakeX in the
  // environment gives OpenBLAS the right kernels there (bench/RESULTS.md).
  static const bool usable = [] {
    const char* core = openblas_get_corename();
    std::string c = core ? core : "";
    for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto any_of = [&](std::initializer_list<const char*> names) {
      for (const char* name : names)
        if (c == name) return true;
      return false;
    };
#if defined(__AVX512F__)
    return any_of({"skylakex", "cooperlake", "sapphirerapids"});
#elif defined(__AVX2__)
    return any_of({"skylakex", "cooperlake", "sapphirerapids", "haswell", "zen", "skylake", "alderlake"});
#else
    return !c.empty();
#endif
  }();
  return usable;
#else
  return false;
#endif
}
}  // namespace cpu

}  // namespace fluxion
