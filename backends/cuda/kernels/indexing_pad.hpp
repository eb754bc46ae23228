/// pad and iota kernels of the CUDA backend: outputs that are not a plain relabelling of an operand.
/// pad reads its operand through a strided map with per-dim bounds and interior checks (negative
/// low/high crop); iota counts along one dim.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "fluxion/tensor.hpp"
#include "primitives/indexing.hpp"

namespace fluxion::cuda {

/// Where pad's output flat index i reads: per output dim d, position p = c - low[d] comes from the
/// operand when p >= 0, p is a multiple of step[d] (interior + 1) and p / step[d] < in_dims[d].
struct PadIndex {
  int rank = 0;
  fx_index out_dims[kMaxKernelRank] = {};
  fx_index low[kMaxKernelRank] = {};
  fx_index step[kMaxKernelRank] = {};
  fx_index in_dims[kMaxKernelRank] = {};
  fx_index in_strides[kMaxKernelRank] = {};

  /// The operand offset that output index i reads, or -1 where i is padding.
  FLUXION_HD fx_index source(fx_index i) const {
    fx_index off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const fx_index p = i % out_dims[d] - low[d];
      i /= out_dims[d];
      if (p < 0 || p % step[d] != 0 || p / step[d] >= in_dims[d]) return -1;
      off += p / step[d] * in_strides[d];
    }
    return off;
  }
};

/// out[i] = operand element or the padding value (read on the device: no round trip).
template <class T> struct PadBody {
  const T* in;
  const T* value;
  T* out;
  PadIndex map;
  FLUXION_HD void operator()(fx_index i) const {
    const fx_index s = map.source(i);
    out[i] = s < 0 ? *value : in[s];
  }
};

/// out[i] = the coordinate of i along the counted dim: (i / inner) % dim.
template <class T> struct IotaBody {
  T* out;
  fx_index dim, inner;
  FLUXION_HD void operator()(fx_index i) const { out[i] = static_cast<T>(i / inner % dim); }
};

namespace indexing_detail {

/// PadIndex of a non-empty output. An unpadded dim (low = high = interior = 0) joins the dim
/// before it when that one has no interior padding: the pair acts as one dim of the product's size,
/// with low scaled by the joined size. NotImplementedError beyond kMaxKernelRank dims left.
inline PadIndex make_pad_index(const Shape& x, const Shape& y, const primitives::indexing_family::PadParams& p) {
  std::vector<int64_t> out_dims, low, step, in_dims, in_strides;
  const std::vector<int64_t> xs = row_major_strides(x.dims());
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t n = x[static_cast<int64_t>(d)];
    const bool unpadded = p.low[d] == 0 && p.high[d] == 0 && p.interior[d] == 0;
    if (unpadded && !out_dims.empty() && step.back() == 1) {
      out_dims.back() *= n;
      in_dims.back() *= n;
      low.back() *= n;
      in_strides.back() = xs[d];
      continue;
    }
    out_dims.push_back(y[static_cast<int64_t>(d)]);
    low.push_back(p.low[d]);
    step.push_back(p.interior[d] + 1);
    in_dims.push_back(n);
    in_strides.push_back(xs[d]);
  }
  if (out_dims.size() > static_cast<size_t>(kMaxKernelRank))
    detail::fail<NotImplementedError>("pad", "the CUDA kernels index at most ", kMaxKernelRank,
                                      " padded dims, this padding has ", out_dims.size(),
                                      ". Pad fewer dims at once (pad twice).");
  PadIndex r;
  r.rank = static_cast<int>(out_dims.size());
  for (size_t d = 0; d < out_dims.size(); ++d) {
    r.out_dims[d] = out_dims[d];
    r.low[d] = low[d];
    r.step[d] = step[d];
    r.in_dims[d] = in_dims[d];
    r.in_strides[d] = in_strides[d];
  }
  return r;
}

}  // namespace indexing_detail

/// Input 0 the operand, input 1 the rank-0 padding value.
template <class Exec> void pad_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const Tensor &x = in[0], &y = out[0];
  if (y.size() == 0) return;
  const PadIndex map =
      indexing_detail::make_pad_index(x.shape(), y.shape(), params.as<primitives::indexing_family::PadParams>());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Exec::for_each(y.size(), PadBody<T>{x.data<T>(), in[1].data<T>(), y.mutable_data<T>(), map});
  });
}

/// Counts along params.dimension; numeric dtypes only (the shape rule refuses bool).
template <class Exec> void iota_kernel(const std::vector<Tensor>&, const Params& params, std::vector<Tensor>& out) {
  const Tensor& y = out[0];
  if (y.size() == 0) return;
  const int64_t k = params.as<primitives::indexing_family::IotaParams>().dimension;
  int64_t inner = 1;
  for (int64_t d = k + 1; d < y.ndim(); ++d) inner *= y.shape()[d];
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>)
      detail::fail<DTypeError>("iota", "cannot count in bool. Make an integer or floating iota and convert it.");
    else Exec::for_each(y.size(), IotaBody<T>{y.mutable_data<T>(), y.shape()[k], inner});
  });
}

}  // namespace fluxion::cuda
