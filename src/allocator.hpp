/// Memory for tensor buffers (internal). CPU: 64-byte aligned blocks from a size-bucketed cache.
///
/// Freed blocks are kept per size class and handed out again, so chains of eager ops neither
/// return large blocks to the OS (and page-fault them back) nor take glibc's slow memalign path
/// for small ones. Sizes are rounded up to a class: powers of two up to 4 KiB, then four classes
/// per power of two (at most 25 % slack). The cache holds at most `limit()` bytes (default
/// min(1 GiB, RAM / 8); the environment variable FLUXION_ALLOCATOR_CACHE_BYTES overrides it, 0
/// disables caching; sanitizer builds default to 0 so that use-after-free stays detectable).
/// Thread-safe: one spin lock per size class. Live bytes (handed out, not yet returned) and their
/// peak are counted with relaxed atomics, so tests can measure the memory a computation holds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fluxion/device.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::cpu_memory {

/// Alignment of every block (Eigen maps of tensor data use Eigen::Aligned64).
inline constexpr size_t kAlignment = 64;

/// A block of at least `nbytes` (> 0) bytes, aligned to kAlignment. OutOfMemoryError naming the
/// size when the system has no memory left even after the cache was released.
void* allocate(size_t nbytes);
/// Returns a block from allocate(nbytes), with the same nbytes, to the cache (or the system).
void deallocate(void* p, size_t nbytes) noexcept;
/// Frees every cached block; returns the number of bytes given back to the system.
size_t release_cached();

struct Stats {
  size_t cached_bytes = 0;     // bytes held in the cache now
  size_t limit = 0;            // the cache's cap
  uint64_t hits = 0;           // allocations served from the cache
  uint64_t misses = 0;         // allocations that went to the system
  size_t live_bytes = 0;       // bytes of blocks handed out and not yet returned (class-rounded)
  size_t peak_live_bytes = 0;  // the most live_bytes seen since start or the last reset_peak()
};
/// Counters for tests and benchmarks.
Stats stats();
/// Sets peak_live_bytes to the current live_bytes (to measure the peak of one computation).
void reset_peak();

}  // namespace fluxion::cpu_memory

namespace fluxion::device_memory {

/// The cap of a device's cache in bytes: FLUXION_ALLOCATOR_CACHE_BYTES when it is a plain number
/// (one setting for the CPU and the GPU caches), else `fallback`.
inline int64_t cache_limit(int64_t fallback) {
  const char* env = std::getenv("FLUXION_ALLOCATOR_CACHE_BYTES");
  if (!env || !*env) return fallback;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (end == env || *end != '\0' || v > static_cast<unsigned long long>(INT64_MAX)) return fallback;
  return static_cast<int64_t>(v);
}

/// The outcome of one attempt at a device allocation. Failures other than out-of-memory are
/// thrown by the attempt itself (a DeviceError naming the CUDA call).
enum class Attempt { ok, out_of_memory };

/// What the device's allocator holds: `held` bytes reserved from the device (live tensors and the
/// cache), `live` of them in tensors not yet freed.
struct Held {
  int64_t held = 0;
  int64_t live = 0;
};

/// The out-of-memory policy of the CUDA allocator, host code so that a CPU test drives it with
/// fakes (tests/test_cuda_allocator_policy.cpp). `try_allocate()` makes one attempt; when the
/// device is out of memory, `release()` gives the cache back to the device (after the pending
/// stream-ordered frees completed) and one more attempt is made; when that fails too, the result is
/// an OutOfMemoryError naming the bytes asked for and those still held (`held()`, after release).
template <class TryAllocate, class Release, class HeldBytes>
void allocate_or_throw(Device device, int64_t nbytes, TryAllocate&& try_allocate, Release&& release, HeldBytes&& held) {
  if (try_allocate() == Attempt::ok) return;
  release();
  if (try_allocate() == Attempt::ok) return;
  const Held h = held();
  detail::fail<OutOfMemoryError>("cuda", "could not allocate ", nbytes, " bytes on ", device,
                                 ": the device is out of memory even after Fluxion released its cache; Fluxion "
                                 "holds ",
                                 h.held, " bytes there, ", h.live,
                                 " of them in live tensors. Free tensors you no longer need, reduce the sizes, "
                                 "or leave more of the GPU to Fluxion (other processes may hold memory).");
}

}  // namespace fluxion::device_memory
