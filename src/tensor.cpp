// Buffers, tensor handles, creation functions and printing.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <new>
#include <sstream>

#include "fluxion/cuda.hpp"
#include "fluxion/interpreter.hpp"
#include "fluxion/tensor.hpp"
#include "fluxion/tensor_format.hpp"
#include "src/allocator.hpp"

namespace fluxion {

Buffer::Buffer(Device device, int64_t nbytes) : nbytes_(nbytes), device_(device) {
  if (device.is_cuda()) {  // throws DeviceError saying why when CUDA is unavailable
    data_ = cuda::memory::allocate(device.index, nbytes);
    return;
  }
  // 64-byte aligned (Eigen maps use Aligned64), from the size-bucketed cache of src/allocator.cpp;
  // OutOfMemoryError naming the size when the system has no memory left.
  if (nbytes > 0) data_ = cpu_memory::allocate(static_cast<size_t>(nbytes));
}

Buffer::~Buffer() {
  if (device_.is_cuda()) cuda::memory::deallocate(device_.index, data_);
  else cpu_memory::deallocate(data_, static_cast<size_t>(nbytes_));
}

FLUXION_REPL_INLINE Tensor TracerImpl::concrete_value(const char* what) const {
  detail::fail<ConcretizationError>(
      what, "cannot convert a value traced by ", owner_->transform, " (", aval(), ") to a concrete value: under ",
      owner_->transform,
      " values are abstract. Use fx::where, fx::cond or fx::while_loop for value-dependent "
      "control flow.");
}

FLUXION_REPL_INLINE Tensor TracerImpl::value_for_read(const char* what) const { return concrete_value(what); }

void Tensor::fail_empty() {
  detail::fail<Error>("tensor", "use of an empty (default-constructed) Tensor. ", "Assign it a value first.");
}

Tensor Tensor::concrete(const char* what) const {
  const TensorImpl* p = checked();
  if (!p->is_tracer()) return *this;
  return static_cast<const TracerImpl*>(p)->concrete_value(what).concrete(what);
}

Tensor Tensor::concrete_for_read(const char* what) const {
  const TensorImpl* p = checked();
  if (!p->is_tracer()) return *this;
  return static_cast<const TracerImpl*>(p)->value_for_read(what).concrete_for_read(what);
}

void Tensor::fail_not_concrete(const char* what) const {
  const TensorImpl* p = checked();
  // A tracer whose transform knows a concrete value (jvp) is never handed to a kernel directly.
  static_cast<const TracerImpl*>(p)->concrete_value(what);
  detail::fail<ConcretizationError>(what, "expected a concrete array, got a traced value ", p->aval(),
                                    ". Call .concrete() first.");
}

namespace detail {
void fail_dtype_access(const Tensor& t, DType requested, const char* what) {
  fail<DTypeError>(what, "requested elements of type ", requested, " from a tensor of dtype ", t.dtype(),
                   ". Convert with fx::astype or use the matching C++ type.");
}
Tensor copy_to_host(const Tensor& t) { return device_put(t, Device::cpu()); }
}  // namespace detail

Tensor empty(const AbstractValue& aval, Device device) {
  int64_t n = checked_num_elements("empty", aval.shape.dims());
  auto buffer = std::make_shared<Buffer>(device, n * dtype_size(aval.dtype));
  return Tensor(std::make_shared<ArrayImpl>(aval, std::move(buffer)));
}

Tensor make_view(const Tensor& base, const AbstractValue& aval) {
  const ArrayImpl& a = base.array("view");
  return Tensor(std::make_shared<ArrayImpl>(aval, a.buffer()));
}

// ---- creation ----
namespace tensor_create {

/// A fresh array for the creation function `op`: shape errors and allocation failures name `op`
/// (the user called zeros, not the internal `empty`).
Tensor allocate(const char* op, const Shape& shape, DType dtype) {
  checked_num_elements(op, shape.dims());
  try {
    return empty(AbstractValue{shape, dtype});
  } catch (const OutOfMemoryError& e) {
    std::string what = e.what();
    size_t body = what.find("] ");
    detail::fail<OutOfMemoryError>(op, "cannot create ", AbstractValue{shape, dtype}, ": ",
                                   body == std::string::npos ? what : what.substr(body + 2));
  }
}

/// Whether the integer `v` is representable in `dtype` (bool holds 0 and 1: arange's values).
bool int_fits(__int128 v, DType dtype) {
  switch (dtype) {
    case DType::boolean: return v == 0 || v == 1;
    case DType::i32: return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    case DType::i64: return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
    default: return true;  // floats hold every int64 (rounded)
  }
}

/// DTypeError naming `op` unless the integer `v` fits `dtype`.
void check_int(const char* op, __int128 v, DType dtype) {
  if (int_fits(v, dtype)) return;
  std::string text = v < 0 ? "-" : "";
  unsigned __int128 m = v < 0 ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string digits;
  do digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
  while ((m /= 10) != 0);
  detail::fail<DTypeError>(op, "the value ", text + digits, " does not fit in ", dtype,
                           dtype == boolean ? " (which holds 0 and 1)" : "", ". Pass a wider dtype (fx::i64 or ",
                           "fx::f64), or values in range.");
}

/// DTypeError naming `op` unless the double `v` is representable in `dtype`: integers take the
/// truncated value when it is in range (not NaN), f32 takes finite values below its overflow
/// threshold (and every inf / NaN, which are meant).
void check_float(const char* op, double v, DType dtype) {
  bool ok = true;
  if (dtype == f32) ok = !std::isfinite(v) || std::isfinite(static_cast<float>(v));
  else if (dtype == f16) ok = !std::isfinite(v) || std::isfinite(float16_t(v).to_float());
  else if (dtype == bf16) ok = !std::isfinite(v) || std::isfinite(bfloat16_t(v).to_float());
  else if (dtype != f64)
    ok = !std::isnan(v) && std::trunc(v) >= -0x1p63 && std::trunc(v) < 0x1p63 &&
         int_fits(static_cast<__int128>(std::trunc(v)), dtype);
  if (!ok)
    detail::fail<DTypeError>(op, "the value ", v, " does not fit in ", dtype, ". Pass a dtype that holds it ",
                             dtype == f32 || is_half(dtype) ? "(fx::f64)." : "(a float dtype), or a value in range.");
}

/// `shape` filled with `value` (already checked against dtype).
template <class V> Tensor filled(const char* op, const Shape& shape, V value, DType dtype) {
  Tensor t = allocate(op, shape, dtype);
  dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = detail::convert_scalar<T>(value);
    T* p = static_cast<T*>(t.array().data());
    std::fill(p, p + t.size(), v);
  });
  return t;
}

}  // namespace tensor_create

namespace detail {
// A bool dtype takes any value's truth (nonzero, NaN included, is true), like numpy's full.
Tensor full_int(const char* op, const Shape& shape, int64_t value, DType dtype) {
  if (dtype != boolean) tensor_create::check_int(op, value, dtype);
  return tensor_create::filled(op, shape, value, dtype);
}
Tensor full_uint(const char* op, const Shape& shape, uint64_t value, DType dtype) {
  if (dtype != boolean) tensor_create::check_int(op, static_cast<__int128>(value), dtype);
  return tensor_create::filled(op, shape, static_cast<int64_t>(value), dtype);
}
Tensor full_float(const char* op, const Shape& shape, double value, DType dtype) {
  if (dtype != boolean) tensor_create::check_float(op, value, dtype);
  return tensor_create::filled(op, shape, value, dtype);
}
}  // namespace detail

Tensor zeros(const Shape& shape, DType dtype) { return tensor_create::filled("zeros", shape, 0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return tensor_create::filled("ones", shape, 1, dtype); }
Tensor zeros_like(const Tensor& t) { return tensor_create::filled("zeros_like", t.shape(), 0, t.dtype()); }
Tensor ones_like(const Tensor& t) { return tensor_create::filled("ones_like", t.shape(), 1, t.dtype()); }

Tensor arange(int64_t n, DType dtype) { return arange(0, n, 1, dtype); }

// The count and the values are computed in 128 bits: stop - start and start + i * step can leave
// int64 (arange(INT64_MIN, INT64_MAX)) even when every value fits.
Tensor arange(int64_t start, int64_t stop, int64_t step, DType dtype) {
  if (step == 0) detail::fail<Error>("arange", "step must not be 0. Use a positive or negative step.");
  __int128 span = static_cast<__int128>(stop) - start, n = 0;
  if ((step > 0 && span > 0) || (step < 0 && span < 0)) n = (span + step + (step > 0 ? -1 : 1)) / step;
  constexpr __int128 kMaxElements = __int128(1) << 48;  // checked_num_elements' bound
  if (n > kMaxElements)
    detail::fail<ShapeError>("arange", "[", start, ", ", stop, ") with step ", step, " has more than 2^48 ",
                             "elements. Check start, stop and step for a mistake.");
  if (n > 0) {
    tensor_create::check_int("arange", start, dtype);
    tensor_create::check_int("arange", start + (n - 1) * step, dtype);
  }
  Tensor t = tensor_create::allocate("arange", Shape{static_cast<int64_t>(n)}, dtype);
  dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.array().data());
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
      p[i] = detail::convert_scalar<T>(static_cast<int64_t>(start + static_cast<__int128>(i) * step));
  });
  return t;
}

// Integer dtypes take the floor of each value, like numpy 2 and jnp.linspace; bool their truth.
Tensor linspace(double start, double stop, int64_t num, DType dtype) {
  if (num < 0) detail::fail<ShapeError>("linspace", "num must be >= 0, got ", num, ".");
  double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  auto value = [&](int64_t i) {
    double v = i == num - 1 && num > 1 ? stop : start + step * static_cast<double>(i);
    return is_integer(dtype) ? std::floor(v) : v;
  };
  for (int64_t i : {int64_t(0), num - 1})  // the values are monotonic: the ends decide the range
    if (i >= 0 && i < num && dtype != boolean) tensor_create::check_float("linspace", value(i), dtype);
  Tensor t = tensor_create::allocate("linspace", Shape{num}, dtype);
  dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.array().data());
    for (int64_t i = 0; i < num; ++i) p[i] = detail::convert_scalar<T>(value(i));
  });
  return t;
}

Tensor eye(int64_t n, DType dtype) {
  Tensor t = tensor_create::filled("eye", Shape{n, n}, 0, dtype);
  dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.array().data());
    for (int64_t i = 0; i < n; ++i) p[i * n + i] = T(1);
  });
  return t;
}

// ---- printing ----
std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(empty)";
  if (t.is_tracer()) {
    const auto& tr = static_cast<const TracerImpl&>(*t.impl());
    return os << "Traced<" << t.aval() << ">with<" << tr.owner()->transform << ">";
  }
  // Device values are printed from a host copy: device memory is never read on the host.
  return os << tensor_format::array_text(t.device().is_cpu() ? t : detail::copy_to_host(t));
}

}  // namespace fluxion
