/// RecycledArray: an array the jit executor hands out call after call without allocating, taken back
/// only once every handle from the last call is gone (internal).
///
/// Its bytes (an output) or the bytes given to each take (a view of an argument), its ArrayImpl and
/// the control blocks of the shared_ptrs it hands out all live in the RecycledArray. Every control
/// block's deallocation ends with a release decrement of `refs_`, and take() reads `refs_` with
/// acquire: all that any thread did with the last call's result (read its bytes, its ArrayImpl)
/// happens before the next call writes them. shared_ptr::use_count() could not decide this: it is
/// a relaxed load, so a reuse decided from it is ordered after nothing (a data race on weakly
/// ordered CPUs, and what ThreadSanitizer reported).
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>

#include "fluxion/tensor.hpp"

namespace fluxion::runtime {

class RecycledArray {
  template <class T> friend class RecycledBlockAllocator;

 public:
  struct Retire {
    void operator()(RecycledArray* a) const noexcept { a->retire(); }
  };
  /// The owner's handle (a RunState's). Dropping it deletes the array once no handle from it is alive.
  using Owner = std::unique_ptr<RecycledArray, Retire>;

  /// An array of `aval` with bytes of its own on `device` (a jit output).
  static Owner output(const AbstractValue& aval, Device device);
  /// An array of `aval` viewing bytes that each take gives it (a view of a jit argument or output).
  static Owner view(const AbstractValue& aval);

  /// A handle on this array's own bytes, or an undefined Tensor while a handle from the last take
  /// (or a view of its bytes) is alive: the caller then allocates.
  Tensor take();
  /// A handle viewing `bytes` (this array then holds them until no handle is alive), or an undefined
  /// Tensor as take().
  Tensor take(std::shared_ptr<Buffer> bytes);

 private:
  // 64 bytes hold a shared_ptr control block with an empty deleter and a two-word allocator
  // (libstdc++ and libc++: 32 to 40 bytes); a larger one is allocated (correct, not allocation-free).
  static constexpr size_t kBlockBytes = 64;
  enum Block { bytes_block = 0, impl_block = 1 };

  RecycledArray(const AbstractValue& aval, std::unique_ptr<Buffer> bytes);
  ~RecycledArray();
  /// Points impl_ at `bytes` and hands out a handle on it (refs_ said nothing else is out).
  Tensor hand_out(std::shared_ptr<Buffer> bytes);
  void retire() noexcept { drop_ref(); }
  void drop_ref() noexcept;

  AbstractValue aval_;
  std::unique_ptr<Buffer> bytes_;  // null for a view
  std::unique_ptr<ArrayImpl> impl_;
  // The owner (until retire) plus one per control block handed out and not yet deallocated.
  std::atomic<int> refs_{1};
  alignas(std::max_align_t) unsigned char blocks_[2][kBlockBytes];
};

/// Puts the control block of a shared_ptr made by RecycledArray in one of its block slots, and hands
/// the slot back (a release decrement of the array's refs) when the block is deallocated.
template <class T> class RecycledBlockAllocator {
 public:
  using value_type = T;
  RecycledBlockAllocator(RecycledArray* array, int block) : array_(array), block_(block) {}
  template <class U> RecycledBlockAllocator(const RecycledBlockAllocator<U>& other)
      : array_(other.array_), block_(other.block_) {}

  T* allocate(size_t n) {
    if (n * sizeof(T) <= RecycledArray::kBlockBytes && alignof(T) <= alignof(std::max_align_t))
      return reinterpret_cast<T*>(array_->blocks_[block_]);
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  // The last thing the shared_ptr does with the block: after the decrement the slot may be reused
  // (or the array deleted).
  void deallocate(T* p, size_t) noexcept {
    if (reinterpret_cast<unsigned char*>(p) != array_->blocks_[block_]) ::operator delete(p);
    array_->drop_ref();
  }
  template <class U> bool operator==(const RecycledBlockAllocator<U>& o) const {
    return array_ == o.array_ && block_ == o.block_;
  }
  template <class U> bool operator!=(const RecycledBlockAllocator<U>& o) const { return !(*this == o); }

 private:
  template <class U> friend class RecycledBlockAllocator;
  RecycledArray* array_;
  int block_;
};

}  // namespace fluxion::runtime
