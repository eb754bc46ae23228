// The numpy-style op layer, products: matmul (numpy semantics, broadcast batch dims), dot, outer,
// and linear solves (solve, inv). All contractions become one dot_general, solves one linalg_solve;
// operands are promoted and their batch dims broadcast first.
#include <tuple>

#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"

namespace fluxion {
namespace ops_linalg_detail {

/// "the last dimension of f32[2,3] (3) does not match ... of f32[4,5] (4)": the contraction check.
void check_contraction(const char* op, const Tensor& a, int64_t da, const Tensor& b, int64_t db) {
  if (a.shape()[da] == b.shape()[db]) return;
  const char* which_b = b.ndim() == 1 ? "the only" : "the second-to-last";
  detail::fail<ShapeError>(op, "cannot contract ", a.aval(), " with ", b.aval(), ": the last dimension of ",
                           "the first (", a.shape()[da], ") must equal ", which_b, " dimension of the ", "second (",
                           b.shape()[db], "). Transpose or reshape an operand.");
}

/// The operands converted to their common dtype.
std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b) {
  DType d = result_type(a, b);
  Tensor x = astype(a, d);
  return {x, astype(b, d)};
}

/// Shape `batch` followed by the last two dims of `x`.
Shape with_batch(const Shape& batch, const Tensor& x) {
  Shape s = batch;
  s.push_back(x.shape()[x.ndim() - 2]);
  s.push_back(x.shape()[x.ndim() - 1]);
  return s;
}

/// Matrix stacks a and b (rank >= 2) with their batch dims (all but the last two) broadcast
/// against each other. The error names the user's operands a0 and b0.
std::pair<Tensor, Tensor> broadcast_batch(const char* op, const Tensor& a, const Tensor& b, const Tensor& a0,
                                          const Tensor& b0) {
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(op, ba, bb);
  } catch (const ShapeError&) {
    detail::fail<ShapeError>(op, "batch dimensions ", ba, " of ", a0.aval(), " and ", bb, " of ", b0.aval(),
                             " do not broadcast. They must be equal or 1, aligned from the right.");
  }
  Tensor x = broadcast_to(a, with_batch(batch, a));
  return {x, broadcast_to(b, with_batch(batch, b))};
}

/// ShapeError unless `a` is a square matrix or a stack of them (..., n, n).
void check_square(const char* op, const Tensor& a) {
  const int64_t r = a.ndim();
  if (r < 2 || a.shape()[r - 1] != a.shape()[r - 2])
    detail::fail<ShapeError>(op, "a must be a square matrix or a stack of them (..., n, n), got ", a.aval(),
                             ". Only square systems have a unique solution.");
}

}  // namespace ops_linalg_detail

Tensor matmul(const Tensor& a0, const Tensor& b0) {
  if (a0.ndim() == 0 || b0.ndim() == 0)
    detail::fail<ShapeError>("matmul", "operands must be at least 1-d, got ", a0.aval(), " and ", b0.aval(),
                             ". Use multiply (or *) for scalars.");
  auto [a, b] = ops_linalg_detail::promoted(a0, b0);
  int64_t ra = a.ndim(), rb = b.ndim();
  int64_t cb = rb == 1 ? 0 : rb - 2;  // b's contracted dim
  ops_linalg_detail::check_contraction("matmul", a0, ra - 1, b0, cb);
  // Without batch dims on b (or with a 1-d a), dot_general's output order (a's free dims, then
  // b's) is already numpy's: [...a batch, n, m], [...b batch, m], [...a batch, n] or [].
  if (ra == 1 || rb <= 2) return lax::dot_general(a, b, {{ra - 1}, {cb}});
  // Both have matrix dims and b has batch dims: broadcast the batch dims and pair them.
  std::tie(a, b) = ops_linalg_detail::broadcast_batch("matmul", a, b, a0, b0);
  int64_t nb = a.ndim() - 2;
  std::vector<int64_t> batch_dims;
  for (int64_t i = 0; i < nb; ++i) batch_dims.push_back(i);
  return lax::dot_general(a, b, {{nb + 1}, {nb}}, {batch_dims, batch_dims});
}

Tensor dot(const Tensor& a0, const Tensor& b0) {
  if (a0.ndim() == 0 || b0.ndim() == 0) return multiply(a0, b0);
  auto [a, b] = ops_linalg_detail::promoted(a0, b0);
  int64_t cb = b.ndim() == 1 ? 0 : b.ndim() - 2;
  ops_linalg_detail::check_contraction("dot", a0, a.ndim() - 1, b0, cb);
  // Output a[:-1] ++ b[:-2] ++ b[-1:]: exactly dot_general's free-dims order.
  return lax::dot_general(a, b, {{a.ndim() - 1}, {cb}});
}

Tensor outer(const Tensor& a0, const Tensor& b0) {
  Tensor fa = ravel(a0);
  Tensor fb = ravel(b0);
  auto [a, b] = ops_linalg_detail::promoted(fa, fb);
  Shape out{a.size(), b.size()};
  Tensor rows = lax::broadcast_in_dim(a, out, {0});
  Tensor cols = lax::broadcast_in_dim(b, out, {1});
  return multiply(rows, cols);
}

Tensor solve(const Tensor& a0, const Tensor& b0) {
  ops_linalg_detail::check_square("solve", a0);
  const int64_t n = a0.shape()[a0.ndim() - 1];
  // numpy: b is a (stack of) vector(s) when it has one dim less than a; a 1-d b can only be one.
  const bool vector = b0.ndim() == a0.ndim() - 1 || b0.ndim() == 1;
  if (b0.ndim() == 0)
    detail::fail<ShapeError>("solve", "b must be a vector (..., n) or a matrix (..., n, k), got ", b0.aval(),
                             ". Reshape it to (n,) or (n, 1).");
  const int64_t rows = b0.shape()[b0.ndim() - (vector ? 1 : 2)];
  if (rows != n)
    detail::fail<ShapeError>("solve", "a ", a0.aval(), " is ", n, "x", n, " but b ", b0.aval(), " has ", rows,
                             " rows (b is read as ", vector ? "a vector (..., n)" : "a matrix (..., n, k)",
                             "). b needs n = ", n, " rows.");
  DType d = result_type(a0, b0);
  if (!is_floating(d)) d = f64;
  Tensor a = astype(a0, d);
  Tensor b = astype(b0, d);
  if (vector) b = expand_dims(b, b.ndim());
  std::tie(a, b) = ops_linalg_detail::broadcast_batch("solve", a, b, a0, b0);
  Tensor x = lax::linalg_solve(a, b);
  return vector ? squeeze(x, {x.ndim() - 1}) : x;
}

Tensor inv(const Tensor& a0) {
  ops_linalg_detail::check_square("inv", a0);
  const DType d = is_floating(a0.dtype()) ? a0.dtype() : f64;
  Tensor a = astype(a0, d);
  Tensor identity = broadcast_to(eye(a.shape()[a.ndim() - 1], d), a.shape());
  return lax::linalg_solve(a, identity);
}

}  // namespace fluxion
