/// Counts heap allocations: include in exactly one file of a test executable, which then replaces
/// the global operator new/delete. Allocations are counted while `alloc_count::counting` is set.
#pragma once
#include <atomic>
#include <cstdlib>
#include <new>

namespace alloc_count {
inline std::atomic<bool> counting{false};
inline std::atomic<long> allocations{0};

/// Heap allocations made by `calls` steady-state calls of `run` after three warm-up calls (trace,
/// compile, the output buffers).
template <class Run> long steady_allocations(const Run& run, int calls = 50) {
  for (int i = 0; i < 3; ++i) run();
  allocations = 0;
  counting = true;
  for (int i = 0; i < calls; ++i) run();
  counting = false;
  return allocations.load();
}
}  // namespace alloc_count

void* operator new(std::size_t n) {
  if (alloc_count::counting.load(std::memory_order_relaxed))
    alloc_count::allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too (std::stable_sort's buffer): under AddressSanitizer they are its own, and
// their blocks would come back through the free() below, which it reports as a mismatch.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (alloc_count::counting.load(std::memory_order_relaxed))
    alloc_count::allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
