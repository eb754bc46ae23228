/// The random family's kernels in the CUDA kernel table, all device bodies (random numbers are
/// made where they are used, never staged through the host):
///  - threefry2x32: one body index per counter pair, the shared block function
///    (primitives/random.hpp), so host and device give the same words;
///  - erf_inv: the elementwise unary kernel over the shared XLA polynomial;
///  - fma: one body index per element, the device's fused multiply-add;
///  - permute_by_keys: one body index per element, which counts the elements of its row that sort
///    before it (smaller key, or equal key and smaller index) and writes itself at that rank.
///    O(n) work per element, n the row length: meant for the rows of jax.random.permutation.
#pragma once
#include <type_traits>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/elementwise.hpp"
#include "primitives/random.hpp"

namespace fluxion::cuda {
namespace random_kernels {

/// s*: 1, or 0 for a broadcast rank-0 operand.
struct ThreefryBody {
  const int64_t* k0;
  const int64_t* k1;
  const int64_t* x0;
  const int64_t* x1;
  fx_index s0, s1, s2, s3;
  int64_t* y0;
  int64_t* y1;
  FLUXION_HD static unsigned low_word(int64_t v) { return static_cast<unsigned>(v & 0xFFFFFFFFll); }
  FLUXION_HD void operator()(fx_index i) const {
    unsigned a, b;
    primitives::random_detail::threefry2x32_block(low_word(k0[i * s0]), low_word(k1[i * s1]), low_word(x0[i * s2]),
                                                  low_word(x1[i * s3]), a, b);
    y0[i] = a;
    y1[i] = b;
  }
};

template <class Exec> void threefry_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  auto stride = [&](size_t k) -> fx_index { return in[k].ndim() == 0 ? 0 : 1; };
  Exec::for_each(out[0].size(), ThreefryBody{in[0].data<int64_t>(), in[1].data<int64_t>(), in[2].data<int64_t>(),
                                             in[3].data<int64_t>(), stride(0), stride(1), stride(2), stride(3),
                                             out[0].mutable_data<int64_t>(), out[1].mutable_data<int64_t>()});
}

/// erf_inv's scalar functor for the elementwise kernel.
struct ErfInvFunctor {
  template <class T> FLUXION_HD static T apply(T x) { return primitives::random_detail::erf_inv_scalar(x); }
};

/// s*: 1, or 0 for a broadcast rank-0 operand.
template <class T> struct FmaBody {
  const T* a;
  const T* b;
  const T* c;
  fx_index sa, sb, sc;
  T* y;
  FLUXION_HD void operator()(fx_index i) const {
    y[i] = primitives::random_detail::fused_multiply_add(a[i * sa], b[i * sb], c[i * sc]);
  }
};

template <class Exec> void fma_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  auto stride = [&](size_t k) -> fx_index { return in[k].ndim() == 0 ? 0 : 1; };
  dispatch_dtype(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>)
      Exec::for_each(out[0].size(), FmaBody<T>{in[0].data<T>(), in[1].data<T>(), in[2].data<T>(), stride(0), stride(1),
                                               stride(2), out[0].mutable_data<T>()});
  });
}

template <class T> struct PermuteByKeysBody {
  const int64_t* keys;
  const T* values;
  T* out;
  fx_index n;  // row length
  FLUXION_HD void operator()(fx_index i) const {
    const fx_index row = i / n, j = i % n;
    const int64_t* k = keys + row * n;
    fx_index rank = 0;
    for (fx_index q = 0; q < n; ++q) rank += (k[q] < k[j] || (k[q] == k[j] && q < j)) ? 1 : 0;
    out[row * n + rank] = values[i];
  }
};

template <class Exec> void permute_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const fx_index n = in[1].shape()[in[1].ndim() - 1];
  if (out[0].size() == 0) return;
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Exec::for_each(out[0].size(),
                   PermuteByKeysBody<T>{in[0].data<int64_t>(), in[1].data<T>(), out[0].mutable_data<T>(), n});
  });
}

}  // namespace random_kernels

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_random_kernels() {
  namespace r = primitives::random_detail;
  runtime::set_kernel(r::threefry2x32_p(), Exec::backend, &random_kernels::threefry_kernel<Exec>);
  elementwise_detail::set_unary<Exec, random_kernels::ErfInvFunctor, kFloating.bits>(r::erf_inv_p());
  runtime::set_kernel(r::fma_p(), Exec::backend, &random_kernels::fma_kernel<Exec>);
  runtime::set_kernel(r::permute_by_keys_p(), Exec::backend, &random_kernels::permute_kernel<Exec>);
}

}  // namespace fluxion::cuda
