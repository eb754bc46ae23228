/// CPU memory for tensor buffers (internal): 64-byte aligned blocks from a size-bucketed cache.
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
