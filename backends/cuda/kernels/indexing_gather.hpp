/// gather and scatter_add kernels of the CUDA backend. Both see the operand as [outer, n, inner]
/// (n the indexed axis) and the gathered side as [outer, m, inner] (m the number of indices); the
/// indices are read on the device and clamped into [0, n - 1] like the reference (XLA's rule).
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/indexing_copy.hpp"
#include "fluxion/tensor.hpp"
#include "primitives/indexing.hpp"

namespace fluxion::cuda {

/// The operand offset that gathered index i (of [outer, m, inner]) corresponds to.
template <class I> struct AxisTake {
  const I* indices;
  fx_index m, n, inner;
  FLUXION_HD fx_index operator()(fx_index i) const {
    const fx_index c = i % inner, r = i / inner;
    fx_index k = static_cast<fx_index>(indices[r % m]);
    k = k < 0 ? 0 : (k >= n ? n - 1 : k);
    return (r / m * n + k) * inner + c;
  }
};

/// out[i] = x[take(i)].
template <class T, class I> struct GatherBody {
  const T* x;
  T* out;
  AxisTake<I> take;
  FLUXION_HD void operator()(fx_index i) const { out[i] = x[take(i)]; }
};

/// out[take(i)] += updates[i], atomically: duplicate indices add up in any order.
template <class T, class I> struct ScatterAddBody {
  const T* updates;
  T* out;
  AxisTake<I> take;
  FLUXION_HD void operator()(fx_index i) const { fx_atomic_add(out + take(i), updates[i]); }
};

namespace indexing_detail {

/// Calls f(TypeTag<I>{}) with I the C++ type of integer index dtype `d` (i32 or i64).
template <class F> void dispatch_index(const char* op, DType d, F&& f) {
  if (d == i32) f(TypeTag<int32_t>{});
  else if (d == i64) f(TypeTag<int64_t>{});
  else detail::fail<DTypeError>(op, "indices have dtype ", d, "; indices must be i32 or i64. Convert with fx::astype.");
}

/// The AxisTake of `operand` indexed along `axis` by `indices`.
template <class I> AxisTake<I> axis_take(const Tensor& operand, const Tensor& indices, int64_t axis) {
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < operand.ndim(); ++d) inner *= operand.shape()[d];
  return AxisTake<I>{indices.data<I>(), indices.size(), operand.shape()[axis], inner};
}

}  // namespace indexing_detail

/// Inputs: x, indices. Output: x.shape[:axis] ++ indices.shape ++ x.shape[axis+1:].
template <class Exec>
void gather_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const Tensor &x = in[0], &indices = in[1], &y = out[0];
  if (y.size() == 0) return;
  const int64_t axis = params.as<primitives::indexing_family::AxisParams>().axis;
  indexing_detail::dispatch_index("gather", indices.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    const AxisTake<I> take = indexing_detail::axis_take<I>(x, indices, axis);
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Exec::for_each(y.size(), GatherBody<T, I>{x.data<T>(), y.mutable_data<T>(), take});
    });
  });
}

/// Inputs: operand, indices, updates (gather's output shape). The operand copied, then every update
/// added at the position gather would read it from.
template <class Exec>
void scatter_add_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const Tensor &operand = in[0], &indices = in[1], &updates = in[2], &y = out[0];
  indexing_detail::copy_flat<Exec>("scatter_add", operand, y);
  if (updates.size() == 0) return;
  const int64_t axis = params.as<primitives::indexing_family::AxisParams>().axis;
  indexing_detail::dispatch_index("scatter_add", indices.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    const AxisTake<I> take = indexing_detail::axis_take<I>(operand, indices, axis);
    dispatch_dtype(operand.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Exec::for_each(updates.size(), ScatterAddBody<T, I>{updates.data<T>(), y.mutable_data<T>(), take});
    });
  });
}

}  // namespace fluxion::cuda
