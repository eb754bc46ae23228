// triangular_solve: x with op(a) x = b (left_side) or x op(a) = b, op(a) = a or aᵀ, for a (B..., n, n)
// triangular and b (B..., n, k) (left) or (B..., k, n) (right) with equal batch dims and one floating
// dtype; x has b's shape. Only the named triangle of a is read; with unit_diagonal its diagonal is
// taken as ones. The CPU kernel is Eigen's triangularView solve (n <= 8: a fixed-size kernel,
// backends/cpu/small_triangular.hpp); the reference is forward/back substitution in long double,
// rounded once. A zero on the diagonal (unless unit_diagonal) throws
// fluxion::Error naming the batch index, in every kernel: never inf/NaN.
// Rules: jvp dx = solve(a, db - op(da) x) (left) or solve(a, db - x op(da)) (right), da restricted to
// the triangle read; transpose (linear in b only): the same solve with transpose_a flipped; batching
// folds a batch of right-hand sides into extra columns (left) or rows (right) when a is shared.
// Also: the family's registration, its shared helpers and the fx::linalg ops.
#include <Eigen/Core>
#include <sstream>

#include "backends/cpu/small_triangular.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/linalg_triangular.hpp"
#include "fluxion/ops.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/linalg_triangular.hpp"
#include "primitives/registry.hpp"
#include "runtime/switches.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace triangular_detail {

void fail_zero_diagonal(const AbstractValue& a, int64_t index, int64_t row) {
  detail::fail<Error>("triangular_solve", matrix_location(a, index), " has a zero on its diagonal (row ", row,
                      "), so the triangular system has no unique solution. Check the factor (a failed or "
                      "rank-deficient factorization), or pass unit_diagonal=true if its diagonal is implicitly ones.");
}

Tensor triangle_mask(const Tensor& like, bool lower, bool with_diagonal, double diagonal_value) {
  const int64_t r = like.ndim(), n = like.shape()[r - 1];
  std::vector<double> m(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (i == j) m[static_cast<size_t>(i * n + j)] = with_diagonal ? diagonal_value : 0.0;
      else if ((i > j) == lower) m[static_cast<size_t>(i * n + j)] = 1.0;
  // Built concrete in the dtype (no conversion to trace), then moved to `like`'s device.
  Tensor mask = dispatch_storage_dtype(like.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> values;
    values.reserve(m.size());
    for (double v : m) values.push_back(static_cast<T>(v));  // in like's dtype: nothing to convert while tracing
    return from_vector(values, Shape{n, n});
  });
  mask = device_put(mask, like.device());
  return lax::broadcast_in_dim(mask, like.shape(), {r - 2, r - 1});
}

Tensor batched_matmul(const Tensor& a, const Tensor& x) {
  const int64_t r = a.ndim();
  std::vector<int64_t> batch(static_cast<size_t>(r - 2));
  for (int64_t i = 0; i < r - 2; ++i) batch[static_cast<size_t>(i)] = i;
  return lax::dot_general(a, x, {{r - 1}, {r - 2}}, {batch, batch});
}

Tensor matrix_transpose(const Tensor& a) {
  std::vector<int64_t> perm(static_cast<size_t>(a.ndim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(a, perm);
}

// ---- kernels ----

/// Sizes of one batched solve: `batch` matrices n x n, `rhs` right-hand sides of n each.
struct TriDims {
  int64_t batch, n, rhs;
};

TriDims tri_dims(const Shape& a, const Shape& b, bool left_side) {
  const int64_t r = a.size();
  int64_t batch = 1;
  for (int64_t i = 0; i < r - 2; ++i) batch *= a[i];
  return {batch, a[r - 1], left_side ? b[r - 1] : b[r - 2]};
}

/// The first zero on the diagonal of matrix i, or -1 (never one with unit_diagonal).
template <class T> int64_t zero_diagonal_row(const T* a, int64_t n, bool unit_diagonal) {
  if (unit_diagonal) return -1;
  for (int64_t d = 0; d < n; ++d)
    if (a[d * n + d] == T(0)) return d;
  return -1;
}

/// CPU: Eigen's triangular solves on op(a), copied column-major with only the read triangle.
template <class T>
void tri_cpu(const T* a, const T* b, T* x, const AbstractValue& a_aval, TriDims d, const TriangularSolveParams& p) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const int64_t n = d.n, rows = p.left_side ? n : d.rhs, cols = p.left_side ? d.rhs : n;
  // op(a) is lower exactly when a's read triangle is lower and it is not transposed, or vice versa.
  const bool op_lower = p.lower != p.transpose_a;
  if (n <= cpu::kSmallSolveMax && runtime::enabled(runtime::Switch::small_linalg)) {
    for (int64_t i = 0; i < d.batch; ++i)
      if (const int64_t zero = zero_diagonal_row(a + i * n * n, n, p.unit_diagonal); zero >= 0)
        fail_zero_diagonal(a_aval, i, zero);
    if (rows * cols > 0)
      cpu::parallel_small_batch(d.batch, n, d.rhs, [&](int64_t begin, int64_t end) {
        cpu::triangular_small_batch(a, b, x, n, d.rhs, begin, end, p.left_side, p.lower, p.transpose_a,
                                    p.unit_diagonal);
        return int64_t{-1};
      });
    return;
  }
  ColMajor op(n, n), sol(rows, cols);
  for (int64_t i = 0; i < d.batch; ++i) {
    const T* ai = a + i * n * n;
    const int64_t zero = zero_diagonal_row(ai, n, p.unit_diagonal);
    if (zero >= 0) fail_zero_diagonal(a_aval, i, zero);
    if (rows * cols == 0) continue;
    Eigen::Map<const RowMajor> am(ai, n, n);
    if (p.transpose_a) op = am.transpose();
    else op = am;
    sol = Eigen::Map<const RowMajor>(b + i * rows * cols, rows, cols);
    auto solve = [&](auto view) {
      if (p.left_side) view.solveInPlace(sol);
      else view.template solveInPlace<Eigen::OnTheRight>(sol);
    };
    if (op_lower && p.unit_diagonal) solve(op.template triangularView<Eigen::UnitLower>());
    else if (op_lower) solve(op.template triangularView<Eigen::Lower>());
    else if (p.unit_diagonal) solve(op.template triangularView<Eigen::UnitUpper>());
    else solve(op.template triangularView<Eigen::Upper>());
    Eigen::Map<RowMajor>(x + i * rows * cols, rows, cols) = sol;
  }
}

/// Reference: substitution in long double on M = op(a) (left side) or op(a)ᵀ (right side, where
/// x op(a) = b is op(a)ᵀ xᵀ = bᵀ), one right-hand side (a column of b, or a row) at a time.
template <class T> void tri_reference(const T* a, const T* b, T* x, const AbstractValue& a_aval, TriDims d,
                                      const TriangularSolveParams& p) {
  using L = long double;
  const int64_t n = d.n, k = d.rhs;
  // M(i, j) = a(j, i) exactly when M is a transposed; M is lower when its source triangle, seen
  // through the transposes, is.
  const bool transposed = p.transpose_a == p.left_side;
  const bool m_lower = p.lower != transposed;
  std::vector<L> y(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    const T* ai = a + bi * n * n;
    const int64_t zero = zero_diagonal_row(ai, n, p.unit_diagonal);
    if (zero >= 0) fail_zero_diagonal(a_aval, bi, zero);
    auto M = [&](int64_t i, int64_t j) { return static_cast<L>(transposed ? ai[j * n + i] : ai[i * n + j]); };
    // Element e of right-hand side j: b(e, j) on the left side, b(j, e) on the right.
    auto at = [&](int64_t e, int64_t j) { return bi * n * k + (p.left_side ? e * k + j : j * n + e); };
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t s = 0; s < n; ++s) {
        const int64_t e = m_lower ? s : n - 1 - s;  // forward substitution when lower, else backward
        L acc = static_cast<L>(b[at(e, j)]);
        for (int64_t s2 = 0; s2 < s; ++s2) {
          const int64_t q = m_lower ? s2 : n - 1 - s2;
          acc -= M(e, q) * y[static_cast<size_t>(q)];
        }
        y[static_cast<size_t>(e)] = p.unit_diagonal ? acc : acc / M(e, e);
      }
      for (int64_t e = 0; e < n; ++e) x[at(e, j)] = static_cast<T>(y[static_cast<size_t>(e)]);
    }
  }
}

std::vector<AbstractValue> tri_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  check_arity(self, in, 2);
  const auto& p = params.as<TriangularSolveParams>();
  const AbstractValue &a = in[0], &b = in[1];
  const char* name = self.name.c_str();
  if (!kFloating.contains(a.dtype) || !kFloating.contains(b.dtype))
    detail::fail<DTypeError>(name, "needs floating operands (f32 or f64), got a ", a, " and b ", b,
                             ". Convert them with fx::astype.");
  if (a.dtype != b.dtype)
    detail::fail<DTypeError>(name, "operand dtypes differ: a ", a, " and b ", b, ". Convert one with fx::astype.");
  const int64_t r = a.ndim();
  if (r < 2 || a.shape[r - 1] != a.shape[r - 2])
    detail::fail<ShapeError>(name, "a must be a square matrix or a batch of them (..., n, n), got ", a,
                             ". A triangular system needs a square triangular matrix.");
  const char* form = p.left_side ? "(..., n, k) (left_side: op(a) x = b)" : "(..., k, n) (x op(a) = b)";
  if (b.ndim() != r)
    detail::fail<ShapeError>(name, "b ", b, " must have the rank of a ", a, " (", r, "): shape ", form,
                             ". Give a vector b a trailing dim of size 1.");
  for (int64_t i = 0; i < r - 2; ++i)
    if (a.shape[i] != b.shape[i])
      detail::fail<ShapeError>(name, "batch dims of a ", a, " and b ", b, " differ (dim ", i, ": ", a.shape[i], " vs ",
                               b.shape[i], "). They must be equal; broadcast them first (fx::broadcast_to).");
  const int64_t n = a.shape[r - 1], got = b.shape[p.left_side ? r - 2 : r - 1];
  if (got != n)
    detail::fail<ShapeError>(name, "b ", b, " must be ", form, " with n = ", n, " for a ", a, ", but its ",
                             p.left_side ? "rows are " : "columns are ", got, ".");
  return {AbstractValue{b.shape, b.dtype}};
}

template <bool Reference>
void tri_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<TriangularSolveParams>();
  const TriDims d = tri_dims(in[0].shape(), in[1].shape(), p.left_side);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Reference)
        tri_reference(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), in[0].aval(), d, p);
      else tri_cpu(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), in[0].aval(), d, p);
    }
  });
}

// ---- differentiation and batching rules ----

// x = op(a)⁻¹ b: dx = op(a)⁻¹ (db - op(da) x); right side x = b op(a)⁻¹: dx = (db - x op(da)) op(a)⁻¹.
// da counts only on the triangle the primitive reads (its other entries do not change x).
void tri_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<TriangularSolveParams>();
  primals_out = fluxion::bind(self, primals, params);
  Tensor rhs = tangents[1];
  if (tangents[0].defined()) {
    Tensor da = lax::mul(tangents[0], triangle_mask(tangents[0], p.lower, !p.unit_diagonal));
    if (p.transpose_a) da = matrix_transpose(da);
    Tensor prod = p.left_side ? batched_matmul(da, primals_out[0]) : batched_matmul(primals_out[0], da);
    rhs = rhs.defined() ? lax::sub(rhs, prod) : lax::neg(prod);
  }
  tangents_out = {rhs.defined() ? fluxion::bind1(self, {primals[0], rhs}, params) : Tensor()};
}

// Linear in b for a known a: the adjoint of b -> op(a)⁻¹ b is c -> op(a)⁻ᵀ c (and likewise on the
// right), the same solve with transpose_a flipped.
void tri_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!inputs[0].defined())
    detail::fail<Error>(self.name.c_str(),
                        "internal: transpose with a linear matrix a (triangular_solve is linear in b only, for a "
                        "known a).");
  if (!cts_out[0].defined() || inputs[1].defined()) return;
  const auto& p = params.as<TriangularSolveParams>();
  const TriangularSolveParams flipped(p.left_side, p.lower, !p.transpose_a, p.unit_diagonal);
  cts_in[1] = fluxion::bind1(self, {inputs[0], cts_out[0]}, flipped);
}

// Shared a: the examples' right-hand sides become extra columns (left side: the batch axis moves
// last, (n, k, m) -> (n, k*m)) or extra rows (right side: it moves before the rows, (m, k, n) ->
// (m*k, n)) of one solve. Mapped a: both operands batched at the front (an unmapped b broadcast).
void tri_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
               const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<TriangularSolveParams>();
  if (dims[0] == kNotMapped) {
    const int64_t r = values[1].ndim() - 1;  // the unbatched rank
    const int64_t axis = p.left_side ? r : r - 2;
    Tensor b = batching::move_axis(values[1], dims[1], axis);
    const Shape split = b.shape();
    Shape folded(split.begin(), split.end() - 3);
    if (p.left_side) folded.push_back(split[r - 2]), folded.push_back(split[r - 1] * split[r]);
    else folded.push_back(split[r - 2] * split[r - 1]), folded.push_back(split[r]);
    Tensor x = fluxion::bind1(self, {values[0], lax::reshape(b, folded)}, params);
    out = {lax::reshape(x, split)};
    out_dims = {axis};
    return;
  }
  const int64_t size = batching::batch_size(values, dims);
  Tensor a = batching::move_axis(values[0], dims[0], 0);
  Tensor b = batching::materialize(values[1], dims[1], size, 0);
  out = fluxion::bind(self, {a, b}, params);
  out_dims = {0};
}

const Primitive& triangular_solve_p() {
  static const Primitive& p = define_primitive("triangular_solve")
                                  .params<TriangularSolveParams>()
                                  .shape(&tri_shape_rule)
                                  .reference(&tri_kernel<true>)
                                  .cpu(&tri_kernel<kLightKernels>)
                                  .jvp(&tri_jvp)
                                  .transpose(&tri_transpose)
                                  .batch(&tri_batch)
                                  .build();
  return p;
}

}  // namespace triangular_detail

void register_linalg_triangular(std::vector<const Primitive*>& list) {
  list.push_back(&triangular_detail::cholesky_p());
  list.push_back(&triangular_detail::triangular_solve_p());
}

}  // namespace fluxion::primitives

namespace fluxion::linalg {

Tensor triangular_solve(const Tensor& a, const Tensor& b, bool left_side, bool lower, bool transpose_a,
                        bool unit_diagonal) {
  using primitives::triangular_detail::TriangularSolveParams;
  return bind1(primitives::triangular_detail::triangular_solve_p(), {a, b},
               TriangularSolveParams(left_side, lower, transpose_a, unit_diagonal));
}

Tensor cholesky(const Tensor& a, OnFailure on_failure) {
  return bind1(primitives::triangular_detail::cholesky_p(), {a},
               primitives::triangular_detail::CholeskyParams(on_failure == OnFailure::nan));
}

Tensor cho_solve(const Tensor& l, const Tensor& b) {
  // numpy-style: a b with one dim less than l is a (stack of) vector(s).
  const bool vector = b.ndim() == l.ndim() - 1;
  Tensor rhs = vector ? lax::expand_dims(b, {b.ndim()}) : b;
  Tensor y = triangular_solve(l, rhs, /*left_side=*/true, /*lower=*/true, /*transpose_a=*/false);
  Tensor x = triangular_solve(l, y, /*left_side=*/true, /*lower=*/true, /*transpose_a=*/true);
  return vector ? lax::squeeze(x, {x.ndim() - 1}) : x;
}

}  // namespace fluxion::linalg
