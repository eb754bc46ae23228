// The matrix exponential and its Fréchet derivative, for (B..., n, n) floating matrices.
//
// expm: CPU through Eigen's MatrixExponential (Higham 2005's Padé scaling and squaring, the
// algorithm of scipy and JAX: degree 3 to 13 by the 1-norm); reference: the Taylor series of
// a / 2^s (|a / 2^s|_1 <= 1/2, summed to below long double's rounding) squared s times, in long
// double, rounded once. Its jvp is expm_frechet(a, da).
//
// expm_frechet(a, e) = L(a, e), the top-right n x n block of expm([[a, e], [0, a]]): both kernels
// run their expm on that 2n x 2n block. Linear in e (transpose: L(aᵀ, ct), since L(a)'s adjoint is
// L(aᵀ)); its jvp in (da, de) is the top-right block of expm_frechet([[a, e], [0, a]], [[da, de],
// [0, da]]) (the block map is linear, so the chain rule gives L of the block at the block tangent).
// Each derivative order doubles the block, so every order is exact and nothing is approximated.
// Both batch by moving every batch axis to the front. Non-finite input gives a NaN matrix.
#include <unsupported/Eigen/MatrixFunctions>
#include <cmath>
#include <limits>

#include "fluxion/lax.hpp"
#include "fluxion/linalg_decompositions.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/linalg_decompositions.hpp"

namespace fluxion::primitives {
namespace expm_detail {

using decomp_detail::check_matrix;

/// The Taylor-series exponential of the n x n long double matrix x (row-major), in place.
void taylor_expm(std::vector<long double>& x, int64_t n) {
  using L = long double;
  const size_t nn = static_cast<size_t>(n * n);
  L norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    L col = 0;
    for (int64_t i = 0; i < n; ++i) col += std::fabs(x[static_cast<size_t>(i * n + j)]);
    norm = std::max(norm, col);
  }
  if (!std::isfinite(norm)) {
    std::fill(x.begin(), x.end(), std::numeric_limits<L>::quiet_NaN());
    return;
  }
  int squarings = 0;
  while (norm > 0.5L) norm /= 2, ++squarings;
  const L scale = std::ldexp(1.0L, -squarings);
  for (L& v : x) v *= scale;
  auto product = [&](const std::vector<L>& a, const std::vector<L>& b) {
    std::vector<L> c(nn, 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t q = 0; q < n; ++q)
        for (int64_t j = 0; j < n; ++j)
          c[static_cast<size_t>(i * n + j)] += a[static_cast<size_t>(i * n + q)] * b[static_cast<size_t>(q * n + j)];
    return c;
  };
  // |x^q / q!| <= 2^-q / q!: below 1e-24 after 20 terms, far under long double's 5e-20 rounding.
  std::vector<L> sum(nn, 0), term(nn, 0);
  for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i * n + i)] = term[static_cast<size_t>(i * n + i)] = 1;
  for (int q = 1; q <= 20; ++q) {
    term = product(term, x);
    for (size_t e = 0; e < nn; ++e) sum[e] += term[e] /= q;
  }
  for (int s = 0; s < squarings; ++s) sum = product(sum, sum);
  x = sum;
}

/// The 2n x 2n block [[a, e], [0, a]] (row-major) of the n x n matrices a and e.
template <class S, class T> std::vector<S> frechet_block(const T* a, const T* e, int64_t n) {
  std::vector<S> b(static_cast<size_t>(4 * n * n), S(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const S aij = static_cast<S>(a[i * n + j]);
      b[static_cast<size_t>(i * 2 * n + j)] = aij;
      b[static_cast<size_t>((i + n) * 2 * n + j + n)] = aij;
      b[static_cast<size_t>(i * 2 * n + j + n)] = static_cast<S>(e[i * n + j]);
    }
  return b;
}

/// expm (Frechet = false: in = {a}) or expm_frechet (true: in = {a, e}), each matrix on its own.
template <bool Frechet, bool Reference>
void expm_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const Shape& s = in[0].shape();
  const int64_t r = s.size(), n = s[r - 1], nn = n * n;
  const int64_t batch = n == 0 ? 0 : in[0].size() / nn;
  const int64_t size = Frechet ? 2 * n : n;  // the matrix the exponential is taken of
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using S = std::conditional_t<Reference, long double, T>;
      const T* a = in[0].data<T>();
      T* y = out[0].mutable_data<T>();
      for (int64_t i = 0; i < batch; ++i) {
        std::vector<S> m;
        if constexpr (Frechet) m = frechet_block<S>(a + i * nn, in[1].data<T>() + i * nn, n);
        else m.assign(a + i * nn, a + (i + 1) * nn);
        if constexpr (Reference) {
          taylor_expm(m, size);
        } else {
          using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
          Eigen::Map<RowMajor> mm(m.data(), size, size);
          if (!mm.allFinite()) mm.setConstant(std::numeric_limits<T>::quiet_NaN());
          else mm = RowMajor(mm).exp();
        }
        // expm: the whole matrix; expm_frechet: the top-right block of the 2n x 2n one.
        const int64_t offset = Frechet ? n : 0;
        for (int64_t row = 0; row < n; ++row)
          for (int64_t col = 0; col < n; ++col)
            y[i * nn + row * n + col] = static_cast<T>(m[static_cast<size_t>(row * size + col + offset)]);
      }
    }
  });
}

std::vector<AbstractValue> expm_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 1);
  check_matrix(self, in[0], true);
  return {in[0]};
}

std::vector<AbstractValue> frechet_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                              const Params&) {
  check_arity(self, in, 2);
  check_matrix(self, in[0], true);
  check_matrix(self, in[1], true);
  if (in[0].dtype != in[1].dtype || in[0].shape != in[1].shape)
    detail::fail<ShapeError>(self.name.c_str(), "a ", in[0], " and the direction e ", in[1],
                             " must have the same shape and dtype. Broadcast or convert e first.");
  return {in[0]};
}

void expm_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out = {tangents[0].defined() ? lax::expm_frechet(primals[0], tangents[0]) : Tensor()};
}

/// [[x, y], [z, x]] per matrix.
Tensor blocks(const Tensor& x, const Tensor& y, const Tensor& z) {
  const int64_t r = x.ndim();
  return lax::concatenate({lax::concatenate({x, y}, r - 1), lax::concatenate({z, x}, r - 1)}, r - 2);
}

void frechet_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                 const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  const Tensor &a = primals[0], &e = primals[1], &da = tangents[0], &de = tangents[1];
  if (!da.defined()) {  // linear in e
    tangents_out = {de.defined() ? fluxion::bind1(self, {a, de}, params) : Tensor()};
    return;
  }
  const Tensor zero = lax::broadcast_in_dim(scalar_like(a, 0.0), a.shape(), {});
  Tensor big = fluxion::bind1(self, {blocks(a, e, zero), blocks(da, de.defined() ? de : zero, zero)}, params);
  const int64_t r = a.ndim(), n = a.shape()[r - 1];
  std::vector<int64_t> start(static_cast<size_t>(r), 0), limit = big.shape().dims();
  start[r - 1] = n, limit[r - 2] = n;  // rows [0, n), columns [n, 2n)
  tangents_out = {lax::slice(big, start, limit)};
}

void frechet_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                       const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!inputs[0].defined())
    detail::fail<Error>(self.name.c_str(), "internal: transpose with a linear a (expm_frechet is linear in e only).");
  if (!cts_out[0].defined() || inputs[1].defined()) return;
  cts_in[1] = fluxion::bind1(self, {decomp_detail::matrix_transpose(inputs[0]), cts_out[0]}, params);
}

}  // namespace expm_detail

namespace decomp_detail {

const Primitive& expm_p() {
  static const Primitive& p = define_primitive("expm")
                                  .shape(&expm_detail::expm_shape_rule)
                                  .reference(&expm_detail::expm_kernel<false, true>)
                                  .cpu(&expm_detail::expm_kernel<false, kLightKernels>)
                                  .jvp(&expm_detail::expm_jvp)
                                  .batch(&batch_at_front)
                                  .build();
  return p;
}

const Primitive& expm_frechet_p() {
  static const Primitive& p = define_primitive("expm_frechet")
                                  .shape(&expm_detail::frechet_shape_rule)
                                  .reference(&expm_detail::expm_kernel<true, true>)
                                  .cpu(&expm_detail::expm_kernel<true, kLightKernels>)
                                  .jvp(&expm_detail::frechet_jvp)
                                  .transpose(&expm_detail::frechet_transpose)
                                  .batch(&batch_at_front)
                                  .build();
  return p;
}

}  // namespace decomp_detail
}  // namespace fluxion::primitives

namespace fluxion::lax {
Tensor expm(const Tensor& a) { return bind1(primitives::decomp_detail::expm_p(), {a}); }
Tensor expm_frechet(const Tensor& a, const Tensor& e) {
  return bind1(primitives::decomp_detail::expm_frechet_p(), {a, e});
}
}  // namespace fluxion::lax
