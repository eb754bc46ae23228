// Buffers, tensor handles, creation functions and printing.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <new>
#include <sstream>

#include "fluxion/cuda.hpp"
#include "fluxion/interpreter.hpp"
#include "fluxion/tensor.hpp"
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
      what, "cannot convert a value traced by ", owner_->transform, " (", aval(),
      ") to a concrete value: under ", owner_->transform,
      " values are abstract. Use fx::where, fx::cond or fx::while_loop for value-dependent "
      "control flow.");
}

void Tensor::fail_empty() {
  detail::fail<Error>("tensor", "use of an empty (default-constructed) Tensor. ", "Assign it a value first.");
}

Tensor Tensor::concrete(const char* what) const {
  const TensorImpl* p = checked();
  if (!p->is_tracer()) return *this;
  return static_cast<const TracerImpl*>(p)->concrete_value(what).concrete(what);
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

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(AbstractValue{shape, dtype});
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = detail::convert_scalar<T>(value);
    T* p = static_cast<T*>(t.array().data());
    std::fill(p, p + t.size(), v);
  });
  return t;
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.dtype()); }

Tensor arange(int64_t n, DType dtype) { return arange(0, n, 1, dtype); }

Tensor arange(int64_t start, int64_t stop, int64_t step, DType dtype) {
  if (step == 0) detail::fail<Error>("arange", "step must not be 0. Use a positive or negative step.");
  int64_t n = 0;
  if ((step > 0 && stop > start) || (step < 0 && stop < start))
    n = (stop - start + step + (step > 0 ? -1 : 1)) / step;
  Tensor t = empty(AbstractValue{Shape{n}, dtype});
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.array().data());
    for (int64_t i = 0; i < n; ++i) p[i] = detail::convert_scalar<T>(start + i * step);
  });
  return t;
}

Tensor linspace(double start, double stop, int64_t num, DType dtype) {
  if (num < 0) detail::fail<ShapeError>("linspace", "num must be >= 0, got ", num, ".");
  Tensor t = empty(AbstractValue{Shape{num}, dtype});
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.array().data());
    double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
    for (int64_t i = 0; i < num; ++i)
      p[i] = detail::convert_scalar<T>(i == num - 1 && num > 1 ? stop : start + step * static_cast<double>(i));
  });
  return t;
}

Tensor eye(int64_t n, DType dtype) {
  Tensor t = zeros(Shape{n, n}, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.array().data());
    for (int64_t i = 0; i < n; ++i) p[i * n + i] = T(1);
  });
  return t;
}

// ---- printing ----
namespace tensor_print {

// numpy's style: fixed notation with up to 8 decimals (trailing zeros dropped) unless some
// magnitude is huge or tiny, then scientific for the whole tensor.
template <class T>
std::string format_element(T v, bool scientific = false) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "True" : "False");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (scientific) {
      os << std::scientific << std::setprecision(std::is_same_v<T, float> ? 6 : 8) << v;
      return os.str();
    }
    os << std::fixed << std::setprecision(8) << v;
    std::string s = os.str();
    while (s.back() == '0') s.pop_back();
    if (s == "-0.") return "-0.";
    return s;
  } else {
    os << v;
  }
  return os.str();
}

template <class T>
bool needs_scientific(const T* data, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n && i < 4096; ++i) {
      T a = std::fabs(data[i]);
      if (std::isfinite(a) && (a >= T(1e16) || (a > 0 && a < T(1e-4)))) return true;
    }
  }
  return false;
}

// Column layout shared by all elements: numbers are aligned on the decimal point (numpy style).
struct ElementLayout {
  size_t int_width = 0;   // characters before the '.' (or of the whole text when there is none)
  size_t frac_width = 0;  // characters from the '.' on
};

inline void measure(ElementLayout& l, const std::string& s) {
  size_t dot = s.find('.');
  size_t head = dot == std::string::npos ? s.size() : dot;
  l.int_width = std::max(l.int_width, head);
  l.frac_width = std::max(l.frac_width, s.size() - head);
}

inline std::string pad(const ElementLayout& l, const std::string& s) {
  size_t dot = s.find('.');
  size_t head = dot == std::string::npos ? s.size() : dot;
  return std::string(l.int_width - head, ' ') + s + std::string(l.frac_width - (s.size() - head), ' ');
}

// Prints the sub-array at `offset` of dims [dim, ndim), numpy style, eliding the middle of long
// axes when the tensor is large.
template <class T>
void print_block(std::ostream& os, const T* data, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, size_t dim, int64_t offset, bool summarize,
                 const ElementLayout& layout, bool scientific) {
  if (dim == dims.size()) {
    os << pad(layout, format_element(data[offset], scientific));
    return;
  }
  os << '[';
  int64_t n = dims[dim];
  constexpr int64_t kEdge = 3;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      os << (dim + 1 == dims.size() ? " ..." : "\n" + std::string(dim + 1, ' ') + "...");
      i = n - kEdge;
    }
    if (i > 0) {
      if (dim + 1 == dims.size()) os << ' ';
      else os << std::string(dims.size() - dim - 1, '\n') << std::string(dim + 1, ' ');
    }
    print_block(os, data, dims, strides, dim + 1, offset + i * strides[dim], summarize, layout, scientific);
  }
  os << ']';
}

}  // namespace tensor_print

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  using namespace tensor_print;
  if (!t.defined()) return os << "Tensor(empty)";
  if (t.is_tracer()) {
    const auto& tr = static_cast<const TracerImpl&>(*t.impl());
    return os << "Traced<" << t.aval() << ">with<" << tr.owner()->transform << ">";
  }
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = static_cast<const T*>(t.array().data());
    const auto& dims = t.shape().dims();
    int64_t n = t.size();
    bool summarize = n > 1000;
    bool scientific = needs_scientific(data, n);
    ElementLayout layout;
    for (int64_t i = 0; i < n && i < 4096; ++i) measure(layout, format_element(data[i], scientific));
    if (n > 4096) measure(layout, format_element(data[n - 1], scientific));
    if (dims.empty()) {
      os << format_element(data[0], scientific);
      return;
    }
    if (n == 0) {
      os << "[]";
      return;
    }
    print_block(os, data, dims, t.shape().strides(), 0, 0, summarize, layout, scientific);
  });
  return os;
}

}  // namespace fluxion
