// The linalg_decompositions family's factorizations, lu and qr (expm and expm_frechet live in
// linalg_expm.cpp; det, slogdet and matrix_power are compositions in src/ops_linalg_decompositions.cpp).
//
// lu: a (B..., m, n) -> (lu, pivots, permutation) like jax.lax.linalg.lu: L (unit diagonal, not
// stored) and U packed in lu, pivots i32 (B..., k) LAPACK's 0-based row swaps, permutation i32
// (B..., m) with a[permutation] = L U, k = min(m, n). Partial pivoting: the largest magnitude in the
// column, the first on ties; a column with no nonzero candidate is left in place (a zero pivot, no
// error: LAPACK getrf's convention, so det is exactly 0). CPU: Eigen's blocked partial-pivoting LU
// run in place on the row-major output; reference: textbook elimination in long double, rounded once.
// jvp: JAX's (lu_dot = L tril(L⁻¹ P da U⁻¹, -1) + triu(L⁻¹ P da U⁻¹) U with L, U padded to m x m and
// n x n by identity), undefined (zero) tangents for pivots and permutation.
//
// qr: Householder QR, reduced (q (B..., m, k), r (B..., k, n)) or complete (q (B..., m, m), r (B...,
// m, n)). Each reflector maps its column x to beta e0 with beta = -sign(x0) |x| (sign(0) = +), and a
// column whose tail is already zero is left alone: LAPACK geqrf's and Eigen's convention, so r's
// diagonal may be negative. CPU: Eigen's HouseholderQR; reference: the same reflectors in long
// double. jvp: JAX's rule for m >= n (reduced, or complete with m = n); wide a = [x y] (m < n)
// factors x = q r1 and r2 = qᵀ y, so dq, dr1 follow from the square rule and dr2 = dqᵀ y + qᵀ dy;
// a complete QR of a tall matrix raises NotImplementedError (q's last m - n columns are not
// determined by a), like JAX.
//
// Both batch by moving every batch axis to the front: each matrix is factored on its own.
#include <Eigen/LU>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "backends/cpu/gemm.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/linalg_decompositions.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/linalg_decompositions.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace decomp_detail {

// ---- helpers shared by the family ----

void check_matrix(const Primitive& self, const AbstractValue& a, bool square) {
  const char* name = self.name.c_str();
  if (!kFloating.contains(a.dtype))
    detail::fail<DTypeError>(name, "needs a floating operand (f32 or f64), got ", a,
                             ". Convert it with fx::astype (the fx::linalg ops convert integers to f64).");
  const int64_t r = a.ndim();
  if (r < 2)
    detail::fail<ShapeError>(name, "needs a matrix or a batch of them (..., m, n), got ", a, " of rank ", r,
                             ". Reshape a vector to (n, 1) or (1, n).");
  if (square && a.shape[r - 1] != a.shape[r - 2])
    detail::fail<ShapeError>(name, "needs square matrices (..., n, n), got ", a, " (", a.shape[r - 2], "x",
                             a.shape[r - 1], "). Only a square matrix has one.");
}

void batch_at_front(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                    const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t size = batching::batch_size(values, dims);
  std::vector<Tensor> front;
  for (size_t i = 0; i < values.size(); ++i) front.push_back(batching::materialize(values[i], dims[i], size, 0));
  out = fluxion::bind(self, front, params);
  out_dims.assign(out.size(), 0);
}

Tensor matrix_transpose(const Tensor& a) {
  std::vector<int64_t> perm(static_cast<size_t>(a.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(a, perm);
}

Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  const int64_t r = a.ndim();
  std::vector<int64_t> batch(static_cast<size_t>(r - 2));
  std::iota(batch.begin(), batch.end(), 0);
  return lax::dot_general(a, b, {{r - 1}, {r - 2}}, {batch, batch});
}

Tensor band_part(const Tensor& x, bool lower, int64_t offset) {
  const int64_t r = x.ndim();
  const Shape mn{x.shape()[r - 2], x.shape()[r - 1]};
  Tensor diagonal = lax::sub(lax::iota(i64, mn, 1), lax::iota(i64, mn, 0));  // j - i
  Tensor bound = scalar_like(diagonal, static_cast<double>(offset));
  Tensor keep = lower ? lax::le(diagonal, bound) : lax::ge(diagonal, bound);
  Tensor mask = lax::convert_element_type(keep, x.dtype());
  return lax::mul(x, lax::broadcast_in_dim(mask, x.shape(), {r - 2, r - 1}));
}

Tensor solve_right(const Tensor& x, const Tensor& r) {
  return matrix_transpose(lax::linalg_solve(matrix_transpose(r), matrix_transpose(x)));
}

/// `batch` matrices of m x n (the last two dims of `s`).
struct MatrixDims {
  int64_t batch, m, n;
  int64_t k() const { return std::min(m, n); }
};

MatrixDims matrix_dims(const Shape& s) {
  const int64_t r = s.size();
  int64_t batch = 1;
  for (int64_t i = 0; i < r - 2; ++i) batch *= s[i];
  return {batch, s[r - 2], s[r - 1]};
}

/// `batch` followed by `rows`, `cols` (cols < 0: one trailing dim only).
Shape batch_then(const Shape& s, int64_t rows, int64_t cols = -1) {
  Shape out(s.begin(), s.end() - 2);
  out.push_back(rows);
  if (cols >= 0) out.push_back(cols);
  return out;
}

/// The row permutation (row i of L U is row perm[i] of a) that LAPACK row swaps `piv` compose to.
void permutation_from_pivots(const int32_t* piv, int64_t k, int32_t* perm, int64_t m) {
  std::iota(perm, perm + m, 0);
  for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[piv[i]]);
}

// ---- lu ----

std::vector<AbstractValue> lu_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 1);
  check_matrix(self, in[0], false);
  const MatrixDims d = matrix_dims(in[0].shape);
  if (d.m > std::numeric_limits<int32_t>::max())
    detail::fail<ShapeError>("lu", in[0], " has more rows than i32 pivots can index. Split the problem.");
  return {in[0], AbstractValue{batch_then(in[0].shape, d.k()), i32}, AbstractValue{batch_then(in[0].shape, d.m), i32}};
}

/// CPU: Eigen's blocked partial-pivoting LU in place on the row-major output (its transpositions are
/// exactly LAPACK's pivots). On the calling thread (Eigen's products inside it are not threaded).
template <class T> void lu_cpu(const T* a, T* lu, int32_t* piv, int32_t* perm, MatrixDims d) {
  const int64_t k = d.k();
  std::copy(a, a + d.batch * d.m * d.n, lu);
  for (int64_t i = 0; i < d.batch; ++i) {
    int32_t* p = piv + i * k;
    T* f = lu + i * d.m * d.n;
    if (k > 0) {
      // Eigen's blocked path updates only the first min(m, n) columns, so a wide matrix factors its
      // leading m x m block, and its trailing columns get the same row swaps and U12 = L⁻¹ A12.
      int32_t swaps = 0;
      Eigen::internal::partial_lu_impl<T, Eigen::RowMajor, int32_t>::blocked_lu(d.m, k, f, d.n, p, swaps);
      if (d.n > d.m) {
        using Strided =
            Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
        Strided left(f, d.m, d.m, Eigen::OuterStride<>(d.n)), right(f + d.m, d.m, d.n - d.m, Eigen::OuterStride<>(d.n));
        for (int64_t r = 0; r < d.m; ++r)
          if (p[r] != r) right.row(r).swap(right.row(p[r]));
        left.template triangularView<Eigen::UnitLower>().solveInPlace(right);
      }
    }
    permutation_from_pivots(p, k, perm + i * d.m, d.m);
  }
}

/// Reference: Gaussian elimination with partial pivoting (largest magnitude, first on ties; a zero
/// pivot column is skipped) in long double, rounded once to T.
template <class T> void lu_reference(const T* a, T* lu, int32_t* piv, int32_t* perm, MatrixDims d) {
  using L = long double;
  const int64_t m = d.m, n = d.n, k = d.k();
  std::vector<L> w(static_cast<size_t>(m * n));
  auto W = [&](int64_t i, int64_t j) -> L& { return w[static_cast<size_t>(i * n + j)]; };
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    for (int64_t e = 0; e < m * n; ++e) w[static_cast<size_t>(e)] = static_cast<L>(a[bi * m * n + e]);
    int32_t* p = piv + bi * k;
    for (int64_t c = 0; c < k; ++c) {
      int64_t best = c;
      for (int64_t i = c + 1; i < m; ++i)
        if (std::fabs(W(i, c)) > std::fabs(W(best, c))) best = i;
      p[c] = static_cast<int32_t>(best);
      if (W(best, c) == 0) continue;  // the column below is all zero: nothing to eliminate
      for (int64_t j = 0; j < n; ++j) std::swap(W(best, j), W(c, j));
      for (int64_t i = c + 1; i < m; ++i) {
        W(i, c) /= W(c, c);
        for (int64_t j = c + 1; j < n; ++j) W(i, j) -= W(i, c) * W(c, j);
      }
    }
    for (int64_t e = 0; e < m * n; ++e) lu[bi * m * n + e] = static_cast<T>(w[static_cast<size_t>(e)]);
    permutation_from_pivots(p, k, perm + bi * m, m);
  }
}

template <bool Reference> void lu_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const MatrixDims d = matrix_dims(in[0].shape());
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* lu = out[0].mutable_data<T>();
      int32_t* piv = out[1].mutable_data<int32_t>();
      int32_t* perm = out[2].mutable_data<int32_t>();
      if constexpr (Reference) lu_reference(in[0].data<T>(), lu, piv, perm, d);
      else lu_cpu(in[0].data<T>(), lu, piv, perm, d);
    }
  });
}

/// P with P[..., i, j] = (perm[..., i] == j), in `dtype`: P a = a[perm].
Tensor permutation_matrix(const Tensor& perm, DType dtype) {
  const int64_t r = perm.ndim() + 1, m = perm.shape()[r - 2];
  Shape square(perm.shape().begin(), perm.shape().end());
  square.push_back(m);
  std::vector<int64_t> dims(static_cast<size_t>(r - 1));
  std::iota(dims.begin(), dims.end(), 0);
  Tensor rows = lax::broadcast_in_dim(perm, square, dims);
  return lax::convert_element_type(lax::eq(rows, lax::iota(i32, square, r - 1)), dtype);
}

/// An n x n matrix broadcast to `like`'s batch dims, with ones on the diagonal from `first` on.
Tensor identity_from(const Tensor& like, int64_t n, int64_t first) {
  std::vector<double> values(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = first; i < n; ++i) values[static_cast<size_t>(i * n + i)] = 1.0;
  Tensor e = lax::convert_element_type(from_vector(values, Shape{n, n}), like.dtype());
  const int64_t r = like.ndim();
  return lax::broadcast_in_dim(e, batch_then(like.shape(), n, n), {r - 2, r - 1});
}

void lu_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
            const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(3, Tensor());  // pivots and permutation: integers, no tangent
  if (!tangents[0].defined()) return;
  const Tensor& lu = primals_out[0];
  const int64_t r = lu.ndim(), m = lu.shape()[r - 2], n = lu.shape()[r - 1], k = std::min(m, n);
  const Tensor zero = scalar_like(lu, 0.0);
  std::vector<int64_t> start(static_cast<size_t>(r), 0), none(static_cast<size_t>(r), 0);
  std::vector<int64_t> limit = lu.shape().dims();
  // l (m x m): L's k columns, then identity columns; u (n x n): U's k rows, then identity rows.
  limit[r - 1] = k;
  std::vector<int64_t> l_high = none;
  l_high[r - 1] = m - k;
  Tensor l = lax::pad(band_part(lax::slice(lu, start, limit), true, -1), zero, none, l_high, none);
  l = lax::add(l, identity_from(lu, m, 0));
  limit = lu.shape().dims();
  limit[r - 2] = k;
  std::vector<int64_t> u_high = none;
  u_high[r - 2] = n - k;
  Tensor u = lax::pad(band_part(lax::slice(lu, start, limit), false, 0), zero, none, u_high, none);
  u = lax::add(u, identity_from(lu, n, k));
  // L⁻¹ P da U⁻¹ splits into its strictly lower part (dL's) and its upper part (dU's).
  Tensor x = batched_matmul(permutation_matrix(primals_out[2], lu.dtype()), tangents[0]);
  Tensor lau = solve_right(lax::linalg_solve(l, x), u);
  tangents_out[0] = lax::add(batched_matmul(l, band_part(lau, true, -1)), batched_matmul(band_part(lau, false, 0), u));
}

const Primitive& lu_p() {
  static const Primitive& p = define_primitive("lu")
                                  .shape(&lu_shape_rule)
                                  .reference(&lu_kernel<true>)
                                  .cpu(&lu_kernel<kLightKernels>)
                                  .jvp(&lu_jvp)
                                  .batch(&batch_at_front)
                                  .build();
  return p;
}

// ---- qr ----

std::vector<AbstractValue> qr_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                         const Params& params) {
  check_arity(self, in, 1);
  check_matrix(self, in[0], false);
  const MatrixDims d = matrix_dims(in[0].shape);
  const int64_t cols = params.as<QrParams>().full_matrices ? d.m : d.k();
  return {AbstractValue{batch_then(in[0].shape, d.m, cols), in[0].dtype},
          AbstractValue{batch_then(in[0].shape, cols, d.n), in[0].dtype}};
}

/// CPU: Eigen's HouseholderQR per matrix; q is its reflectors applied to the first `cols` columns
/// of the identity.
template <class T> void qr_cpu(const T* a, T* q, T* r, MatrixDims d, int64_t cols) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  Eigen::HouseholderQR<ColMajor> f(d.m, d.n);
  for (int64_t i = 0; i < d.batch; ++i) {
    Eigen::Map<RowMajor> qi(q + i * d.m * cols, d.m, cols), ri(r + i * cols * d.n, cols, d.n);
    if (d.k() == 0) {  // nothing to factor: q is the identity's first columns, r is empty or zero
      qi = ColMajor::Identity(d.m, cols);
      ri.setZero();
      continue;
    }
    f.compute(Eigen::Map<const RowMajor>(a + i * d.m * d.n, d.m, d.n));
    ri = f.matrixQR().topRows(cols).template triangularView<Eigen::Upper>();
    qi = f.householderQ() * ColMajor::Identity(d.m, cols);
  }
}

/// Reference: the same Householder reflectors (LAPACK dgeqr2 / dorg2r) in long double, rounded once.
template <class T> void qr_reference(const T* a, T* q, T* r, MatrixDims d, int64_t cols) {
  using L = long double;
  const int64_t m = d.m, n = d.n, k = d.k();
  std::vector<L> w(static_cast<size_t>(m * n)), qw(static_cast<size_t>(m * cols)), tau(static_cast<size_t>(k));
  auto W = [&](int64_t i, int64_t j) -> L& { return w[static_cast<size_t>(i * n + j)]; };
  auto Q = [&](int64_t i, int64_t j) -> L& { return qw[static_cast<size_t>(i * cols + j)]; };
  // H = I - tau v vᵀ (v = (1, W(j+1.., j))) applied to column c of a matrix M, rows j...
  auto reflect = [&](int64_t j, auto&& M, int64_t c) {
    L s = M(j, c);
    for (int64_t i = j + 1; i < m; ++i) s += W(i, j) * M(i, c);
    s *= tau[static_cast<size_t>(j)];
    M(j, c) -= s;
    for (int64_t i = j + 1; i < m; ++i) M(i, c) -= s * W(i, j);
  };
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    for (int64_t e = 0; e < m * n; ++e) w[static_cast<size_t>(e)] = static_cast<L>(a[bi * m * n + e]);
    for (int64_t j = 0; j < k; ++j) {
      const L alpha = W(j, j);
      L tail = 0;
      for (int64_t i = j + 1; i < m; ++i) tail += W(i, j) * W(i, j);
      L& t = tau[static_cast<size_t>(j)];
      if (tail == 0) {
        t = 0;  // already e0-aligned: no reflection, W(j, j) keeps its sign
        continue;
      }
      const L norm = std::sqrt(alpha * alpha + tail), beta = alpha >= 0 ? -norm : norm;
      t = (beta - alpha) / beta;
      for (int64_t i = j + 1; i < m; ++i) W(i, j) /= alpha - beta;
      W(j, j) = beta;
      for (int64_t c = j + 1; c < n; ++c) reflect(j, W, c);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < cols; ++c) Q(i, c) = i == c ? 1 : 0;
    for (int64_t j = k; j-- > 0;)
      for (int64_t c = 0; c < cols; ++c) reflect(j, Q, c);
    for (int64_t e = 0; e < m * cols; ++e) q[bi * m * cols + e] = static_cast<T>(qw[static_cast<size_t>(e)]);
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < n; ++j) r[(bi * cols + i) * n + j] = i <= j && i < m ? static_cast<T>(W(i, j)) : T(0);
  }
}

template <bool Reference>
void qr_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const MatrixDims d = matrix_dims(in[0].shape());
  const int64_t cols = params.as<QrParams>().full_matrices ? d.m : d.k();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Reference)
        qr_reference(in[0].data<T>(), out[0].mutable_data<T>(), out[1].mutable_data<T>(), d, cols);
      else qr_cpu(in[0].data<T>(), out[0].mutable_data<T>(), out[1].mutable_data<T>(), d, cols);
    }
  });
}

/// Tangents of a = q r for q (m x n), r (n x n), m >= n (JAX's rule): with C = qᵀ da r⁻¹ and Ω the
/// skew-symmetric part built from C's strict lower triangle, dq = q (Ω - C) + da r⁻¹, dr = (C - Ω) r.
std::pair<Tensor, Tensor> qr_tangents_tall(const Tensor& q, const Tensor& r, const Tensor& da) {
  Tensor da_rinv = solve_right(da, r);
  Tensor c = batched_matmul(matrix_transpose(q), da_rinv);
  Tensor lower = band_part(c, true, -1);
  Tensor omega = lax::sub(lower, matrix_transpose(lower));
  Tensor dq = lax::add(batched_matmul(q, lax::sub(omega, c)), da_rinv);
  return {dq, batched_matmul(lax::sub(c, omega), r)};
}

void qr_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
            const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const int64_t rank = primals[0].ndim(), m = primals[0].shape()[rank - 2], n = primals[0].shape()[rank - 1];
  if (params.as<QrParams>().full_matrices && m > n)
    detail::fail<NotImplementedError>("qr", "the derivative of a complete QR (full_matrices=true) of the tall ",
                                      primals[0].aval(), " is not defined: q's last ", m - n,
                                      " columns are not determined by a. Differentiate the reduced QR "
                                      "(full_matrices=false), as in JAX.");
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(2, Tensor());
  if (!tangents[0].defined()) return;
  const Tensor &q = primals_out[0], &r = primals_out[1];
  if (m >= n) {
    auto [dq, dr] = qr_tangents_tall(q, r, tangents[0]);
    tangents_out = {dq, dr};
    return;
  }
  // Wide: a = [x y] with x (m x m), so q r1 = x is a square QR and r2 = qᵀ y.
  std::vector<int64_t> start(static_cast<size_t>(rank), 0), limit = primals[0].shape().dims();
  auto columns = [&](const Tensor& t, int64_t from, int64_t to) {
    start[rank - 1] = from, limit[rank - 1] = to;
    return lax::slice(t, start, limit);
  };
  auto [dq, dr1] = qr_tangents_tall(q, columns(r, 0, m), columns(tangents[0], 0, m));
  Tensor dr2 = lax::add(batched_matmul(matrix_transpose(dq), columns(primals[0], m, n)),
                        batched_matmul(matrix_transpose(q), columns(tangents[0], m, n)));
  tangents_out = {dq, lax::concatenate({dr1, dr2}, rank - 1)};
}

const Primitive& qr_p() {
  static const Primitive& p = define_primitive("qr")
                                  .params<QrParams>()
                                  .shape(&qr_shape_rule)
                                  .reference(&qr_kernel<true>)
                                  .cpu(&qr_kernel<kLightKernels>)
                                  .jvp(&qr_jvp)
                                  .batch(&batch_at_front)
                                  .build();
  return p;
}

}  // namespace decomp_detail

void register_linalg_decompositions(std::vector<const Primitive*>& list) {
  using namespace decomp_detail;
  list.insert(list.end(), {&lu_p(), &qr_p(), &expm_p(), &expm_frechet_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {
std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a) {
  std::vector<Tensor> out = bind(primitives::decomp_detail::lu_p(), {a});
  return {out[0], out[1], out[2]};
}
std::tuple<Tensor, Tensor> qr(const Tensor& a, bool full_matrices) {
  std::vector<Tensor> out =
      bind(primitives::decomp_detail::qr_p(), {a}, primitives::decomp_detail::QrParams(full_matrices));
  return {out[0], out[1]};
}
}  // namespace fluxion::lax
