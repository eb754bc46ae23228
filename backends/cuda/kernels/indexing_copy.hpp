/// The strided-copy kernels of the CUDA backend: every data movement that is a fixed map between
/// output and operand positions. StridedRead (out[i] = in[map.offset(i)]) covers reshape, squeeze,
/// expand_dims (one contiguous dim), broadcast_in_dim (stride 0), transpose (permuted strides), slice
/// and dynamic_slice (base + strides * step); StridedWrite (out[map.offset(i)] = in[i]) writes an
/// operand into a window of its output: concatenate's pieces, dynamic_update_slice's update.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "fluxion/tensor.hpp"
#include "primitives/indexing.hpp"
#include "primitives/shape.hpp"

namespace fluxion::cuda {

namespace indexing_detail {

namespace sf = primitives::shape_family;
namespace ix = primitives::indexing_family;

/// Fills `out` (shape `dims`) by reading `in` at base + coordinates * strides.
template <class Exec> void strided_read(const char* op, const Tensor& in, const Tensor& out,
                                        const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                                        int64_t base = 0) {
  if (out.size() == 0) return;
  const StridedIndex map = make_strided_index(op, dims, strides, base);
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Exec::for_each(out.size(), StridedRead<T>{in.data<T>(), out.mutable_data<T>(), map});
  });
}

/// Writes all of `in` into `out` at base + in's coordinates * strides (strides of `out`).
template <class Exec> void strided_write(const char* op, const Tensor& in, const Tensor& out,
                                         const std::vector<int64_t>& strides, int64_t base) {
  if (in.size() == 0) return;
  const StridedIndex map = make_strided_index(op, in.shape().dims(), strides, base);
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Exec::for_each(in.size(), StridedWrite<T>{in.data<T>(), out.mutable_data<T>(), map});
  });
}

/// out = in, element for element (same size; shapes may differ).
template <class Exec> void copy_flat(const char* op, const Tensor& in, const Tensor& out) {
  strided_read<Exec>(op, in, out, {out.size()}, {1});
}

/// The value of a rank-0 i32 or i64 index tensor (on the device: read back on the host).
template <class Exec> int64_t read_index(const Tensor& t) {
  if (t.dtype() == i32) {
    int32_t v = 0;
    Exec::to_host(&v, t.data<int32_t>(), sizeof v, t.device());
    return v;
  }
  int64_t v = 0;
  Exec::to_host(&v, t.data<int64_t>(), sizeof v, t.device());
  return v;
}

/// The flat offset of a dynamic window's first element: each start read from inputs
/// [first, first + rank) and clamped to [0, dim - size] (XLA's rule, as the reference does).
template <class Exec>
int64_t window_base(const std::vector<Tensor>& in, size_t first, const Shape& operand, const Shape& window) {
  const std::vector<int64_t> strides = row_major_strides(operand.dims());
  int64_t base = 0;
  for (int64_t d = 0; d < operand.size(); ++d) {
    const int64_t s = read_index<Exec>(in[first + static_cast<size_t>(d)]);
    base += std::min(std::max<int64_t>(s, 0), operand[d] - window[d]) * strides[static_cast<size_t>(d)];
  }
  return base;
}

}  // namespace indexing_detail

/// reshape, squeeze, expand_dims: views when evaluated eagerly; as kernels, row-major copies.
template <class Exec> void copy_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  indexing_detail::copy_flat<Exec>("copy", in[0], out[0]);
}

/// Operand dim k feeds output dim broadcast_dimensions[k] (stride 0 where the operand has size 1);
/// every other output dim reads with stride 0.
template <class Exec>
void broadcast_in_dim_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& bd = params.as<indexing_detail::sf::BroadcastInDimParams>().broadcast_dimensions;
  const Shape& x = in[0].shape();
  const std::vector<int64_t> xs = row_major_strides(x.dims());
  std::vector<int64_t> strides(static_cast<size_t>(out[0].ndim()), 0);
  for (size_t k = 0; k < bd.size(); ++k)
    if (x[static_cast<int64_t>(k)] != 1) strides[static_cast<size_t>(bd[k])] = xs[k];
  indexing_detail::strided_read<Exec>("broadcast_in_dim", in[0], out[0], out[0].shape().dims(), strides);
}

/// Output dim k walks operand dim permutation[k].
template <class Exec>
void transpose_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& perm = params.as<indexing_detail::sf::TransposeParams>().permutation;
  const std::vector<int64_t> xs = row_major_strides(in[0].shape().dims());
  std::vector<int64_t> strides;
  for (int64_t p : perm) strides.push_back(xs[static_cast<size_t>(p)]);
  indexing_detail::strided_read<Exec>("transpose", in[0], out[0], out[0].shape().dims(), strides);
}

/// Output coordinate c of dim d reads operand coordinate start[d] + c * strides[d].
template <class Exec> void slice_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<indexing_detail::ix::SliceParams>();
  const std::vector<int64_t> xs = row_major_strides(in[0].shape().dims());
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    strides.push_back(xs[d] * p.strides[d]);
    base += p.start_indices[d] * xs[d];
  }
  indexing_detail::strided_read<Exec>("slice", in[0], out[0], out[0].shape().dims(), strides, base);
}

/// The window of slice_sizes at the clamped starts (inputs 1..rank), read like a slice of stride 1.
template <class Exec>
void dynamic_slice_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  if (out[0].size() == 0) return;  // no element to read: the starts are not even read back
  const int64_t base = indexing_detail::window_base<Exec>(in, 1, in[0].shape(), out[0].shape());
  indexing_detail::strided_read<Exec>("dynamic_slice", in[0], out[0], out[0].shape().dims(),
                                      row_major_strides(in[0].shape().dims()), base);
}

/// The operand copied, then the update (input 1) written over the window at the clamped starts
/// (inputs 2..rank+1). The two launches are ordered (one stream), so the update wins.
template <class Exec>
void dynamic_update_slice_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  indexing_detail::copy_flat<Exec>("dynamic_update_slice", in[0], out[0]);
  if (in[1].size() == 0) return;
  const int64_t base = indexing_detail::window_base<Exec>(in, 2, in[0].shape(), in[1].shape());
  indexing_detail::strided_write<Exec>("dynamic_update_slice", in[1], out[0], row_major_strides(out[0].shape().dims()),
                                       base);
}

/// Each operand written into its slab of the output along `dimension`, one launch per operand.
template <class Exec>
void concatenate_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const int64_t k = params.as<indexing_detail::ix::ConcatenateParams>().dimension;
  const std::vector<int64_t> os = row_major_strides(out[0].shape().dims());
  int64_t offset = 0;
  for (const Tensor& x : in) {
    indexing_detail::strided_write<Exec>("concatenate", x, out[0], os, offset * os[static_cast<size_t>(k)]);
    offset += x.shape()[k];
  }
}

}  // namespace fluxion::cuda
