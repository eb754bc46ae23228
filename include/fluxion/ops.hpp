/// The numpy-style op layer: broadcasting and dtype promotion happen here, once, emitting
/// explicit convert_element_type / broadcast_in_dim primitives before the exact-shape primitive.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "fluxion/lax.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion {

/// A C++ arithmetic scalar used as an operand: weakly typed (x_f32 * 2.0 stays f32).
struct WeakScalar {
  double f = 0;
  int64_t i = 0;
  bool integral = false;
  uint64_t above_i64 = 0;  // an unsigned integer too large for int64 (i is then meaningless)
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  WeakScalar(T v)  // NOLINT: implicit so that x + 2 and x * 0.5 read naturally
      : f(static_cast<double>(v)),
        i(std::is_integral_v<T> ? static_cast<int64_t>(v) : 0),
        integral(std::is_integral_v<T>) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
      if (v > static_cast<T>(std::numeric_limits<int64_t>::max())) above_i64 = static_cast<uint64_t>(v);
  }
};

/// The dtype of `a op b` for tensors (lattice bool < i32 < i64 < f32 < f64).
DType result_type(const Tensor& a, const Tensor& b);
/// The dtype of `a op s` for a weak scalar: a's dtype unless the scalar is a float and a is not
/// (then f64), or the scalar an integer and a is bool (then i32).
DType result_type(const Tensor& a, const WeakScalar& s);
/// Numpy broadcasting of two shapes; ShapeError naming `op` when they do not broadcast.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
/// `x` converted to dtype (no-op when equal).
Tensor astype(const Tensor& x, DType dtype);
/// `x` broadcast to `shape` with numpy rules.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// ---- arithmetic ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
/// True division: integer operands give f64 like numpy's `/` on the default float.
Tensor divide(const Tensor& a, const Tensor& b);
Tensor negative(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, WeakScalar b);
Tensor operator-(const Tensor& a, WeakScalar b);
Tensor operator*(const Tensor& a, WeakScalar b);
Tensor operator/(const Tensor& a, WeakScalar b);
Tensor operator+(WeakScalar a, const Tensor& b);
Tensor operator-(WeakScalar a, const Tensor& b);
Tensor operator*(WeakScalar a, const Tensor& b);
Tensor operator/(WeakScalar a, const Tensor& b);

// ---- comparisons (bool results) and logic ----
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, WeakScalar b);
Tensor operator<=(const Tensor& a, WeakScalar b);
Tensor operator>(const Tensor& a, WeakScalar b);
Tensor operator>=(const Tensor& a, WeakScalar b);
Tensor operator==(const Tensor& a, WeakScalar b);
Tensor operator!=(const Tensor& a, WeakScalar b);
Tensor operator<(WeakScalar a, const Tensor& b);
Tensor operator<=(WeakScalar a, const Tensor& b);
Tensor operator>(WeakScalar a, const Tensor& b);
Tensor operator>=(WeakScalar a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
Tensor operator&&(const Tensor& a, const Tensor& b);
Tensor operator||(const Tensor& a, const Tensor& b);
Tensor operator!(const Tensor& x);

// ---- elementwise math (integer inputs to float functions are converted to f64) ----
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
/// log(1 + exp(x)) without overflow; its derivative is sigmoid(x) everywhere, x = 0 included.
Tensor softplus(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
/// Rounds halves to the even neighbour, like numpy and jnp.round (lax::round rounds them away from zero).
Tensor round(const Tensor& x);
Tensor square(const Tensor& x);
Tensor pow(const Tensor& x, const Tensor& y);
Tensor pow(const Tensor& x, WeakScalar y);
Tensor pow(WeakScalar x, const Tensor& y);
// Binary functions take tensor-tensor, tensor-scalar and scalar-tensor operands; a C++ scalar is
// weakly typed like in the arithmetic operators (fx::maximum(x_f32, 0) stays f32).
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, WeakScalar b);
Tensor maximum(WeakScalar a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, WeakScalar b);
Tensor minimum(WeakScalar a, const Tensor& b);
Tensor atan2(const Tensor& y, const Tensor& x);
Tensor atan2(const Tensor& y, WeakScalar x);
Tensor atan2(WeakScalar y, const Tensor& x);
/// numpy's remainder (Python's %): floored, the result takes the divisor's sign (exact multiples
/// give a zero of the divisor's sign); remainder(x, 0) is NaN for floats and 0 for integers.
/// Derivatives 1 and -floor(a / b).
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, WeakScalar b);
Tensor remainder(WeakScalar a, const Tensor& b);
/// C's fmod (numpy.fmod): truncated, the result takes the dividend's sign; fmod(x, 0) is NaN for
/// floats and 0 for integers.
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, WeakScalar b);
Tensor fmod(WeakScalar a, const Tensor& b);
Tensor clip(const Tensor& x, WeakScalar lo, WeakScalar hi);
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi);
/// Elementwise tests, bool results (integers and bool are never NaN or infinite).
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
/// max(x, 0) with derivative 0 at 0 (like jax.nn.relu); NaN passes through.
Tensor relu(const Tensor& x);
/// cond ? a : b elementwise, with broadcasting; cond must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, WeakScalar b);
Tensor where(const Tensor& cond, WeakScalar a, const Tensor& b);
Tensor where(const Tensor& cond, WeakScalar a, WeakScalar b);
/// numpy's one-argument where (= nonzero): the indices of the nonzero elements, one i32 tensor per
/// dimension of cond, in row-major order. Their number depends on the values, so cond must be
/// concrete: eager, or under grad/jvp. Under vmap and jit it throws ConcretizationError: use the
/// three-argument where, or nonzero(cond, size) with a static size.
std::vector<Tensor> where(const Tensor& cond);
/// Indices of the nonzero elements of x (rank >= 1), one i32 tensor per dimension; eager only,
/// like where(cond).
std::vector<Tensor> nonzero(const Tensor& x);
/// nonzero with a static result length (like jnp.nonzero(x, size=, fill_value=)): the first `size`
/// indices, padded with fill_value. Works under every transform, vmap and jit included.
std::vector<Tensor> nonzero(const Tensor& x, int64_t size, int64_t fill_value = 0);

// ---- linear algebra ----
/// numpy matmul: 1-d operands are promoted and the added dim removed; batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
/// numpy dot: sum over the last axis of a and the second-to-last of b (the last if b is 1-d).
Tensor dot(const Tensor& a, const Tensor& b);
/// Outer product of the flattened operands.
Tensor outer(const Tensor& a, const Tensor& b);
/// numpy.linalg.solve: x with a x = b for a (..., n, n) and b (..., n, k), or a vector b (n,) /
/// (..., n) when b.ndim() == a.ndim() - 1; batch dims broadcast, ints become f64. Differentiable;
/// an exactly singular matrix throws fluxion::Error.
Tensor solve(const Tensor& a, const Tensor& b);
/// numpy.linalg.inv: the inverse of each (..., n, n) matrix, as solve(a, identity). Prefer solve.
Tensor inv(const Tensor& a);
// ---- reductions: axes may be negative; empty axes means all ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
/// Whether any (all) elements are nonzero (NaN counts as nonzero): bool. Over an empty axis any
/// is false and all is true.
Tensor any(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor all(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
/// Variance sum((x - mean)^2) / (N - ddof) over `axes` (numpy's ddof, default 0: the population
/// variance; 1: the unbiased estimate). N - ddof <= 0 divides by 0 like numpy (inf or NaN).
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, int64_t ddof = 0);
/// Standard deviation: sqrt(var(x, axes, keepdims, ddof)).
Tensor std(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, int64_t ddof = 0);
// An integer in keepdims' place is a ddof given without keepdims: refused at compile time.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes, int keepdims, int64_t ddof = 0) = delete;
Tensor std(const Tensor& x, const std::vector<int64_t>& axes, int keepdims, int64_t ddof = 0) = delete;
/// Index of the largest element along `axis` (i32); without an axis, of the flattened tensor.
Tensor argmax(const Tensor& x);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims = false);
Tensor argmin(const Tensor& x);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims = false);
/// Inclusive cumulative sum along `axis`.
Tensor cumsum(const Tensor& x, int64_t axis = 0);
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
/// Euclidean (Frobenius) norm over `axes` (all by default).
Tensor norm(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);

// ---- shapes ----
/// One dim may be -1 (inferred).
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
/// Permutes axes; empty `axes` reverses them.
Tensor transpose(const Tensor& x, const std::vector<int64_t>& axes = {});
Tensor expand_dims(const Tensor& x, int64_t axis);
Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& axes);
/// Removes the given size-1 axes (all size-1 axes when empty).
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes = {});
Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor ravel(const Tensor& x);

// ---- indexing ----
/// Static strided slice; limits past the end are clamped like numpy; strides default to 1.
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& limits,
             const std::vector<int64_t>& strides = {});
/// numpy take: negative indices count from the end; out-of-range indices are clamped.
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis);
/// take on the flattened tensor.
Tensor take(const Tensor& x, const Tensor& indices);

/// Identity whose derivative is zero.
Tensor stop_gradient(const Tensor& x);

}  // namespace fluxion
