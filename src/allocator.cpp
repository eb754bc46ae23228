// CPU buffer allocator: a size-bucketed cache of 64-byte aligned blocks (see src/allocator.hpp).
#include "src/allocator.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::cpu_memory {
namespace allocator_detail {

// Size classes: 64, 128, ..., 4096 bytes (powers of two), then 4 classes per power of two
// (2^k * {1.25, 1.5, 1.75, 2}) up to 2^kMaxLog2 bytes. Larger blocks are never cached.
constexpr int kPow2Classes = 7;  // 64 .. 4096
constexpr int kQuarterFromLog2 = 12;
constexpr int kMaxLog2 = 46;  // 64 TiB: far above any cache limit
constexpr int kNumClasses = kPow2Classes + 4 * (kMaxLog2 - kQuarterFromLog2);

inline int floor_log2(size_t n) { return 63 - __builtin_clzll(static_cast<unsigned long long>(n)); }

/// The class of a request of n > 0 bytes, or -1 when it is too large to cache.
inline int class_of(size_t n) {
  if (n <= 64) return 0;
  int k = floor_log2(n - 1);  // 2^k < n <= 2^(k+1)
  if (k < kQuarterFromLog2) return k + 1 - 6;
  if (k >= kMaxLog2) return -1;
  size_t step = size_t(1) << (k - 2);
  size_t j = (n - (size_t(1) << k) + step - 1) / step;  // 1..4
  return kPow2Classes + 4 * (k - kQuarterFromLog2) + static_cast<int>(j) - 1;
}

/// Bytes of a block of class c.
inline size_t class_bytes(int c) {
  if (c < kPow2Classes) return size_t(64) << c;
  int q = c - kPow2Classes;
  int k = kQuarterFromLog2 + q / 4;
  return (size_t(1) << k) + static_cast<size_t>(q % 4 + 1) * (size_t(1) << (k - 2));
}

/// A test-and-test-and-set lock: the critical sections below are a few instructions, and an
/// uncontended lock + unlock costs ~10 instructions against ~50 for std::mutex (callgrind, see
/// bench/RESULTS.md). A waiter that finds the holder descheduled yields.
class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins)
        if (spins >= 64) std::this_thread::yield();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

/// Freed blocks of one class, as an intrusive LIFO list (the first word of each block points to
/// the next), so caching allocates nothing and the most recently freed (cache-warm) block is
/// reused first. Counters are updated under the lock.
struct alignas(64) Bucket {
  SpinLock lock;
  void* head = nullptr;
  uint64_t hits = 0, misses = 0;
};

constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

size_t default_limit() {
  if (kSanitized) return 0;  // keep use-after-free of tensor buffers visible to ASan
  size_t limit = size_t(1) << 30;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = std::min(limit, static_cast<size_t>(pages) * static_cast<size_t>(page) / 8);
  return limit;
}

size_t limit_from_env() {
  const char* env = std::getenv("FLUXION_ALLOCATOR_CACHE_BYTES");
  if (!env || !*env) return default_limit();
  char* end = nullptr;
  unsigned long long v = std::strtoull(env, &end, 10);
  if (end == env || *end != '\0') return default_limit();  // not a plain number: ignored
  return static_cast<size_t>(v);
}

struct Cache {
  const size_t limit = limit_from_env();
  std::atomic<size_t> cached_bytes{0};
  Bucket buckets[kNumClasses];
  // Bytes handed out and not yet returned, and their peak (own cache line: every allocation
  // touches them).
  alignas(64) std::atomic<size_t> live_bytes{0};
  std::atomic<size_t> peak_live_bytes{0};
};

/// Never destroyed: buffers may be freed by other static destructors at exit.
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

void* system_allocate(size_t bytes) { return std::aligned_alloc(kAlignment, bytes); }

/// Counts a block of `bytes` as handed out and raises the peak (a relaxed atomic max).
inline void add_live(Cache& c, size_t bytes) {
  const size_t now = c.live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  size_t peak = c.peak_live_bytes.load(std::memory_order_relaxed);
  while (now > peak && !c.peak_live_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
}

/// Bytes of the block that serves a request of nbytes too large to cache.
inline size_t uncached_bytes(size_t nbytes) { return (nbytes + kAlignment - 1) / kAlignment * kAlignment; }

/// Pops every block of every bucket and frees it; returns the bytes freed.
size_t release_all(Cache& c) {
  size_t freed = 0;
  for (int i = 0; i < kNumClasses; ++i) {
    Bucket& b = c.buckets[i];
    void* list;
    {
      std::lock_guard<SpinLock> guard(b.lock);
      list = b.head;
      b.head = nullptr;
    }
    size_t bytes = class_bytes(i);
    while (list) {
      void* next = *static_cast<void**>(list);
      std::free(list);
      c.cached_bytes.fetch_sub(bytes, std::memory_order_relaxed);
      freed += bytes;
      list = next;
    }
  }
  return freed;
}

[[noreturn]] void out_of_memory(size_t nbytes) {
  detail::fail<OutOfMemoryError>("buffer", "could not allocate ", nbytes, " bytes on cpu. ",
                                 "Reduce the tensor sizes or free memory.");
}

}  // namespace allocator_detail

void* allocate(size_t nbytes) {
  using namespace allocator_detail;
  Cache& c = cache();
  const int cls = nbytes <= c.limit ? class_of(nbytes) : -1;
  size_t bytes;
  if (cls >= 0) {
    Bucket& b = c.buckets[cls];
    bytes = class_bytes(cls);
    std::lock_guard<SpinLock> guard(b.lock);
    if (void* p = b.head) {
      b.head = *static_cast<void**>(p);
      ++b.hits;
      c.cached_bytes.fetch_sub(bytes, std::memory_order_relaxed);
      add_live(c, bytes);
      return p;
    }
    ++b.misses;
  } else {
    if (nbytes > SIZE_MAX - kAlignment) out_of_memory(nbytes);
    bytes = uncached_bytes(nbytes);
  }
  void* p = system_allocate(bytes);
  if (!p && c.cached_bytes.load(std::memory_order_relaxed) > 0) {
    release_all(c);  // cached blocks of other sizes may be what the system is missing
    p = system_allocate(bytes);
  }
  if (!p) out_of_memory(nbytes);
  add_live(c, bytes);
  return p;
}

void deallocate(void* p, size_t nbytes) noexcept {
  using namespace allocator_detail;
  if (!p) return;
  Cache& c = cache();
  const int cls = nbytes <= c.limit ? class_of(nbytes) : -1;
  const size_t bytes = cls >= 0 ? class_bytes(cls) : uncached_bytes(nbytes);
  c.live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  if (cls >= 0) {
    // Reserve room under the cap first; when the cache is full the block goes to the system.
    if (c.cached_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes <= c.limit) {
      Bucket& b = c.buckets[cls];
      std::lock_guard<SpinLock> guard(b.lock);
      *static_cast<void**>(p) = b.head;
      b.head = p;
      return;
    }
    c.cached_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  }
  std::free(p);
}

void reset_peak() {
  allocator_detail::Cache& c = allocator_detail::cache();
  c.peak_live_bytes.store(c.live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

size_t release_cached() { return allocator_detail::release_all(allocator_detail::cache()); }

Stats stats() {
  using namespace allocator_detail;
  Cache& c = cache();
  Stats s;
  s.cached_bytes = c.cached_bytes.load(std::memory_order_relaxed);
  s.limit = c.limit;
  s.live_bytes = c.live_bytes.load(std::memory_order_relaxed);
  s.peak_live_bytes = c.peak_live_bytes.load(std::memory_order_relaxed);
  for (Bucket& b : c.buckets) {
    std::lock_guard<SpinLock> guard(b.lock);
    s.hits += b.hits;
    s.misses += b.misses;
  }
  return s;
}

}  // namespace fluxion::cpu_memory

namespace fluxion {
// The CPU cache, then every CUDA device's pool (nothing without CUDA).
int64_t release_cached_memory() {
  return static_cast<int64_t>(cpu_memory::release_cached()) + cuda::memory::release_cached();
}
}  // namespace fluxion
