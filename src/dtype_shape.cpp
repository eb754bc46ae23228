// DType names and sets, Shape arithmetic and printing.
#include <algorithm>
#include <sstream>

#include "fluxion/dtype.hpp"
#include "fluxion/shape.hpp"

namespace fluxion {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::boolean: return "bool";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

int64_t dtype_size(DType d) {
  switch (d) {
    case DType::boolean: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  return 0;
}

namespace detail {
void fail_half_kernel_dispatch(DType d) {
  fail<DTypeError>("kernel", "internal: a kernel was instantiated for ", dtype_name(d),
                   "; half-precision equations run in f32 (eval_primitive widens them, and so does jit's widen_half "
                   "pass). Report this with the function that reached it.");
}
void fail_unknown_dtype(DType d) { fail<DTypeError>("dtype", "unknown dtype code ", static_cast<int>(d), "."); }
}  // namespace detail

std::string DTypeSet::describe() const {
  std::string out;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (!contains(static_cast<DType>(i))) continue;
    if (!out.empty()) out += ", ";
    out += dtype_name(static_cast<DType>(i));
  }
  return out;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims_.size());
  int64_t acc = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims_[i];
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (int64_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  return os << ']';
}

std::ostream& operator<<(std::ostream& os, const AbstractValue& a) { return os << a.dtype << a.shape; }

int64_t checked_num_elements(const char* where, const std::vector<int64_t>& dims) {
  // 2^48 elements is far beyond any machine's memory; larger products are certainly a bug.
  constexpr int64_t kMaxElements = int64_t(1) << 48;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      detail::fail<ShapeError>(where, "negative dimension ", d, " in shape ", Shape(dims),
                               ". Dimensions must be >= 0.");
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)
      detail::fail<ShapeError>(where, "shape ", Shape(dims), " has more than 2^48 elements. ",
                               "Check the dimensions for a mistake.");
  }
  return n;
}

int64_t normalize_axis(const char* where, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank || (rank == 0))
    detail::fail<AxisError>(where, "axis ", axis, " is out of range for rank ", rank, ". Use an axis in [", -rank, ", ",
                            rank, ").");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const char* where, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(where, a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end())
      detail::fail<AxisError>(where, "axis ", a, " is repeated in axes ", Shape(axes), " for rank ", rank,
                              ". Name each axis once.");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fluxion
