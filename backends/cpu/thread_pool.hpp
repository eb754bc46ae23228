/// Fluxion's CPU thread pool: the one set of worker threads that every parallel CPU kernel and the
/// plan runner use (no OpenMP). parallel_for hands tasks out through an atomic counter, so a worker
/// that the OS has not scheduled yet holds nothing back: the calling thread takes tasks too and
/// finishes the loop alone if no worker ever wakes. Idle workers spin for a bounded time
/// (FLUXION_SPIN_US, default kDefaultSpinMicroseconds), then sleep on a condition variable: on a
/// machine shared with other processes they give their cores back instead of busy-waiting.
///
/// Sized by fluxion::num_threads(): num_threads() - 1 workers plus the caller, started on first
/// use; set_num_threads stops them, and the next loop starts as many as it needs. One loop runs
/// on the workers at a time; a loop started from inside a task (nested), or by another thread
/// while the workers are busy, runs on its calling thread alone. After fork(), the child runs every
/// loop on its calling thread (the parent's workers do not exist there).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace fluxion::cpu {

/// Microseconds an idle worker (and a caller waiting for the last task) spins before sleeping,
/// unless FLUXION_SPIN_US says otherwise (0: sleep at once).
inline constexpr int kDefaultSpinMicroseconds = 50;

/// Runs one claimed chunk: tasks [begin, end) of the loop, on worker `worker` (0 is the caller).
using ChunkFn = void (*)(void* context, int64_t begin, int64_t end, int worker);

/// The untyped entry of parallel_for: tasks [0, n) in chunks of `grain`, on up to `threads`
/// threads. Exceptions thrown by `fn` are rethrown here (the first; later chunks are skipped).
void run_parallel(int64_t n, int64_t grain, int threads, ChunkFn fn, void* context);

/// True on a pool worker and on a thread running a parallel_for's tasks: a parallel_for started
/// there runs serially on that thread (kernel_threads() is 1).
bool in_parallel_region();

/// Stops the workers (they restart on demand, as many as the next loop needs); called by
/// fluxion::set_num_threads. From inside a parallel region it does nothing.
void stop_thread_pool();

/// Workers running now (not counting callers): for tests.
int thread_pool_workers();

/// The spin time of idle threads in microseconds; set_spin_microseconds(n) changes it (n >= 0),
/// as FLUXION_SPIN_US does at start.
int spin_microseconds();
void set_spin_microseconds(int us);

/// fn(task, worker) for every task in [0, n), each exactly once, on up to `threads` threads:
/// `worker` in [0, threads) names the thread (0: the caller), for per-thread scratch. Tasks are
/// claimed `grain` at a time. Returns when every task has run; rethrows the first exception.
template <class F> void parallel_for(int64_t n, int threads, int64_t grain, F&& fn) {
  using Fn = std::remove_reference_t<F>;
  run_parallel(
      n, grain, threads,
      [](void* context, int64_t begin, int64_t end, int worker) {
        Fn& f = *static_cast<Fn*>(context);
        for (int64_t i = begin; i < end; ++i) f(i, worker);
      },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

template <class F> void parallel_for(int64_t n, int threads, F&& fn) { parallel_for(n, threads, 1, fn); }

/// parallel_for with whole chunks: fn(begin, end, worker) for the claimed tasks [begin, end).
template <class F> void parallel_chunks(int64_t n, int threads, int64_t grain, F&& fn) {
  using Fn = std::remove_reference_t<F>;
  run_parallel(
      n, grain, threads,
      [](void* context, int64_t begin, int64_t end, int worker) { (*static_cast<Fn*>(context))(begin, end, worker); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

/// Splits [0, extent) into `parts` ranges as even as possible, each starting on a multiple of
/// `align`; range `part` is [begin, end).
struct Split {
  int64_t extent, parts, align = 1;
  int64_t begin(int64_t part) const {
    const int64_t units = (extent + align - 1) / align;
    return std::min(extent, units * part / parts * align);
  }
  int64_t end(int64_t part) const { return begin(part + 1); }
};

/// Ranges per thread that parallel_ranges cuts: a worker that starts late, or is descheduled by
/// another process, leaves at most one such range to wait for while the others take the rest.
inline constexpr int kRangesPerThread = 4;

/// fn(begin, end, worker) over [0, extent) cut into up to threads * kRangesPerThread ranges of
/// at least `min_size` elements (each starting on a multiple of `align`). The cut depends on
/// `threads` and the sizes only, not on which thread runs what: results are reproducible.
template <class F> void parallel_ranges(int64_t extent, int threads, int64_t min_size, int64_t align, F&& fn) {
  if (extent <= 0) return;
  const int64_t most = std::max<int64_t>(1, extent / std::max<int64_t>(min_size, 1));
  const int64_t parts = threads <= 1 ? 1 : std::min<int64_t>(int64_t{threads} * kRangesPerThread, most);
  if (parts == 1) return fn(int64_t{0}, extent, 0);
  const Split split{extent, parts, std::max<int64_t>(align, 1)};
  parallel_for(parts, threads, [&](int64_t part, int worker) {
    const int64_t b = split.begin(part), e = split.end(part);
    if (e > b) fn(b, e, worker);
  });
}

}  // namespace fluxion::cpu
