// The linalg_spectral family: eigh and svd, batched over leading dims, f32 and f64.
//
// eigh(a), a (B..., n, n) -> w (B..., n) ascending, v (B..., n, n) with the eigenvectors as columns,
// of the symmetric part (a + aᵀ) / 2 (JAX's symmetrize_input default: finite differences along any
// perturbation then agree with the derivative). svd(a), a (B..., m, n), k = min(m, n) -> u (B..., m,
// k or m), s (B..., k) descending, vt (B..., k or n, n), or s alone without compute_uv. Signs and
// undetermined vectors follow primitives/linalg_spectral_conventions.hpp in every kernel. CPU:
// backends/cpu/spectral.hpp (LAPACK or Eigen); reference: backends/reference/spectral.hpp (Jacobi
// in long double). A matrix with non-finite entries gives NaN outputs; a solver that does not
// converge throws fluxion::Error naming the batch index.
//
// Derivatives (JAX's rules, written with primitives so they transpose and nest):
//   eigh: M = vᵀ sym(ȧ) v, ẇ = diag(M), v̇ = v (F ∘ M) with F_ij = 1 / (w_j - w_i) off the diagonal.
//   svd:  S = uᵀ ȧ v, ṡ = diag(S); u̇ = u (F ∘ (S s_j + Sᵀ s_i)) and v̇ = v (F ∘ (s_i S + s_j Sᵀ)) with
//         F_ij = 1 / (s_j² - s_i²), plus the parts off the span of u (m > n) or of v (n > m).
//   They need distinct eigenvalues (eigh) and distinct nonzero singular values (svd): where two
//   coincide F is infinite and the vector tangents are inf/NaN, like JAX's; w's and s's tangents stay
//   finite. full_matrices (JAX has no rule): the extra columns U₂ of u (m > n) get U̇₂ = -U₁ (ȧ V S⁻¹)ᵀ
//   U₂, the tangent that keeps u orthogonal and has no rotation inside span(U₂) (U₂ᵀ U̇₂ = 0), and
//   likewise the extra rows of vt. Span(U₂) and every function of it (U₂ U₂ᵀ) are differentiated
//   exactly; U₂'s own basis is a convention (complete_basis) whose finite differences may differ
//   from this tangent by a rotation inside the span.
#include <numeric>
#include <sstream>
#include <type_traits>

#include "backends/cpu/spectral.hpp"
#include "backends/reference/spectral.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/linalg_spectral.hpp"
#include "fluxion/ops.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/linalg.hpp"
#include "primitives/linalg_spectral.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace spectral_detail {

// ---- shape rules ----

/// DTypeError unless a is f32/f64, ShapeError unless it is a matrix or a stack of them.
void check_matrix(const Primitive& self, const AbstractValue& a, const char* wanted, const char* fix) {
  const char* name = self.name.c_str();
  if (!kFloating.contains(a.dtype))
    detail::fail<DTypeError>(name, "needs a floating matrix (f32 or f64), got ", a,
                             ". Convert it with fx::astype (fx::linalg::", name, " converts integers to f64).");
  if (a.ndim() < 2) detail::fail<ShapeError>(name, "needs ", wanted, ", got ", a, ". ", fix);
}

Shape batch_with(const AbstractValue& a, std::initializer_list<int64_t> tail) {
  Shape s(a.shape.begin(), a.shape.end() - 2);
  for (int64_t d : tail) s.push_back(d);
  return s;
}

std::vector<AbstractValue> eigh_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 1);
  const AbstractValue& a = in[0];
  check_matrix(self, a, "a square matrix or a batch of them (..., n, n)",
               "Symmetric eigenproblems are square; use fx::linalg::svd for rectangular matrices.");
  const int64_t r = a.ndim(), n = a.shape[r - 1];
  if (a.shape[r - 2] != n)
    detail::fail<ShapeError>("eigh", "needs a square matrix or a batch of them (..., n, n), got ", a,
                             ". Symmetric eigenproblems are square; use fx::linalg::svd for rectangular matrices.");
  return {AbstractValue{batch_with(a, {n}), a.dtype}, AbstractValue{a.shape, a.dtype}};
}

std::vector<AbstractValue> svd_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  check_arity(self, in, 1);
  const AbstractValue& a = in[0];
  check_matrix(self, a, "a matrix or a batch of them (..., m, n)", "Give a vector a trailing dim of size 1.");
  const SvdParams& p = params.as<SvdParams>();
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape[a.ndim() - 1], k = std::min(m, n);
  AbstractValue s{batch_with(a, {k}), a.dtype};
  if (!p.compute_uv) return {s};
  const int64_t u_cols = p.full_matrices ? m : k, vt_rows = p.full_matrices ? n : k;
  return {AbstractValue{batch_with(a, {m, u_cols}), a.dtype}, s, AbstractValue{batch_with(a, {vt_rows, n}), a.dtype}};
}

// ---- kernels ----

[[noreturn]] void fail_no_convergence(const char* op, const AbstractValue& a, int64_t index) {
  detail::fail<Error>(op, "the solver did not converge on ", linalg_detail::matrix_location(a, index),
                      ". Check it for entries of wildly different magnitudes, or rescale it.");
}

int64_t batch_count(const Shape& s) {
  int64_t b = 1;
  for (int64_t i = 0; i + 2 < s.size(); ++i) b *= s[i];
  return b;
}

template <bool Reference> void eigh_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const Tensor& a = in[0];
  const int64_t n = a.shape()[a.ndim() - 1], batch = batch_count(a.shape());
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = a.data<T>();
      T *w = out[0].mutable_data<T>(), *v = out[1].mutable_data<T>();
      int64_t failed = -1;
      if constexpr (Reference) {
        for (int64_t b = 0; b < batch && failed < 0; ++b)
          if (!reference::spectral::eigh_one(x + b * n * n, n, w + b * n, v + b * n * n)) failed = b;
      } else {
        failed = cpu::spectral::eigh(x, batch, n, w, v);
      }
      if (failed >= 0) fail_no_convergence("eigh", a.aval(), failed);
    }
  });
}

template <bool Reference>
void svd_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const SvdParams& p = params.as<SvdParams>();
  const Tensor& a = in[0];
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape()[a.ndim() - 1], k = std::min(m, n);
  const int64_t batch = batch_count(a.shape());
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = a.data<T>();
      spectral_conventions::SvdOut<T> o{nullptr, nullptr, nullptr, p.full_matrices ? m : k, p.full_matrices ? n : k};
      if (p.compute_uv)
        o = {out[1].mutable_data<T>(), out[0].mutable_data<T>(), out[2].mutable_data<T>(), o.u_cols, o.vt_rows};
      else o.s = out[0].mutable_data<T>();
      int64_t failed = -1;
      if constexpr (Reference) {
        for (int64_t b = 0; b < batch && failed < 0; ++b) {
          spectral_conventions::SvdOut<T> ob = o;
          ob.s += b * k;
          if (o.u) ob.u += b * m * o.u_cols, ob.vt += b * o.vt_rows * n;
          if (!reference::spectral::svd_one(x + b * m * n, m, n, ob)) failed = b;
        }
      } else {
        failed = cpu::spectral::svd(x, batch, m, n, o);
      }
      if (failed >= 0) fail_no_convergence("svd", a.aval(), failed);
    }
  });
}

// ---- differentiation and batching rules ----

/// x with its last two axes swapped.
Tensor mT(const Tensor& x) {
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(x, perm);
}

/// a b per matrix, for a (B..., p, q) and b (B..., q, r).
Tensor mm(const Tensor& a, const Tensor& b) {
  const int64_t r = a.ndim();
  std::vector<int64_t> batch(static_cast<size_t>(r - 2));
  std::iota(batch.begin(), batch.end(), 0);
  return lax::dot_general(a, b, {{r - 1}, {r - 2}}, {batch, batch});
}

/// A vector (B..., k) broadcast to `shape` (B..., p, k) along rows (entry [i, j] = x_j, `along_rows`)
/// or to (B..., k, p) along columns (entry [i, j] = x_i).
Tensor spread(const Tensor& x, const Shape& shape, bool along_rows) {
  std::vector<int64_t> dims(static_cast<size_t>(x.ndim()));
  std::iota(dims.begin(), dims.end(), 0);
  if (!along_rows) dims.back() = x.ndim() - 1;
  else dims.back() = x.ndim();
  return lax::broadcast_in_dim(x, shape, dims);
}

/// The identity broadcast to the shape of the square stack m (B..., k, k).
Tensor eye_like(const Tensor& m) {
  const int64_t r = m.ndim();
  return lax::broadcast_in_dim(eye(m.shape()[r - 1], m.dtype()), m.shape(), {r - 2, r - 1});
}

Tensor diagonal(const Tensor& m) { return lax::reduce_sum(lax::mul(m, eye_like(m)), {m.ndim() - 1}); }

/// F_ij = 1 / gaps_ij off the diagonal and 0 on it (the diagonal of gaps is ignored).
Tensor inverse_gaps(const Tensor& gaps) {
  const Tensor e = eye_like(gaps);
  return lax::sub(lax::div(scalar_like(gaps, 1.0), lax::add(gaps, e)), e);
}

/// Columns [lo, hi) of the stack x.
Tensor columns(const Tensor& x, int64_t lo, int64_t hi) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape().dims();
  start.back() = lo, limit.back() = hi;
  return lax::slice(x, start, limit);
}

void eigh_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(2, Tensor());
  if (!tangents[0].defined()) return;
  const Tensor &w = primals_out[0], &v = primals_out[1], &da = tangents[0];
  const Tensor sym = lax::mul(lax::add(da, mT(da)), scalar_like(da, 0.5));
  const Tensor m = mm(mT(v), mm(sym, v));
  const Tensor gaps = lax::sub(spread(w, m.shape(), true), spread(w, m.shape(), false));  // w_j - w_i
  tangents_out = {diagonal(m), mm(v, lax::mul(inverse_gaps(gaps), m))};
}

/// The tangent of U = [U₁ U₂] for the extra columns U₂ (see the file comment): -U₁ gᵀ U₂, with
/// g = ȧ V₁ S⁻¹ (m x k). Used for vt's extra rows with the roles of u and v exchanged.
Tensor complement_tangent(const Tensor& u1, const Tensor& g, const Tensor& u2) {
  return lax::neg(mm(u1, mm(mT(g), u2)));
}

void svd_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const SvdParams& p = params.as<SvdParams>();
  // The thin factors: this svd's outputs, or, when only s was asked for, a thin svd whose s is the
  // primal output (one decomposition either way).
  const std::vector<Tensor> thin =
      fluxion::bind(self, primals, p.compute_uv ? params : static_cast<const Params&>(SvdParams(false, true)));
  primals_out = p.compute_uv ? thin : std::vector<Tensor>{thin[1]};
  tangents_out.assign(primals_out.size(), Tensor());
  if (!tangents[0].defined()) return;
  const Tensor& da = tangents[0];
  const int64_t r = da.ndim(), m = da.shape()[r - 2], n = da.shape()[r - 1], k = std::min(m, n);
  const Tensor u1 = p.full_matrices ? columns(thin[0], 0, k) : thin[0];
  const Tensor v1 = p.full_matrices ? columns(mT(thin[2]), 0, k) : mT(thin[2]);
  const Tensor& s = thin[1];
  const Tensor ds_mat = mm(mT(u1), mm(da, v1));  // S = U₁ᵀ ȧ V₁
  const Tensor ds = diagonal(ds_mat);
  if (!p.compute_uv) {
    tangents_out = {ds};
    return;
  }
  const Shape& kk = ds_mat.shape();
  const Tensor sj = spread(s, kk, true), si = spread(s, kk, false);
  const Tensor f = inverse_gaps(lax::mul(lax::add(sj, si), lax::sub(sj, si)));  // 1 / (s_j² - s_i²)
  const Tensor s_sj = lax::mul(ds_mat, sj), si_s = lax::mul(si, ds_mat);
  Tensor du = mm(u1, lax::mul(f, lax::add(s_sj, mT(s_sj))));
  Tensor dv = mm(v1, lax::mul(f, lax::add(si_s, mT(si_s))));
  if (m > k) {  // the part of ȧ V₁ S⁻¹ off span(U₁)
    const Tensor g = lax::div(mm(da, v1), spread(s, batch_with(da.aval(), {m, k}), true));
    du = lax::add(du, lax::sub(g, mm(u1, mm(mT(u1), g))));
    if (p.full_matrices) du = lax::concatenate({du, complement_tangent(u1, g, columns(thin[0], k, m))}, r - 1);
  }
  if (n > k) {  // the part of ȧᵀ U₁ S⁻¹ off span(V₁)
    const Tensor h = lax::div(mm(mT(da), u1), spread(s, batch_with(da.aval(), {n, k}), true));
    dv = lax::add(dv, lax::sub(h, mm(v1, mm(mT(v1), h))));
    if (p.full_matrices) dv = lax::concatenate({dv, complement_tangent(v1, h, columns(mT(thin[2]), k, n))}, r - 1);
  }
  tangents_out = {du, ds, mT(dv)};
}

// Every matrix is independent: the batch axis moves to the front and joins the batch dims.
void spectral_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                    const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out = fluxion::bind(self, {batching::move_axis(values[0], dims[0], 0)}, params);
  out_dims.assign(out.size(), 0);
}

const Primitive& eigh_p() {
  static const Primitive& p = define_primitive("eigh")
                                  .shape(&eigh_shape_rule)
                                  .reference(&eigh_kernel<true>)
                                  .cpu(&eigh_kernel<kLightKernels>)
                                  .jvp(&eigh_jvp)
                                  .batch(&spectral_batch)
                                  .build();
  return p;
}

const Primitive& svd_p() {
  static const Primitive& p = define_primitive("svd")
                                  .params<SvdParams>()
                                  .shape(&svd_shape_rule)
                                  .reference(&svd_kernel<true>)
                                  .cpu(&svd_kernel<kLightKernels>)
                                  .jvp(&svd_jvp)
                                  .batch(&spectral_batch)
                                  .build();
  return p;
}

/// a as a floating tensor: integers and bools become f64, like jnp.linalg.
Tensor floating(const Tensor& a) { return is_floating(a.dtype()) ? a : astype(a, f64); }

}  // namespace spectral_detail

void register_linalg_spectral(std::vector<const Primitive*>& list) {
  list.push_back(&spectral_detail::eigh_p());
  list.push_back(&spectral_detail::svd_p());
}

}  // namespace fluxion::primitives

namespace fluxion::linalg {

std::pair<Tensor, Tensor> eigh(const Tensor& a) {
  std::vector<Tensor> out = bind(primitives::spectral_detail::eigh_p(), {primitives::spectral_detail::floating(a)});
  return {out[0], out[1]};
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices, bool compute_uv) {
  using primitives::spectral_detail::SvdParams;
  std::vector<Tensor> out = bind(primitives::spectral_detail::svd_p(), {primitives::spectral_detail::floating(a)},
                                 SvdParams(full_matrices, compute_uv));
  if (!compute_uv) return {Tensor(), out[0], Tensor()};
  return {out[0], out[1], out[2]};
}

Tensor svdvals(const Tensor& a) { return std::get<1>(svd(a, false, false)); }

}  // namespace fluxion::linalg
