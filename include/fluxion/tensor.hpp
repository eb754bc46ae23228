/// Tensor: a cheap, immutable value handle — a concrete array on a device, or a tracer.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <ostream>
#include <type_traits>
#include <vector>

#include "fluxion/config.hpp"
#include "fluxion/device.hpp"
#include "fluxion/dtype.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/shape.hpp"

namespace fluxion {

class Tensor;
struct InterpreterTag;

/// Device memory for one array. Owned through shared_ptr; never mutated after its producer ran.
class Buffer {
 public:
  Buffer(Device device, int64_t nbytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  int64_t nbytes_ = 0;
  Device device_;
};

/// What a Tensor handle points to: a concrete array or a tracer.
class TensorImpl {
 public:
  TensorImpl(AbstractValue aval, Device device, bool tracer)
      : aval_(std::move(aval)), device_(device), tracer_(tracer) {}
  virtual ~TensorImpl() = default;
  const AbstractValue& aval() const { return aval_; }
  Device device() const { return device_; }
  /// A flag, not a virtual call: kernels ask it for every operand (Tensor::data).
  bool is_tracer() const { return tracer_; }

 private:
  AbstractValue aval_;
  Device device_;
  bool tracer_;
};

/// A concrete row-major contiguous array: an aval plus a (possibly shared) buffer.
class ArrayImpl final : public TensorImpl {
 public:
  ArrayImpl(AbstractValue aval, std::shared_ptr<Buffer> buffer)
      : TensorImpl(std::move(aval), buffer->device(), /*tracer=*/false), buffer_(std::move(buffer)) {}
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  void* data() const { return buffer_->data(); }
  /// Points this array at other bytes of the same device and size (null: none). Only for an
  /// impl no Tensor holds: jit's executor reuses its per-call views of arguments this way.
  void rebind(std::shared_ptr<Buffer> buffer) { buffer_ = std::move(buffer); }

 private:
  std::shared_ptr<Buffer> buffer_;
};

/// A value owned by an interpreter (jvp, batching, staging). Tagged with its owner so nested
/// transforms never confuse levels and leaked tracers are detected.
class TracerImpl : public TensorImpl {
 public:
  TracerImpl(AbstractValue aval, Device device, std::shared_ptr<InterpreterTag> owner)
      : TensorImpl(std::move(aval), device, /*tracer=*/true), owner_(std::move(owner)) {}
  const std::shared_ptr<InterpreterTag>& owner() const { return owner_; }
  /// The concrete value behind the tracer when its transform knows one (jvp: the primal).
  /// The default throws ConcretizationError naming the transform; `what` names the conversion.
  virtual Tensor concrete_value(const char* what) const;
  /// The concrete value for a read into C++ numbers (item, to_vector): as concrete_value, except
  /// that a value carrying a derivative (a jvp tracer with a tangent) refuses, since a number drops it.
  virtual Tensor value_for_read(const char* what) const;

 private:
  std::shared_ptr<InterpreterTag> owner_;
};

/// The user-facing value handle. Copying is cheap; storage is shared and immutable.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const AbstractValue& aval() const { return checked()->aval(); }
  const Shape& shape() const { return aval().shape; }
  int64_t ndim() const { return shape().size(); }
  int64_t size() const { return shape().num_elements(); }
  DType dtype() const { return aval().dtype; }
  Device device() const { return checked()->device(); }
  bool is_tracer() const { return checked()->is_tracer(); }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

  /// The concrete array behind this handle; ConcretizationError for a value traced by vmap/jit.
  /// `what` names the conversion for the message (e.g. "item").
  const ArrayImpl& array(const char* what = "array") const {
    const TensorImpl* p = checked();
    if (p->is_tracer()) fail_not_concrete(what);
    return static_cast<const ArrayImpl&>(*p);
  }
  /// This tensor made concrete (a jvp tracer yields its primal); throws like array().
  Tensor concrete(const char* what = "concrete") const;
  /// This tensor made concrete for item<double>() and to_vector<float>(): as concrete(). A value
  /// being differentiated (under grad, jvp, jacfwd...) reads as its value, so C++ control flow on
  /// values works (`if (x.item<double>() > 0)`, a Newton loop); the C++ number carries no
  /// derivative, so the first such read of a process prints a warning naming fx::stop_gradient
  /// (derivative_dropping_reads() in transforms/jvp.hpp counts them; FLUXION_WARN_READS=0 hides it).
  /// Reads without a derivative to lose never warn: comparisons (`(x > 0).item<bool>()`),
  /// integers, constants and fx::stop_gradient(x), and reads into integer or bool types.
  Tensor concrete_for_read(const char* what) const;

  /// Raw element pointers of a concrete array (kernels and interop). T must match dtype().
  template <class T> const T* data() const;
  template <class T> T* mutable_data() const;  // only for freshly allocated outputs

  /// The single element, converted to T. ShapeError unless size() == 1.
  template <class T> T item() const;
  /// All elements in row-major order, converted to T.
  template <class T> std::vector<T> to_vector() const;

  /// A Tensor has no truth value and no implicit number, so `if (x > 0)`, `!x`, `x && y`,
  /// `static_cast<double>(x)` stop at compile time with one line saying what to write instead.
  /// A template so that the static_assert fires only where such a conversion is written.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0> explicit operator T() const {
    static_assert(!std::is_same_v<T, bool>,
                  "fluxion::Tensor has no truth value: for a concrete value write `if ((x > 0).item<bool>())` "
                  "(fx::all / fx::any for many elements); under vmap or jit use fx::where(cond, a, b), fx::cond or "
                  "fx::while_loop");
    static_assert(std::is_same_v<T, bool>,
                  "fluxion::Tensor does not convert to a C++ number: write x.item<double>() for one element or "
                  "x.to_vector<double>() for all, or keep computing with Tensors");
    return T();
  }

 private:
  // The checks of every access are inline; their failures are not.
  const TensorImpl* checked() const {
    if (!impl_) fail_empty();
    return impl_.get();
  }
  [[noreturn]] static void fail_empty();
  [[noreturn]] void fail_not_concrete(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

/// A fresh, uninitialised concrete array (kernels fill it).
Tensor empty(const AbstractValue& aval, Device device = Device::cpu());
/// A concrete array sharing `base`'s buffer with a new aval of the same byte size (reshape views).
Tensor make_view(const Tensor& base, const AbstractValue& aval);
/// Frees the memory kept cached for reuse by freed tensor buffers, on the CPU and on every CUDA
/// device in use (after its pending work); returns the bytes freed.
int64_t release_cached_memory();

// ---- creation (concrete arrays; under tracing they become constants) ----
/// Copies `values` into a new tensor of `shape` with the element type of T.
template <class T> Tensor from_vector(const std::vector<T>& values, const Shape& shape);
template <class T> Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{static_cast<int64_t>(values.size())});
}
/// 1-d tensor from a braced list: fx::tensor({1.0, 2.0}) is f64[2].
template <class T> Tensor tensor(std::initializer_list<T> values) { return from_vector(std::vector<T>(values)); }
/// 2-d tensor from nested braced lists; rows must have equal length (ShapeError otherwise).
template <class T> Tensor tensor(std::initializer_list<std::initializer_list<T>> rows);
/// Rank-0 tensor.
template <class T> Tensor scalar(T value) { return from_vector(std::vector<T>{value}, Shape{}); }

// Creation functions name themselves in their errors. A value that does not fit the dtype is a
// DTypeError naming the function and the value (never a silent wrap or saturation): an integer out
// of the integer dtype's range, NaN for an integer dtype, a finite value that overflows f32.
namespace detail {
Tensor full_int(const char* op, const Shape& shape, int64_t value, DType dtype);
Tensor full_uint(const char* op, const Shape& shape, uint64_t value, DType dtype);
Tensor full_float(const char* op, const Shape& shape, double value, DType dtype);
/// full's entry for any arithmetic value: integers keep their exact value (a double rounds above 2^53).
template <class T> Tensor full_any(const char* op, const Shape& shape, T value, DType dtype) {
  static_assert(std::is_arithmetic_v<T>, "fx::full: the value must be a C++ number");
  if constexpr (std::is_floating_point_v<T>) return full_float(op, shape, static_cast<double>(value), dtype);
  else if constexpr (std::is_unsigned_v<T>) return full_uint(op, shape, static_cast<uint64_t>(value), dtype);
  else return full_int(op, shape, static_cast<int64_t>(value), dtype);
}
}  // namespace detail

Tensor zeros(const Shape& shape, DType dtype = f64);
Tensor ones(const Shape& shape, DType dtype = f64);
/// `shape` filled with `value` converted to dtype (floats truncate towards zero for integer dtypes).
template <class T> Tensor full(const Shape& shape, T value, DType dtype = f64) {
  return detail::full_any("full", shape, value, dtype);
}
/// [0, n) as i32, like jnp.arange. Values that do not fit the dtype are an error: pass fx::i64.
Tensor arange(int64_t n, DType dtype = i32);
/// [start, stop) with `step`; dtype i32 by default.
Tensor arange(int64_t start, int64_t stop, int64_t step = 1, DType dtype = i32);
/// `num` evenly spaced values from start to stop inclusive (integer dtypes take their floor).
Tensor linspace(double start, double stop, int64_t num, DType dtype = f64);
Tensor eye(int64_t n, DType dtype = f64);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
template <class T> Tensor full_like(const Tensor& t, T value) {
  return detail::full_any("full_like", t.shape(), value, t.dtype());
}

/// Numpy-like printing; tracers print as "Traced<f32[3]>with<jvp>".
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- template definitions ----
namespace detail {
/// Converts between element types with the conversion rules of convert_element_type.
template <class To, class From> To convert_scalar(From v) {
  if constexpr (is_half_storage_v<From>) {  // exact in float, then float's rules
    return convert_scalar<To>(v.to_float());
  } else if constexpr (is_half_storage_v<To>) {  // one rounding, from the value itself (bool/int/float/double)
    return To(v);
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // Saturating, NaN -> 0: a float to int cast out of range is undefined behaviour in C++.
    if (v != v) return To(0);
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
[[noreturn]] void fail_dtype_access(const Tensor& t, DType requested, const char* what);
/// A copy on the CPU of the concrete device tensor `t` (reads of device values go through it).
Tensor copy_to_host(const Tensor& t);
inline void check_dtype_access(const Tensor& t, DType requested, const char* what) {
  if (t.dtype() != requested) fail_dtype_access(t, requested, what);
}
}  // namespace detail

template <class T> const T* Tensor::data() const {
  detail::check_dtype_access(*this, dtype_of_v<T>, "data");
  return static_cast<const T*>(array("data").data());
}
template <class T> T* Tensor::mutable_data() const {
  detail::check_dtype_access(*this, dtype_of_v<T>, "mutable_data");
  return static_cast<T*>(array("mutable_data").data());
}

// A read into an integer or bool is piecewise constant in the value, so dropping the derivative is
// right there (JAX's int(x) works under grad too); a read into a floating type under grad warns once.
template <class T> T Tensor::item() const {
  Tensor c = std::is_integral_v<T> ? concrete("item") : concrete_for_read("item");
  if (!c.device().is_cpu()) c = detail::copy_to_host(c);
  if (c.size() != 1)
    detail::fail<ShapeError>("item", "needs a tensor with exactly one element, got ", c.aval(),
                             ". Index or reduce it first.");
  return dispatch_storage_dtype(c.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    return detail::convert_scalar<T>(static_cast<const S*>(c.array().data())[0]);
  });
}

template <class T> std::vector<T> Tensor::to_vector() const {
  Tensor c = std::is_integral_v<T> ? concrete("to_vector") : concrete_for_read("to_vector");
  if (!c.device().is_cpu()) c = detail::copy_to_host(c);
  std::vector<T> out(static_cast<size_t>(c.size()));
  dispatch_storage_dtype(c.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = static_cast<const S*>(c.array().data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = detail::convert_scalar<T>(src[i]);
  });
  return out;
}

template <class T> Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  static_assert(std::is_same_v<T, bool> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_storage_v<T>,
                "fluxion tensors hold bool, int32_t, int64_t, float, double, float16_t or bfloat16_t");
  int64_t n = checked_num_elements("from_vector", shape.dims());
  if (n != static_cast<int64_t>(values.size()))
    detail::fail<ShapeError>("from_vector", "got ", values.size(), " values for shape ", shape, " which holds ", n,
                             ". Pass exactly as many values as the shape holds.");
  Tensor t = empty(AbstractValue{shape, dtype_of_v<T>});
  T* dst = t.mutable_data<T>();
  for (int64_t i = 0; i < n; ++i) dst[i] = values[static_cast<size_t>(i)];
  return t;
}

template <class T> Tensor tensor(std::initializer_list<std::initializer_list<T>> rows) {
  std::vector<T> flat;
  int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (static_cast<int64_t>(r.size()) != cols)
      detail::fail<ShapeError>("tensor", "ragged rows: first row has ", cols, " values, another has ", r.size(),
                               ". Give every row the same length.");
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return from_vector(flat, Shape{static_cast<int64_t>(rows.size()), cols});
}

}  // namespace fluxion
