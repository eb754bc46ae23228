/// fluxion::lax — one thin function per primitive, with exact shapes and dtypes (like jax.lax).
/// The numpy-style layer (ops.hpp) promotes and broadcasts, then calls these.
#pragma once
#include <vector>

#include "fluxion/primitive.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::lax {

// Elementwise unary.
Tensor neg(const Tensor& x);
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
Tensor logistic(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // halfway cases away from zero
/// How round breaks ties (JAX's lax.RoundingMethod): away from zero (std::round, lax.round's
/// default) or to the even neighbour (numpy's and jnp.round's; primitive round_nearest_even).
enum class RoundingMethod { away_from_zero, to_nearest_even };
Tensor round(const Tensor& x, RoundingMethod method);
Tensor logical_not(const Tensor& x);  // bool: logical; integers: bitwise
Tensor stop_gradient(const Tensor& x);

// Elementwise binary: equal shapes (or one rank-0 operand) and equal dtypes.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor max(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor rem(const Tensor& a, const Tensor& b);  // sign of the dividend, like C fmod
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);  // bool: logical; integers: bitwise
Tensor logical_or(const Tensor& a, const Tensor& b);
/// pred ? on_true : on_false elementwise; pred is bool with the operands' shape (or rank 0).
Tensor select(const Tensor& pred, const Tensor& on_true, const Tensor& on_false);
Tensor convert_element_type(const Tensor& x, DType dtype);

// Shape and movement.
/// Output `shape`; operand dim i maps to output dim broadcast_dimensions[i] (size equal or 1).
Tensor broadcast_in_dim(const Tensor& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions);
Tensor reshape(const Tensor& x, const Shape& new_sizes);
Tensor transpose(const Tensor& x, const std::vector<int64_t>& permutation);
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& dimensions);
Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& dimensions);

// Reductions (axes sorted, unique, non-negative).
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes);
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes);
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& axes);
Tensor reduce_prod(const Tensor& x, const std::vector<int64_t>& axes);
Tensor argmax(const Tensor& x, int64_t axis, DType index_dtype = i32);
Tensor argmin(const Tensor& x, int64_t axis, DType index_dtype = i32);
/// Inclusive prefix sum along `axis` (from the end when `reverse`).
Tensor cumsum(const Tensor& x, int64_t axis, bool reverse = false);

/// Contracts lhs/rhs dims `contracting` and pairs `batch` dims. Output: batch, lhs free, rhs free.
Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const AxisPair& contracting, const AxisPair& batch = {});

// Indexing.
Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& limit_indices,
             const std::vector<int64_t>& strides = {});
/// Slice of `slice_sizes` at run-time starts (one integer scalar per dim), clamped to fit.
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& start_indices,
                     const std::vector<int64_t>& slice_sizes);
/// `x` with `update` written at run-time starts (clamped to fit).
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& start_indices);
/// Pads with `padding_value` (rank 0, same dtype): low/high may be negative (cropping), interior >= 0.
Tensor pad(const Tensor& x, const Tensor& padding_value, const std::vector<int64_t>& low,
           const std::vector<int64_t>& high, const std::vector<int64_t>& interior);
Tensor concatenate(const std::vector<Tensor>& xs, int64_t dimension);
/// Values 0, 1, ... along `dimension` of `shape`.
Tensor iota(DType dtype, const Shape& shape, int64_t dimension);
/// Take along `axis` with integer `indices` of any shape (clamped into range):
/// out.shape = x.shape[:axis] ++ indices.shape ++ x.shape[axis+1:].
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis);
/// Adds `updates` (shaped like gather's output) into `operand` at `indices` along `axis`; the
/// transpose of gather. Out-of-range indices are clamped like gather's.
Tensor scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates, int64_t axis);

/// The linalg_solve primitive (exact shapes: a (B..., n, n), b (B..., n, k), one float dtype).
Tensor linalg_solve(const Tensor& a, const Tensor& b);
/// The gram primitive: xᵀ diag(s) x for x [N, D] and s [N] of one float dtype; a symmetric [D, D].
Tensor gram(const Tensor& x, const Tensor& s);

}  // namespace fluxion::lax
