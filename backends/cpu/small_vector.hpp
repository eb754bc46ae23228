/// Index arithmetic without heap allocations: the CPU kernels' per-call strides and box dims live
/// in SmallVector (room for 8 elements inline, the heap only past that rank) and are passed as
/// IndexSpan, so a jit'd plan's movement kernels (slice, pad, transpose, broadcasts, permuted
/// operands) allocate nothing per call (small jit'd Hessians made 32-37 allocations a
/// call before, all of them std::vector temporaries here; measured: bench/RESULTS.md).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace fluxion::cpu {

/// A vector of trivially copyable T with room for N elements inline; past N all elements move to
/// the heap (ranks above N still work, they just allocate).
template <class T, size_t N = 8> class SmallVector {
 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, const T& value = T()) { resize(n, value); }
  SmallVector(std::initializer_list<T> values) {
    for (const T& v : values) push_back(v);
  }
  template <class It, class = decltype(*std::declval<It>())> SmallVector(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return spilled_ ? heap_.data() : inline_; }
  const T* data() const { return spilled_ ? heap_.data() : inline_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& v) {
    if (!spilled_ && size_ < N) {
      inline_[size_++] = v;
      return;
    }
    if (!spilled_) {
      heap_.assign(inline_, inline_ + size_);
      spilled_ = true;
    }
    heap_.push_back(v);
    ++size_;
  }
  void pop_back() {
    --size_;
    if (spilled_) heap_.pop_back();
  }
  void resize(size_t n, const T& value = T()) {
    while (size_ > n) pop_back();
    while (size_ < n) push_back(value);
  }
  /// Removes element i, moving the later ones down.
  void erase_at(size_t i) {
    T* d = data();
    std::copy(d + i + 1, d + size_, d + i);
    pop_back();
  }
  void clear() {
    size_ = 0;
    heap_.clear();
    spilled_ = false;
  }

 private:
  T inline_[N] = {};  // value-initialised: copies of the object never read indeterminate slots
  size_t size_ = 0;
  bool spilled_ = false;
  std::vector<T> heap_;  // all the elements once spilled_
};

/// Kernels' index vectors: shapes, strides, box dims.
using IndexVector = SmallVector<int64_t>;

/// A read-only view of int64 indices: a std::vector's, a SmallVector's, or a plain array's.
class IndexSpan {
 public:
  IndexSpan(const std::vector<int64_t>& v) : p_(v.data()), n_(v.size()) {}  // NOLINT: implicit on purpose
  template <size_t N> IndexSpan(const SmallVector<int64_t, N>& v)
      : p_(v.data()), n_(v.size()) {}  // NOLINT: implicit on purpose
  IndexSpan(const int64_t* p, size_t n) : p_(p), n_(n) {}

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](size_t i) const { return p_[i]; }
  const int64_t* begin() const { return p_; }
  const int64_t* end() const { return p_ + n_; }

 private:
  const int64_t* p_;
  size_t n_;
};

/// Temporaries larger than this are allocated for the call only, not kept by scratch_buffer.
inline constexpr size_t kMaxKeptScratchBytes = size_t(64) << 20;

/// Room for n elements of A for a kernel's temporary (a permuted operand): the calling thread's
/// buffer number `slot` (0 or 1: two may be live at once), grown when too small and kept, so
/// steady-state calls do not allocate. Above kMaxKeptScratchBytes the room is allocated into
/// `owned` for this call only. The contents are garbage.
template <class A> A* scratch_buffer(int slot, size_t n, std::unique_ptr<A[]>& owned) {
  if (n * sizeof(A) > kMaxKeptScratchBytes) {
    owned.reset(new A[n]);
    return owned.get();
  }
  thread_local std::vector<A> kept[2];
  std::vector<A>& b = kept[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace fluxion::cpu
