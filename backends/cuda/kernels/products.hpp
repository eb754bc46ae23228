/// The product kernels of the CUDA backend: dot_general and gram through Exec::gemm (cuBLAS on the
/// device, a column-major reference GEMM in the emulation), integer dot_general as one body index
/// per output element, and linalg_solve (products_solve.hpp).
///
/// dot_general runs as the one strided-batched GEMM of gemm_mapping.hpp: an operand whose layout
/// the GEMM cannot read in place is first permuted into a temporary by a strided copy body. A
/// product over k = 0 contracting elements is zeros (filled here, never a GEMM of k = 0).
#pragma once
#include <type_traits>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/gemm_mapping.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/products_solve.hpp"
#include "primitives/dot_general.hpp"
#include "primitives/gram.hpp"

namespace fluxion::cuda {
namespace product_kernels {

using primitives::dot_general_family::DotGeneralParams;

/// x with its dims permuted (output dim i = input dim perm[i]), in a fresh tensor on x's device.
template <class Exec, class T> Tensor permuted(const Tensor& x, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& dims = x.shape().dims();
  const std::vector<int64_t> stride = row_major_strides(dims);
  std::vector<int64_t> out_dims, src_strides;
  for (int64_t d : perm) {
    out_dims.push_back(dims[static_cast<size_t>(d)]);
    src_strides.push_back(stride[static_cast<size_t>(d)]);
  }
  Tensor y = fluxion::empty(AbstractValue{Shape(out_dims), x.dtype()}, x.device());
  Exec::for_each(y.size(), StridedRead<T>{x.data<T>(), y.mutable_data<T>(),
                                          make_strided_index("dot_general", out_dims, src_strides)});
  return y;
}

/// The float dot_general (f32, f64) as one GEMM into the preallocated `out`.
template <class Exec, class T>
void gemm_product(const Tensor& lhs, const Tensor& rhs, const AxisPair& contract, const AxisPair& batch, Tensor& out) {
  const DotGeneralGemm g = map_dot_general(lhs.shape().dims(), rhs.shape().dims(), contract, batch);
  if (g.empty) return;
  if (g.call.k == 0) {
    Exec::for_each(out.size(), FillBody<T>{out.mutable_data<T>(), T(0)});
    return;
  }
  const Tensor a = g.rhs_perm.empty() ? rhs : permuted<Exec, T>(rhs, g.rhs_perm);
  const Tensor b = g.lhs_perm.empty() ? lhs : permuted<Exec, T>(lhs, g.lhs_perm);
  Exec::gemm(g.call, out.dtype(), a.data<T>(), b.data<T>(), out.mutable_data<T>());
}

/// Integer dot_general: out[o] = Σ_c lhs[l.offset(o) + lc.offset(c)] rhs[r.offset(o) + rc.offset(c)]
/// in the unsigned type (products and sums wrap, as the reference's). l and r map the output's
/// [batch, lhs free, rhs free] index to each operand (stride 0 along the other's free dims).
template <class T> struct IntegerDotBody {
  const T* lhs;
  const T* rhs;
  T* out;
  StridedIndex l, r, lc, rc;
  fx_index k;
  FLUXION_HD void operator()(fx_index o) const {
    using U = std::make_unsigned_t<T>;
    const fx_index lb = l.offset(o), rb = r.offset(o);
    U acc = 0;
    for (fx_index c = 0; c < k; ++c)
      acc = static_cast<U>(
          acc + static_cast<U>(static_cast<U>(lhs[lb + lc.offset(c)]) * static_cast<U>(rhs[rb + rc.offset(c)])));
    out[o] = static_cast<T>(acc);
  }
};

inline bool contains(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e == x) return true;
  return false;
}

template <class Exec, class T>
void integer_product(const Tensor& lhs, const Tensor& rhs, const DotGeneralParams& p, Tensor& out) {
  const std::vector<int64_t>&ls = lhs.shape().dims(), &rs = rhs.shape().dims();
  const std::vector<int64_t> lst = row_major_strides(ls), rst = row_major_strides(rs);
  std::vector<int64_t> out_dims, l_steps, r_steps, con_dims, lc_steps, rc_steps;
  for (size_t i = 0; i < p.batch.first.size(); ++i) {
    const auto a = static_cast<size_t>(p.batch.first[i]), b = static_cast<size_t>(p.batch.second[i]);
    out_dims.push_back(ls[a]), l_steps.push_back(lst[a]), r_steps.push_back(rst[b]);
  }
  for (size_t d = 0; d < ls.size(); ++d)
    if (!contains(p.batch.first, int64_t(d)) && !contains(p.contract.first, int64_t(d)))
      out_dims.push_back(ls[d]), l_steps.push_back(lst[d]), r_steps.push_back(0);
  for (size_t d = 0; d < rs.size(); ++d)
    if (!contains(p.batch.second, int64_t(d)) && !contains(p.contract.second, int64_t(d)))
      out_dims.push_back(rs[d]), l_steps.push_back(0), r_steps.push_back(rst[d]);
  fx_index k = 1;
  for (size_t i = 0; i < p.contract.first.size(); ++i) {
    const auto a = static_cast<size_t>(p.contract.first[i]), b = static_cast<size_t>(p.contract.second[i]);
    con_dims.push_back(ls[a]), lc_steps.push_back(lst[a]), rc_steps.push_back(rst[b]);
    k *= ls[a];
  }
  const char* op = "dot_general";
  Exec::for_each(
      out.size(),
      IntegerDotBody<T>{lhs.data<T>(), rhs.data<T>(), out.mutable_data<T>(), make_strided_index(op, out_dims, l_steps),
                        make_strided_index(op, out_dims, r_steps), make_strided_index(op, con_dims, lc_steps),
                        make_strided_index(op, con_dims, rc_steps), k});
}

template <class Exec>
void dot_general_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<DotGeneralParams>();
  if (out[0].size() == 0) return;
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) gemm_product<Exec, T>(in[0], in[1], p.contract, p.batch, out[0]);
    else if constexpr (!std::is_same_v<T, bool>) integer_product<Exec, T>(in[0], in[1], p, out[0]);
  });
}

/// xs[n, a] = x[n, a] s[n]: the rows of x scaled by s.
template <class T> struct ScaleRowsBody {
  const T* x;
  const T* s;
  T* xs;
  fx_index d;
  FLUXION_HD void operator()(fx_index i) const { xs[i] = x[i] * s[i / d]; }
};

/// Copies the lower triangle of a d x d matrix onto its upper one: the result is exactly symmetric,
/// like the reference's. Reads only below the diagonal, writes only above it.
template <class T> struct MirrorLowerBody {
  T* m;
  fx_index d;
  FLUXION_HD void operator()(fx_index i) const {
    const fx_index a = i / d, b = i % d;
    if (b > a) m[i] = m[b * d + a];
  }
};

/// gram(x, s) = xᵀ (s x): rows scaled into a temporary, one GEMM contracting the rows, mirrored.
template <class Exec> void gram_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const Tensor &x = in[0], &s = in[1];
  const int64_t n = x.shape()[0], d = x.shape()[1];
  if (d == 0) return;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      Tensor xs = fluxion::empty(x.aval(), x.device());
      if (n > 0) Exec::for_each(xs.size(), ScaleRowsBody<T>{x.data<T>(), s.data<T>(), xs.mutable_data<T>(), d});
      gemm_product<Exec, T>(x, xs, AxisPair{{0}, {0}}, AxisPair{}, out[0]);
      Exec::for_each(out[0].size(), MirrorLowerBody<T>{out[0].mutable_data<T>(), d});
    }
  });
}

}  // namespace product_kernels

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_product_kernels() {
  runtime::set_kernel(primitives::dot_general_family::dot_general_p(), Exec::backend,
                      &product_kernels::dot_general_kernel<Exec>);
  runtime::set_kernel(primitives::gram_detail::gram_p(), Exec::backend, &product_kernels::gram_kernel<Exec>);
  runtime::set_kernel(primitives::linalg_detail::solve_p(), Exec::backend, &product_kernels::solve_kernel<Exec>);
}

}  // namespace fluxion::cuda
