// The numpy-style op layer, elementwise part: dtype promotion, broadcasting, arithmetic,
// comparisons, logic and math. Promotion and broadcasting happen here once and are emitted as
// explicit convert_element_type / broadcast_in_dim before the exact-shape lax primitive.
// Reductions: ops_reduce.cpp; matmul/dot/outer: ops_linalg.cpp; shapes and indexing: ops_shape.cpp.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>

#include "fluxion/custom_rules.hpp"
#include "fluxion/ops.hpp"

namespace fluxion {
namespace ops_detail {

using LaxBinary = Tensor (*)(const Tensor&, const Tensor&);

/// Numpy broadcasting of two shapes; false when they do not broadcast.
bool try_broadcast(const Shape& a, const Shape& b, Shape& out) {
  int64_t n = std::max(a.size(), b.size());
  std::vector<int64_t> dims(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    dims[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  out = Shape(std::move(dims));
  return true;
}

/// "f32[3,4] and f32[5]" or "bool[2], f32[3] and f32[4]".
std::string list_avals(const std::vector<AbstractValue>& avals) {
  std::ostringstream os;
  for (size_t i = 0; i < avals.size(); ++i) os << (i == 0 ? "" : i + 1 == avals.size() ? " and " : ", ") << avals[i];
  return os.str();
}

/// The broadcast shape of all `avals`, or ShapeError naming `op` and every operand.
Shape broadcast_all(const char* op, const std::vector<AbstractValue>& avals) {
  Shape out;
  for (const AbstractValue& a : avals)
    if (!try_broadcast(out, a.shape, out))
      detail::fail<ShapeError>(op, "shapes ", list_avals(avals), " do not broadcast. Trailing ",
                               "dimensions must be equal or 1; reshape or expand_dims an operand.");
  return out;
}

/// `x` broadcast to `shape`, except that a rank-0 operand stays rank 0 (binary primitives take it).
Tensor broadcast_operand(const Tensor& x, const Shape& shape) { return x.ndim() == 0 ? x : broadcast_to(x, shape); }

/// Promoted, broadcast operands handed to the exact-shape primitive `f`, computed in `dtype`.
Tensor apply_binary(const char* op, LaxBinary f, const Tensor& a, const Tensor& b, DType dtype) {
  Shape out = broadcast_all(op, {a.aval(), b.aval()});
  // Sequenced statements: argument evaluation order is unspecified, Jaxpr order must not be.
  Tensor x = broadcast_operand(astype(a, dtype), out);
  Tensor y = broadcast_operand(astype(b, dtype), out);
  return f(x, y);
}

/// The rank-0 tensor of `dtype` holding a weak scalar. DTypeError when an integer does not fit an
/// integer dtype (never a silent wrap).
Tensor weak_tensor(const char* op, const WeakScalar& s, DType dtype) {
  if (s.integral && s.above_i64 && is_integer(dtype))
    detail::fail<DTypeError>(op, "the integer ", s.above_i64, " does not fit in ", dtype, ", the dtype of the ",
                             "other operand (nor in i64). Convert the tensor with fx::astype(x, fx::f64) first.");
  if (s.integral && dtype == i32 &&
      (s.i < std::numeric_limits<int32_t>::min() || s.i > std::numeric_limits<int32_t>::max()))
    detail::fail<DTypeError>(op, "the integer ", s.i, " does not fit in i32, the dtype of the ",
                             "other operand. Convert the tensor with fx::astype(x, fx::i64) first.");
  return dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (s.above_i64) return scalar<T>(detail::convert_scalar<T>(s.above_i64));  // a float dtype here
    return scalar<T>(s.integral ? detail::convert_scalar<T>(s.i) : detail::convert_scalar<T>(s.f));
  });
}

/// The dtype of an operation with two weak scalars: f64 if either is a float, else i32.
DType weak_pair_dtype(const WeakScalar& a, const WeakScalar& b) { return a.integral && b.integral ? i32 : f64; }

/// How an elementwise binary op maps a promoted dtype to its computation.
enum class Kind {
  arithmetic,   // computes in the promoted dtype; bool uses `on_bool` (or is rejected)
  true_divide,  // integers and bool compute in f64
  floating,     // float-only function: integers and bool compute in f64
  compare,      // bool result; bool operands compare as i32 unless the primitive takes bool
};

struct BinaryOp {
  const char* name;
  LaxBinary f;
  Kind kind;
  LaxBinary on_bool;  // arithmetic on bool (logical_or for add, ...); nullptr: see bool_dtype
  DType bool_dtype;   // when on_bool is nullptr: bool operands compute in this dtype (bool = reject)
};

constexpr BinaryOp kAdd{"add", &lax::add, Kind::arithmetic, &lax::logical_or, boolean};
constexpr BinaryOp kSubtract{"subtract", &lax::sub, Kind::arithmetic, nullptr, boolean};
constexpr BinaryOp kMultiply{"multiply", &lax::mul, Kind::arithmetic, &lax::logical_and, boolean};
constexpr BinaryOp kDivide{"divide", &lax::div, Kind::true_divide, nullptr, f64};
constexpr BinaryOp kMaximum{"maximum", &lax::max, Kind::arithmetic, &lax::logical_or, boolean};
constexpr BinaryOp kMinimum{"minimum", &lax::min, Kind::arithmetic, &lax::logical_and, boolean};
Tensor floored_remainder(const Tensor& a, const Tensor& b);
Tensor truncated_remainder(const Tensor& a, const Tensor& b);
constexpr BinaryOp kRemainder{"remainder", &floored_remainder, Kind::arithmetic, nullptr, i32};
constexpr BinaryOp kFmod{"fmod", &truncated_remainder, Kind::arithmetic, nullptr, i32};
constexpr BinaryOp kAtan2{"atan2", &lax::atan2, Kind::floating, nullptr, f64};
constexpr BinaryOp kLess{"less", &lax::lt, Kind::compare, nullptr, i32};
constexpr BinaryOp kLessEqual{"less_equal", &lax::le, Kind::compare, nullptr, i32};
constexpr BinaryOp kGreater{"greater", &lax::gt, Kind::compare, nullptr, i32};
constexpr BinaryOp kGreaterEqual{"greater_equal", &lax::ge, Kind::compare, nullptr, i32};
constexpr BinaryOp kEqual{"equal", &lax::eq, Kind::compare, &lax::eq, boolean};
constexpr BinaryOp kNotEqual{"not_equal", &lax::ne, Kind::compare, &lax::ne, boolean};

/// The dtype `op` computes in for promoted dtype `d`, and the primitive it uses.
DType compute_dtype(const BinaryOp& op, DType d, LaxBinary& f) {
  f = op.f;
  if ((op.kind == Kind::true_divide || op.kind == Kind::floating) && !is_floating(d)) return f64;
  if (d != boolean) return d;
  if (op.on_bool) {
    f = op.on_bool;
    return boolean;
  }
  if (op.bool_dtype == boolean)
    detail::fail<DTypeError>(op.name, "is not defined for bool operands. Use fx::logical_not / ",
                             "logical_and / logical_or, or convert with fx::astype(x, fx::i32).");
  return op.bool_dtype;
}

Tensor binary(const BinaryOp& op, const Tensor& a, const Tensor& b) {
  LaxBinary f;
  DType d = compute_dtype(op, promote_types(a.dtype(), b.dtype()), f);
  return apply_binary(op.name, f, a, b, d);
}
Tensor binary(const BinaryOp& op, const Tensor& a, const WeakScalar& b) {
  LaxBinary f;
  DType d = compute_dtype(op, result_type(a, b), f);
  return f(astype(a, d), weak_tensor(op.name, b, d));
}
Tensor binary(const BinaryOp& op, const WeakScalar& a, const Tensor& b) {
  LaxBinary f;
  DType d = compute_dtype(op, result_type(b, a), f);
  return f(weak_tensor(op.name, a, d), astype(b, d));
}

/// C fmod of promoted operands (one may be rank 0): the sign of the dividend. An integer divisor
/// of 0 gives 0 (numpy's result; the rem kernel returns the dividend).
Tensor truncated_remainder(const Tensor& a, const Tensor& b) {
  Tensor r = lax::rem(a, b);
  return is_floating(r.dtype()) ? r : where(b == 0, 0, r);
}

/// numpy's floored remainder: the sign of the divisor, and copysign(0, b) for exact multiples.
Tensor floored_value(const Tensor& a, const Tensor& b) {
  Tensor r = truncated_remainder(a, b);
  Tensor adjust = (r != 0) && ((r < 0) != (b < 0));  // a nonzero result of the dividend's sign
  Tensor out = where(adjust, r + b, r);
  if (!is_floating(r.dtype())) return out;
  // Constants, not neg(r): the sign of a zero must not depend on a kernel's arithmetic.
  Tensor signed_zero = where(b < 0, full(Shape{}, -0.0, r.dtype()), full(Shape{}, 0.0, r.dtype()));
  return where(r == 0, signed_zero, out);
}

// Floats: a - b floor(a / b) has the derivatives 1 and -floor(a / b) wherever it is smooth. The
// rule says so directly: differentiating the selects would give 0 at exact multiples.
Tensor floored_remainder(const Tensor& a, const Tensor& b) {
  if (!is_floating(a.dtype())) return floored_value(a, b);
  using Pair = std::tuple<Tensor, Tensor>;
  static const auto f = custom_jvp(&floored_value, [](const Pair& p, const Pair& t) {
    const auto& [x, y] = p;
    Tensor out = floored_value(x, y);
    Tensor quotient = lax::round((x - out) / y);  // an integer up to rounding
    return std::pair<Tensor, Tensor>{out, std::get<0>(t) - std::get<1>(t) * quotient};
  });
  return f(a, b);
}

/// Integer and bool inputs of float functions are converted to f64.
Tensor to_inexact(const Tensor& x) { return is_floating(x.dtype()) ? x : astype(x, f64); }
/// Non-bool inputs of logical functions are converted to bool (nonzero is true).
Tensor to_bool(const Tensor& x) { return astype(x, boolean); }

/// pow computes in a float dtype: integer (and bool) powers in f64, rounded back to integers.
DType pow_compute_dtype(DType d) { return is_floating(d) ? d : f64; }

/// x ** y for the promoted dtype `d`, the operands broadcast to `out` (rank 0 stays rank 0).
Tensor pow_in(const Tensor& x, const Tensor& y, DType d, const Shape& out) {
  DType cd = pow_compute_dtype(d);
  Tensor xb = broadcast_operand(astype(x, cd), out);
  Tensor yb = broadcast_operand(astype(y, cd), out);
  Tensor r = lax::pow(xb, yb);
  return is_floating(d) ? r : astype(lax::round(r), d == boolean ? i32 : d);
}

Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b, DType dtype) {
  if (cond.dtype() != boolean)
    detail::fail<DTypeError>("where", "the condition must be bool, got ", cond.aval(),
                             ". Compare it first, e.g. fx::where(c != 0, a, b).");
  Shape out = broadcast_all("where", {cond.aval(), a.aval(), b.aval()});
  Tensor pred = broadcast_operand(cond, out);
  Tensor on_true = broadcast_to(astype(a, dtype), out);
  Tensor on_false = broadcast_to(astype(b, dtype), out);
  return lax::select(pred, on_true, on_false);
}

}  // namespace ops_detail

// ---- promotion and broadcasting ----
DType result_type(const Tensor& a, const Tensor& b) { return promote_types(a.dtype(), b.dtype()); }

DType result_type(const Tensor& a, const WeakScalar& s) {
  if (s.integral) return a.dtype() == boolean ? i32 : a.dtype();
  return is_floating(a.dtype()) ? a.dtype() : f64;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  Shape out;
  if (!ops_detail::try_broadcast(a, b, out))
    detail::fail<ShapeError>(op, "shapes ", a, " and ", b, " do not broadcast. Trailing dimensions ",
                             "must be equal or 1; reshape or expand_dims an operand.");
  return out;
}

Tensor astype(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : lax::convert_element_type(x, dtype); }

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  checked_num_elements("broadcast_to", shape.dims());
  if (x.shape() == shape) return x;
  int64_t offset = shape.size() - x.ndim();
  bool ok = offset >= 0;
  std::vector<int64_t> dims;
  for (int64_t i = 0; ok && i < x.ndim(); ++i) {
    ok = x.shape()[i] == 1 || x.shape()[i] == shape[offset + i];
    dims.push_back(offset + i);
  }
  if (!ok)
    detail::fail<ShapeError>("broadcast_to", "cannot broadcast ", x.aval(), " to shape ", shape,
                             ". Aligned from the right, each dimension must equal the target's "
                             "or be 1, and the target needs at least as many dimensions.");
  return lax::broadcast_in_dim(x, shape, dims);
}

// ---- arithmetic ----
Tensor add(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kAdd, a, b); }
Tensor subtract(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kSubtract, a, b); }
Tensor multiply(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kMultiply, a, b); }
Tensor divide(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kDivide, a, b); }
Tensor negative(const Tensor& x) {
  if (x.dtype() == boolean)
    detail::fail<DTypeError>("negative", "cannot negate ", x.aval(),
                             ". Use fx::logical_not for bool, or fx::astype(x, fx::i32) first.");
  return lax::neg(x);
}
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return divide(a, b); }
Tensor operator-(const Tensor& x) { return negative(x); }
Tensor operator+(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kAdd, a, b); }
Tensor operator-(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kSubtract, a, b); }
Tensor operator*(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kMultiply, a, b); }
Tensor operator/(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kDivide, a, b); }
Tensor operator+(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kAdd, a, b); }
Tensor operator-(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kSubtract, a, b); }
Tensor operator*(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kMultiply, a, b); }
Tensor operator/(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kDivide, a, b); }

// ---- comparisons and logic ----
Tensor operator<(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kLess, a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kLessEqual, a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kGreater, a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kGreaterEqual, a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kEqual, a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::kNotEqual, a, b); }
Tensor operator<(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kLess, a, b); }
Tensor operator<=(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kLessEqual, a, b); }
Tensor operator>(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kGreater, a, b); }
Tensor operator>=(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kGreaterEqual, a, b); }
Tensor operator==(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kEqual, a, b); }
Tensor operator!=(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::kNotEqual, a, b); }
Tensor operator<(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kLess, a, b); }
Tensor operator<=(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kLessEqual, a, b); }
Tensor operator>(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kGreater, a, b); }
Tensor operator>=(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::kGreaterEqual, a, b); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return ops_detail::apply_binary("logical_and", &lax::logical_and, ops_detail::to_bool(a), ops_detail::to_bool(b),
                                  boolean);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return ops_detail::apply_binary("logical_or", &lax::logical_or, ops_detail::to_bool(a), ops_detail::to_bool(b),
                                  boolean);
}
Tensor logical_not(const Tensor& x) { return lax::logical_not(ops_detail::to_bool(x)); }
Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
Tensor operator!(const Tensor& x) { return logical_not(x); }

// ---- elementwise math ----
Tensor sin(const Tensor& x) { return lax::sin(ops_detail::to_inexact(x)); }
Tensor cos(const Tensor& x) { return lax::cos(ops_detail::to_inexact(x)); }
Tensor tan(const Tensor& x) { return lax::tan(ops_detail::to_inexact(x)); }
Tensor exp(const Tensor& x) { return lax::exp(ops_detail::to_inexact(x)); }
Tensor log(const Tensor& x) { return lax::log(ops_detail::to_inexact(x)); }
Tensor log1p(const Tensor& x) { return lax::log1p(ops_detail::to_inexact(x)); }
Tensor expm1(const Tensor& x) { return lax::expm1(ops_detail::to_inexact(x)); }
Tensor sqrt(const Tensor& x) { return lax::sqrt(ops_detail::to_inexact(x)); }
Tensor rsqrt(const Tensor& x) { return lax::rsqrt(ops_detail::to_inexact(x)); }
Tensor tanh(const Tensor& x) { return lax::tanh(ops_detail::to_inexact(x)); }
Tensor sigmoid(const Tensor& x) { return lax::logistic(ops_detail::to_inexact(x)); }

// max(x, 0) + log1p(exp(-|x|)) never overflows, but differentiating it at 0 meets the kinks of
// max and abs; the rule gives the exact derivative, sigmoid(x).
Tensor softplus(const Tensor& x) {
  static const auto stable = [](const Tensor& v) { return maximum(v, 0.0) + log1p(exp(-abs(v))); };
  static const auto f = custom_jvp(stable, [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
    const Tensor& v = std::get<0>(p);
    return std::pair<Tensor, Tensor>{stable(v), sigmoid(v) * std::get<0>(t)};
  });
  return f(ops_detail::to_inexact(x));
}
// abs and sign keep integer dtypes; on bool both are the identity.
Tensor abs(const Tensor& x) { return x.dtype() == boolean ? x : lax::abs(x); }
Tensor sign(const Tensor& x) { return x.dtype() == boolean ? x : lax::sign(x); }
// Integers (and bool) are already integral: floor, ceil and round return them unchanged.
Tensor floor(const Tensor& x) { return is_floating(x.dtype()) ? lax::floor(x) : x; }
Tensor ceil(const Tensor& x) { return is_floating(x.dtype()) ? lax::ceil(x) : x; }
Tensor round(const Tensor& x) {
  return is_floating(x.dtype()) ? lax::round(x, lax::RoundingMethod::to_nearest_even) : x;
}
Tensor square(const Tensor& x) { return multiply(x, x); }

Tensor pow(const Tensor& x, const Tensor& y) {
  Shape out = ops_detail::broadcast_all("pow", {x.aval(), y.aval()});
  return ops_detail::pow_in(x, y, promote_types(x.dtype(), y.dtype()), out);
}
Tensor pow(const Tensor& x, WeakScalar y) {
  DType d = result_type(x, y);
  return ops_detail::pow_in(x, ops_detail::weak_tensor("pow", y, ops_detail::pow_compute_dtype(d)), d, x.shape());
}
Tensor pow(WeakScalar x, const Tensor& y) {
  DType d = result_type(y, x);
  return ops_detail::pow_in(ops_detail::weak_tensor("pow", x, ops_detail::pow_compute_dtype(d)), y, d, y.shape());
}

// Tensor-tensor, tensor-scalar and scalar-tensor forms of the binary functions.
#define FLUXION_BINARY_FORMS(name, op)                                                               \
  Tensor name(const Tensor& a, const Tensor& b) { return ops_detail::binary(ops_detail::op, a, b); } \
  Tensor name(const Tensor& a, WeakScalar b) { return ops_detail::binary(ops_detail::op, a, b); }    \
  Tensor name(WeakScalar a, const Tensor& b) { return ops_detail::binary(ops_detail::op, a, b); }
FLUXION_BINARY_FORMS(maximum, kMaximum)
FLUXION_BINARY_FORMS(minimum, kMinimum)
FLUXION_BINARY_FORMS(atan2, kAtan2)
FLUXION_BINARY_FORMS(remainder, kRemainder)
FLUXION_BINARY_FORMS(fmod, kFmod)
#undef FLUXION_BINARY_FORMS

Tensor clip(const Tensor& x, WeakScalar lo, WeakScalar hi) { return minimum(maximum(x, lo), hi); }
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  ops_detail::broadcast_all("clip", {x.aval(), lo.aval(), hi.aval()});  // the error names clip
  return minimum(maximum(x, lo), hi);
}

// NaN is the only value unequal to itself; integers and bool are always finite.
Tensor isnan(const Tensor& x) { return x != x; }
Tensor isinf(const Tensor& x) {
  return is_floating(x.dtype()) ? abs(x) == std::numeric_limits<double>::infinity() : x != x;
}
Tensor isfinite(const Tensor& x) {
  return is_floating(x.dtype()) ? abs(x) < std::numeric_limits<double>::infinity() : x == x;
}
// x <= 0 is false for NaN, which passes through; the derivative at 0 is 0, like jax.nn.relu.
Tensor relu(const Tensor& x) { return x.dtype() == boolean ? x : where(x <= 0, 0, x); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return ops_detail::select(cond, a, b, promote_types(a.dtype(), b.dtype()));
}
Tensor where(const Tensor& cond, const Tensor& a, WeakScalar b) {
  DType d = result_type(a, b);
  return ops_detail::select(cond, a, ops_detail::weak_tensor("where", b, d), d);
}
Tensor where(const Tensor& cond, WeakScalar a, const Tensor& b) {
  DType d = result_type(b, a);
  return ops_detail::select(cond, ops_detail::weak_tensor("where", a, d), b, d);
}
Tensor where(const Tensor& cond, WeakScalar a, WeakScalar b) {
  DType d = ops_detail::weak_pair_dtype(a, b);
  return ops_detail::select(cond, ops_detail::weak_tensor("where", a, d), ops_detail::weak_tensor("where", b, d), d);
}

Tensor stop_gradient(const Tensor& x) { return lax::stop_gradient(x); }

}  // namespace fluxion
