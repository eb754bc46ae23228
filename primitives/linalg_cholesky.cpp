// cholesky: the lower factor L of s = (a + aᵀ) / 2 (s = L Lᵀ, zeros above the diagonal) for a
// (B..., n, n) floating; L has a's shape. Symmetrizing first, like jax.numpy.linalg.cholesky, makes
// the function (and so its derivative) defined for every a, not only for symmetric ones. The CPU
// kernel is Eigen's LLT per matrix (n <= 8: backends/cpu/small_triangular.hpp); the reference is the textbook column-by-column Cholesky in long
// double, rounded once. A matrix that is not positive definite (a pivot that is not > 0, NaN
// included) throws fluxion::Error naming its batch index, or, with nan_on_failure, gets a factor of
// NaNs (JAX's behaviour).
// Rules: jvp dL = L Φ(L⁻¹ ds L⁻ᵀ), ds = (da + daᵀ) / 2, Φ = the lower triangle with the diagonal
// halved, written with triangular_solve, mul and dot_general (each differentiable and
// transposable, so hessians and reverse mode follow); batching moves the batch axis to the front.
#include <Eigen/Cholesky>
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "backends/cpu/gemm.hpp"
#include "backends/cpu/small_triangular.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/linalg_triangular.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/linalg_triangular.hpp"
#include "runtime/switches.hpp"
#include "transforms/batching.hpp"

#if FLUXION_WITH_BLAS
// LAPACK's Cholesky in OpenBLAS (column-major, Fortran calling convention); it ships no lapack.h.
extern "C" void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
extern "C" void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
#endif

namespace fluxion::primitives {
namespace triangular_detail {

void fail_not_positive_definite(const AbstractValue& a, int64_t index) {
  detail::fail<Error>("cholesky", matrix_location(a, index),
                      " is not positive definite (its Cholesky factorization met a pivot that is not > 0), so it "
                      "has no Cholesky factor. Check that it is symmetric positive definite (e.g. add a small "
                      "multiple of the identity), or pass fx::linalg::OnFailure::nan to get NaNs for it instead.");
}

/// Matrix i's factor failed: NaNs, or the Error.
template <class T> void on_failure(T* l, const AbstractValue& a_aval, int64_t i, int64_t n, bool nan) {
  if (!nan) fail_not_positive_definite(a_aval, i);
  std::fill(l + i * n * n, l + (i + 1) * n * n, std::numeric_limits<T>::quiet_NaN());
}

/// Matrices from this order on go to LAPACK's potrf when OpenBLAS is linked: single-threaded it
/// measured 1.3-4x faster than Eigen's LLT for n = 64 ... 1000 (f64, this project's machine).
inline constexpr int64_t kLapackCholesky = 64;
#if FLUXION_WITH_BLAS
inline constexpr bool kHaveLapack = true;
#else
inline constexpr bool kHaveLapack = false;
#endif

/// The lower factor of the column-major s in place through potrf (its upper part left as it was);
/// false when potrf is not linked, n exceeds its int, or s is not positive definite.
template <class T> bool lapack_cholesky(T* s, int64_t n) {
#if FLUXION_WITH_BLAS
  if (n > INT_MAX) return false;
  const int order = static_cast<int>(n);
  const char uplo = 'L';
  int info = 0;
  if constexpr (std::is_same_v<T, float>) spotrf_(&uplo, &order, s, &order, &info);
  else dpotrf_(&uplo, &order, s, &order, &info);
  return info == 0;
#else
  (void)s, (void)n;
  return false;
#endif
}

/// CPU: per matrix, s = (a + aᵀ) / 2 in T, factored by potrf (large n, OpenBLAS linked) or Eigen's
/// LLT. Both report a non-positive pivot; a NaN one they may let through, so the factor's diagonal
/// is checked too.
template <class T>
void cholesky_cpu(const T* a, T* l, const AbstractValue& a_aval, int64_t batch, int64_t n, bool nan) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  if (n == 0) return;
  if (n <= cpu::kSmallSolveMax && runtime::enabled(runtime::Switch::small_linalg)) {
    const int64_t failed = cpu::parallel_small_batch(batch, n, 0, [&](int64_t begin, int64_t end) {
      int64_t first = -1;
      cpu::cholesky_small_batch(a, l, n, begin, end, [&](int64_t i) {
        if (first < 0) first = i;
        if (nan) on_failure(l, a_aval, i, n, true);
      });
      return first;
    });
    if (failed >= 0 && !nan) fail_not_positive_definite(a_aval, failed);
    return;
  }
  const bool lapack = kHaveLapack && n >= kLapackCholesky;
  ColMajor s(n, n);
  Eigen::LLT<ColMajor, Eigen::Lower> llt(lapack ? 0 : n);
  for (int64_t i = 0; i < batch; ++i) {
    Eigen::Map<const RowMajor> am(a + i * n * n, n, n);
    s = (am + am.transpose()) * T(0.5);
    bool ok;
    if (lapack) {
      ok = lapack_cholesky(s.data(), n);
    } else {
      llt.compute(s);
      ok = llt.info() == Eigen::Success;
      if (ok) s = llt.matrixLLT();
    }
    for (int64_t c = 0; ok && c < n; ++c) ok = s(c, c) > T(0);
    if (!ok) {
      on_failure(l, a_aval, i, n, nan);
      continue;
    }
    Eigen::Map<RowMajor>(l + i * n * n, n, n) = s.template triangularView<Eigen::Lower>();
  }
}

/// Reference: L(j, j) = sqrt(s(j, j) - Σ_k<j L(j, k)²), then L(i, j) = (s(i, j) - Σ_k<j L(i, k) L(j, k)) / L(j, j)
/// for i > j, in long double; s(i, j) = (a(i, j) + a(j, i)) / 2.
template <class T>
void cholesky_reference(const T* a, T* l, const AbstractValue& a_aval, int64_t batch, int64_t n, bool nan) {
  using L = long double;
  std::vector<L> f(static_cast<size_t>(n * n));
  auto F = [&](int64_t i, int64_t j) -> L& { return f[static_cast<size_t>(i * n + j)]; };
  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* ai = a + bi * n * n;
    auto S = [&](int64_t i, int64_t j) { return (static_cast<L>(ai[i * n + j]) + static_cast<L>(ai[j * n + i])) / 2; };
    std::fill(f.begin(), f.end(), L(0));
    bool ok = true;
    for (int64_t j = 0; ok && j < n; ++j) {
      L d = S(j, j);
      for (int64_t k = 0; k < j; ++k) d -= F(j, k) * F(j, k);
      if (!(d > 0)) {
        ok = false;
        break;
      }
      F(j, j) = std::sqrt(d);
      for (int64_t i = j + 1; i < n; ++i) {
        L acc = S(i, j);
        for (int64_t k = 0; k < j; ++k) acc -= F(i, k) * F(j, k);
        F(i, j) = acc / F(j, j);
      }
    }
    if (!ok) {
      on_failure(l, a_aval, bi, n, nan);
      continue;
    }
    for (int64_t e = 0; e < n * n; ++e) l[bi * n * n + e] = static_cast<T>(f[static_cast<size_t>(e)]);
  }
}

std::vector<AbstractValue> cholesky_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                               const Params&) {
  check_arity(self, in, 1);
  const AbstractValue& a = in[0];
  const char* name = self.name.c_str();
  if (!kFloating.contains(a.dtype))
    detail::fail<DTypeError>(name, "needs a floating matrix (f32 or f64), got ", a, ". Convert it with fx::astype.");
  const int64_t r = a.ndim();
  if (r < 2 || a.shape[r - 1] != a.shape[r - 2])
    detail::fail<ShapeError>(name, "a must be a square matrix or a batch of them (..., n, n), got ", a,
                             ". Only square (symmetric positive definite) matrices have a Cholesky factor.");
  return {a};
}

template <bool Reference>
void cholesky_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const bool nan = params.as<CholeskyParams>().nan_on_failure;
  const int64_t r = in[0].ndim(), n = in[0].shape()[r - 1];
  const int64_t batch = n == 0 ? 0 : in[0].size() / (n * n);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Reference)
        cholesky_reference(in[0].data<T>(), out[0].mutable_data<T>(), in[0].aval(), batch, n, nan);
      else cholesky_cpu(in[0].data<T>(), out[0].mutable_data<T>(), in[0].aval(), batch, n, nan);
    }
  });
}

// s = L Lᵀ gives ds = dL Lᵀ + L dLᵀ, so L⁻¹ ds L⁻ᵀ = (L⁻¹ dL) + (L⁻¹ dL)ᵀ with L⁻¹ dL lower:
// L⁻¹ dL = Φ(L⁻¹ ds L⁻ᵀ), Φ keeping the strict lower triangle and half the diagonal.
void cholesky_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                  const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  if (!tangents[0].defined()) {
    tangents_out = {Tensor()};
    return;
  }
  const Tensor& l = primals_out[0];
  const Tensor& da = tangents[0];
  Tensor ds = lax::mul(lax::add(da, matrix_transpose(da)), full(Shape{}, 0.5, da.dtype()));
  Tensor left = linalg::triangular_solve(l, ds, /*left_side=*/true, /*lower=*/true);  // L⁻¹ ds
  Tensor both = linalg::triangular_solve(l, left, /*left_side=*/false, /*lower=*/true, /*transpose_a=*/true);  // ·L⁻ᵀ
  Tensor phi = lax::mul(both, triangle_mask(both, /*lower=*/true, /*with_diagonal=*/true, 0.5));
  tangents_out = {batched_matmul(l, phi)};
}

void cholesky_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                    const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = fluxion::bind(self, {batching::move_axis(values[0], dims[0], 0)}, params);
  out_dims = {0};
}

const Primitive& cholesky_p() {
  static const Primitive& p = define_primitive("cholesky")
                                  .params<CholeskyParams>()
                                  .shape(&cholesky_shape_rule)
                                  .reference(&cholesky_kernel<true>)
                                  .cpu(&cholesky_kernel<kLightKernels>)
                                  .jvp(&cholesky_jvp)
                                  .batch(&cholesky_batch)
                                  .build();
  return p;
}

}  // namespace triangular_detail
}  // namespace fluxion::primitives
