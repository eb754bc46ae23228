// linalg_solve: x with a x = b, for a (B..., n, n) and b (B..., n, k) with equal batch dims B...
// (possibly none) and an equal floating dtype; x is (B..., n, k). The CPU kernel factors each
// matrix with Eigen's PartialPivLU, or for n <= 8 with a fixed-size kernel (backends/cpu/
// small_solve.hpp); the reference is Gaussian elimination with partial pivoting
// in long double, rounded once. An exactly zero pivot (a singular matrix) throws fluxion::Error
// naming the batch index, in both kernels: never inf/NaN. Nearly singular matrices are solved.
// Rules: jvp dx = solve(a, db - da x); transpose (linear in b only) ct_b = solve(aᵀ, ct_x);
// batching folds a batch of right-hand sides into extra columns when a is shared, and otherwise
// batches both operands at the front. Not linear in every input, so no traits.
#include <Eigen/LU>
#include <cmath>
#include <numeric>
#include <sstream>

#include "backends/cpu/gemm.hpp"
#include "backends/cpu/small_solve.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/linalg.hpp"
#include "primitives/registry.hpp"
#include "runtime/switches.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace linalg_detail {

/// Sizes of one solve: `batch` matrices of n x n, each with k right-hand-side columns.
struct SolveDims {
  int64_t batch, n, k;
};

SolveDims solve_dims(const Shape& a, const Shape& b) {
  const int64_t r = a.size();
  int64_t batch = 1;
  for (int64_t i = 0; i < r - 2; ++i) batch *= a[i];
  return {batch, a[r - 1], b[r - 1]};
}

std::string matrix_location(const AbstractValue& a, int64_t index) {
  std::ostringstream where;
  if (a.ndim() > 2) {
    // One batch dim: "batch index 3"; several: "batch index (1,2)".
    std::vector<int64_t> idx(static_cast<size_t>(a.ndim() - 2));
    for (size_t d = idx.size(); d-- > 0;) {
      idx[d] = index % a.shape[static_cast<int64_t>(d)];
      index /= a.shape[static_cast<int64_t>(d)];
    }
    where << "the matrix at batch index ";
    if (idx.size() == 1) where << idx[0];
    else detail::print_param(where, idx);
    where << " of " << a;
  } else {
    where << "the matrix " << a;
  }
  return where.str();
}

[[noreturn]] void fail_singular(const AbstractValue& a, int64_t index, int64_t column) {
  detail::fail<Error>("linalg_solve", matrix_location(a, index), " is singular (zero pivot in column ", column,
                      " of its LU factorization), so a x = b has no unique solution. Check it for linearly "
                      "dependent rows or columns, or regularize it (add a small multiple of the identity).");
}

/// CPU: one Eigen PartialPivLU per matrix; the row-major blocks are read through Eigen::Map (the
/// factorization copies a into its own column-major storage, reused across the batch).
template <class T> void solve_cpu(const T* a, const T* b, T* x, const AbstractValue& a_aval, SolveDims d) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  if (d.n == 0) return;
  if (d.n <= cpu::kSmallSolveMax && runtime::enabled(runtime::Switch::small_linalg)) {
    const int64_t singular = cpu::parallel_small_batch(d.batch, d.n, d.k, [&](int64_t begin, int64_t end) {
      int64_t index = -1, column = -1;
      cpu::solve_small_batch(a, b, x, d.n, d.k, begin, end, &index, &column);
      return index;
    });
    if (singular >= 0) {  // the column of its zero pivot
      int64_t index = -1, column = -1;
      cpu::solve_small_batch(a, b, x, d.n, d.k, singular, singular + 1, &index, &column);
      fail_singular(a_aval, singular, column);
    }
    return;
  }
  // On the calling thread: Fluxion builds Eigen with EIGEN_DONT_PARALLELIZE (no OpenMP team).
  Eigen::PartialPivLU<ColMajor> lu(d.n);
  for (int64_t i = 0; i < d.batch; ++i) {
    lu.compute(Eigen::Map<const RowMajor>(a + i * d.n * d.n, d.n, d.n));
    // Eigen's partial pivoting leaves a zero on U's diagonal exactly when a column has no nonzero
    // pivot candidate; solving would then divide by zero.
    for (int64_t c = 0; c < d.n; ++c)
      if (lu.matrixLU()(c, c) == T(0)) fail_singular(a_aval, i, c);
    if (d.k > 0)
      Eigen::Map<RowMajor>(x + i * d.n * d.k, d.n, d.k) =
          lu.solve(Eigen::Map<const RowMajor>(b + i * d.n * d.k, d.n, d.k));
  }
}

/// Reference: textbook Gaussian elimination with partial pivoting (the largest magnitude in the
/// column, first one on ties) and back substitution, in long double, rounded once to T.
template <class T> void solve_reference(const T* a, const T* b, T* x, const AbstractValue& a_aval, SolveDims d) {
  using L = long double;
  const int64_t n = d.n, k = d.k;
  std::vector<L> m(static_cast<size_t>(n * n)), r(static_cast<size_t>(n * k)), s(static_cast<size_t>(n * k));
  auto M = [&](int64_t i, int64_t j) -> L& { return m[static_cast<size_t>(i * n + j)]; };
  auto R = [&](int64_t i, int64_t j) -> L& { return r[static_cast<size_t>(i * k + j)]; };
  auto S = [&](int64_t i, int64_t j) -> L& { return s[static_cast<size_t>(i * k + j)]; };
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    for (int64_t e = 0; e < n * n; ++e) m[static_cast<size_t>(e)] = static_cast<L>(a[bi * n * n + e]);
    for (int64_t e = 0; e < n * k; ++e) r[static_cast<size_t>(e)] = static_cast<L>(b[bi * n * k + e]);
    for (int64_t c = 0; c < n; ++c) {
      int64_t p = c;
      for (int64_t i = c + 1; i < n; ++i)
        if (std::fabs(M(i, c)) > std::fabs(M(p, c))) p = i;
      if (M(p, c) == 0) fail_singular(a_aval, bi, c);
      if (p != c) {
        for (int64_t j = 0; j < n; ++j) std::swap(M(p, j), M(c, j));
        for (int64_t j = 0; j < k; ++j) std::swap(R(p, j), R(c, j));
      }
      for (int64_t i = c + 1; i < n; ++i) {
        const L f = M(i, c) / M(c, c);
        for (int64_t j = c + 1; j < n; ++j) M(i, j) -= f * M(c, j);
        for (int64_t j = 0; j < k; ++j) R(i, j) -= f * R(c, j);
      }
    }
    for (int64_t i = n; i-- > 0;)
      for (int64_t j = 0; j < k; ++j) {
        L acc = R(i, j);
        for (int64_t q = i + 1; q < n; ++q) acc -= M(i, q) * S(q, j);
        S(i, j) = acc / M(i, i);
      }
    for (int64_t e = 0; e < n * k; ++e) x[bi * n * k + e] = static_cast<T>(s[static_cast<size_t>(e)]);
  }
}

std::vector<AbstractValue> solve_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                            const Params&) {
  check_arity(self, in, 2);
  const AbstractValue &a = in[0], &b = in[1];
  const char* name = self.name.c_str();
  if (!kFloating.contains(a.dtype) || !kFloating.contains(b.dtype))
    detail::fail<DTypeError>(name, "needs floating operands (f32 or f64), got a ", a, " and b ", b,
                             ". Convert them with fx::astype (fx::solve converts integers to f64).");
  if (a.dtype != b.dtype)
    detail::fail<DTypeError>(name, "operand dtypes differ: a ", a, " and b ", b,
                             ". Convert one with fx::astype (fx::solve promotes automatically).");
  const int64_t r = a.ndim();
  if (r < 2 || a.shape[r - 1] != a.shape[r - 2])
    detail::fail<ShapeError>(name, "a must be a square matrix or a batch of them (..., n, n), got ", a,
                             ". Only square systems have a unique solution.");
  if (b.ndim() != r)
    detail::fail<ShapeError>(name, "b ", b, " must have the rank of a ", a, " (", r,
                             "): shape (..., n, k). Give a vector b a trailing dim of size 1 (fx::solve does).");
  for (int64_t i = 0; i < r - 2; ++i)
    if (a.shape[i] != b.shape[i])
      detail::fail<ShapeError>(name, "batch dims of a ", a, " and b ", b, " differ (dim ", i, ": ", a.shape[i], " vs ",
                               b.shape[i], "). They must be equal; fx::solve broadcasts them.");
  if (b.shape[r - 2] != a.shape[r - 1])
    detail::fail<ShapeError>(name, "b ", b, " has ", b.shape[r - 2], " rows but a ", a, " is ", a.shape[r - 1], "x",
                             a.shape[r - 1], ". b must be (..., n, k) with n = ", a.shape[r - 1], ".");
  return {AbstractValue{b.shape, b.dtype}};
}

template <bool Reference> void solve_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const SolveDims d = solve_dims(in[0].shape(), in[1].shape());
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Reference)
        solve_reference(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), in[0].aval(), d);
      else solve_cpu(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), in[0].aval(), d);
    }
  });
}

// ---- differentiation and batching rules ----

/// a x per matrix, for a (B..., n, n) and x (B..., n, k): a dot_general batched over B....
Tensor batched_matmul(const Tensor& a, const Tensor& x) {
  const int64_t r = a.ndim();
  std::vector<int64_t> batch(static_cast<size_t>(r - 2));
  std::iota(batch.begin(), batch.end(), 0);
  return lax::dot_general(a, x, {{r - 1}, {r - 2}}, {batch, batch});
}

/// a with its last two axes swapped (aᵀ per matrix).
Tensor matrix_transpose(const Tensor& a) {
  std::vector<int64_t> perm(static_cast<size_t>(a.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(a, perm);
}

// d(a⁻¹ b) = a⁻¹ (db - da x); an undefined tangent is zero, and both undefined give a zero dx.
void solve_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
               const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  Tensor rhs = tangents[1];
  if (tangents[0].defined()) {
    Tensor da_x = batched_matmul(tangents[0], primals_out[0]);
    rhs = rhs.defined() ? lax::sub(rhs, da_x) : lax::neg(da_x);
  }
  tangents_out = {rhs.defined() ? fluxion::bind1(self, {primals[0], rhs}, params) : Tensor()};
}

// Linear in b for a known a: x = a⁻¹ b, so ct_b = a⁻ᵀ ct_x.
void solve_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                     const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!inputs[0].defined())
    detail::fail<Error>(self.name.c_str(),
                        "internal: transpose with a linear matrix a (solve is linear in b only, "
                        "for a known a).");
  if (!cts_out[0].defined() || inputs[1].defined()) return;
  cts_in[1] = fluxion::bind1(self, {matrix_transpose(inputs[0]), cts_out[0]}, params);
}

// Shared a: the examples' right-hand sides become extra columns of one solve (one factorization
// per matrix instead of one per example): b's batch axis moves last, (n, k, m) -> (n, k*m), and
// the result is split back with the batch axis last. Mapped a: both operands batched at the front
// (an unmapped b broadcast), one batched solve.
void solve_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                 const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  if (dims[0] == kNotMapped) {
    const int64_t r = values[1].ndim() - 1;                 // the unbatched rank
    Tensor b = batching::move_axis(values[1], dims[1], r);  // (B..., n, k, m)
    const Shape split = b.shape();
    Shape folded(split.begin(), split.end() - 2);
    folded.push_back(split[r - 1] * split[r]);
    Tensor x = fluxion::bind1(self, {values[0], lax::reshape(b, folded)}, params);
    out = {lax::reshape(x, split)};
    out_dims = {r};
    return;
  }
  const int64_t size = batching::batch_size(values, dims);
  Tensor a = batching::move_axis(values[0], dims[0], 0);
  Tensor b = batching::materialize(values[1], dims[1], size, 0);
  out = fluxion::bind(self, {a, b}, params);
  out_dims = {0};
}

const Primitive& solve_p() {
  static const Primitive& p = define_primitive("linalg_solve")
                                  .shape(&solve_shape_rule)
                                  .reference(&solve_kernel<true>)
                                  .cpu(&solve_kernel<kLightKernels>)
                                  .jvp(&solve_jvp)
                                  .transpose(&solve_transpose)
                                  .batch(&solve_batch)
                                  .build();
  return p;
}

}  // namespace linalg_detail

void register_linalg(std::vector<const Primitive*>& list) { list.push_back(&linalg_detail::solve_p()); }

}  // namespace fluxion::primitives

namespace fluxion::lax {
Tensor linalg_solve(const Tensor& a, const Tensor& b) { return bind1(primitives::linalg_detail::solve_p(), {a, b}); }
}  // namespace fluxion::lax
