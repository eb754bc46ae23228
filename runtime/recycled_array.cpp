// RecycledArray: jit outputs and views handed out without allocating, taken back with acquire.
#include "runtime/recycled_array.hpp"

namespace fluxion::runtime {

namespace recycled_detail {

// The deleters of the handed-out shared_ptrs: the storage stays in the RecycledArray.
struct KeepBytes {
  void operator()(Buffer*) const noexcept {}
};
// The last handle on the ArrayImpl is gone: it lets go of its bytes (a caller's argument, or this
// array's own bytes, whose block then goes back too).
struct ParkImpl {
  void operator()(ArrayImpl* impl) const noexcept { impl->rebind(nullptr); }
};

}  // namespace recycled_detail

RecycledArray::RecycledArray(const AbstractValue& aval, std::unique_ptr<Buffer> bytes)
    : aval_(aval), bytes_(std::move(bytes)) {}

RecycledArray::~RecycledArray() = default;

RecycledArray::Owner RecycledArray::output(const AbstractValue& aval, Device device) {
  const int64_t nbytes = aval.shape.num_elements() * static_cast<int64_t>(dtype_size(aval.dtype));
  return Owner(new RecycledArray(aval, std::make_unique<Buffer>(device, nbytes)));
}

RecycledArray::Owner RecycledArray::view(const AbstractValue& aval) { return Owner(new RecycledArray(aval, nullptr)); }

void RecycledArray::drop_ref() noexcept {
  // Release: this thread's uses of the array happen before the next take (acquire) or the delete.
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

Tensor RecycledArray::take() {
  if (refs_.load(std::memory_order_acquire) != 1) return Tensor();
  std::shared_ptr<Buffer> bytes(bytes_.get(), recycled_detail::KeepBytes{},
                                RecycledBlockAllocator<Buffer>(this, bytes_block));
  // Only this thread can hand the array out: relaxed suffices until a handle leaves it.
  refs_.fetch_add(1, std::memory_order_relaxed);
  return hand_out(std::move(bytes));
}

Tensor RecycledArray::take(std::shared_ptr<Buffer> bytes) {
  if (refs_.load(std::memory_order_acquire) != 1) return Tensor();
  if (impl_ && impl_->device() != bytes->device()) return Tensor();  // made for another device's bytes
  return hand_out(std::move(bytes));
}

Tensor RecycledArray::hand_out(std::shared_ptr<Buffer> bytes) {
  // Made on the first take (allocates once); a throw here drops `bytes` and with it their block.
  if (!impl_) impl_ = std::make_unique<ArrayImpl>(aval_, std::move(bytes));
  else impl_->rebind(std::move(bytes));
  std::shared_ptr<ArrayImpl> impl(impl_.get(), recycled_detail::ParkImpl{},
                                  RecycledBlockAllocator<ArrayImpl>(this, impl_block));
  refs_.fetch_add(1, std::memory_order_relaxed);
  return Tensor(std::move(impl));
}

}  // namespace fluxion::runtime
