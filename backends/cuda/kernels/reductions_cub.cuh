/// CudaExec's fast path of reduce_sum and reduce_prod (nvcc only, included by reductions.hpp): a
/// reduction whose outputs read contiguous rows of the input (the reduced axes trailing, or every
/// axis) runs as one CUB call, cub::DeviceReduce for one row and cub::DeviceSegmentedReduce for
/// several, over the same accumulators as the portable bodies (SumAcc, ProdAcc): each element
/// becomes an accumulator, accumulators merge. CUB merges in an order of its choosing, so only
/// sums and products come here (their merges are commutative: the sign of a zero sum does not
/// depend on the order); max and min keep the first of equal values (-0 before +0) and stay on
/// the chunked bodies, which merge in index order.
#pragma once
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "backends/cuda/context.cuh"
#include "backends/cuda/kernels/reductions_accumulators.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::cuda::reduction_kernels {

/// Element x as the accumulator of the one-element reduction {x}.
template <class T, template <class> class Acc> struct ToAcc {
  T identity;
  __host__ __device__ Acc<T> operator()(T x) const {
    Acc<T> a(identity);
    a.add(x);
    return a;
  }
};

template <class T, template <class> class Acc> struct MergeAcc {
  __host__ __device__ Acc<T> operator()(const Acc<T>& a, const Acc<T>& b) const {
    Acc<T> r = a;
    r.merge(b);
    return r;
  }
};

/// Offset of row o: o * count.
struct RowStart {
  fx_index count;
  __host__ __device__ fx_index operator()(fx_index o) const { return o * count; }
};

template <class T, template <class> class Acc> struct ResultBody {
  const Acc<T>* acc;
  T* out;
  __host__ __device__ void operator()(fx_index i) const { out[i] = acc[i].result(); }
};

/// True when output o reduces the contiguous elements [o * count, (o + 1) * count).
inline bool contiguous_rows(const ReduceIndex& ix) {
  const bool rows_dense = ix.reduced.rank == 0 || (ix.reduced.rank == 1 && ix.reduced.strides[0] == 1);
  const bool rows_packed = ix.kept.rank == 0 || (ix.kept.rank == 1 && ix.kept.strides[0] == ix.count);
  return rows_dense && rows_packed && ix.kept.base == 0;
}

/// out[o] = the reduction of in[o * count, (o + 1) * count) for o < rows (count >= 1), by CUB on
/// the device's stream (CudaExec's, which also orders the scratch tensors' frees).
template <class Exec, class T, template <class> class Acc>
void cub_reduce_rows(const T* in, T* out, fx_index rows, fx_index count, T identity, Device device) {
  auto elements = thrust::make_transform_iterator(in, ToAcc<T, Acc>{identity});
  const Acc<T> init(identity);
  // At least one word: a null temporary storage would make CUB's second call a size query again.
  auto scratch_of = [&](size_t bytes) {
    return fluxion::empty(AbstractValue{Shape{static_cast<int64_t>(bytes / 8 + 1)}, i64}, device);
  };
  Tensor acc = scratch_of(static_cast<size_t>(rows) * sizeof(Acc<T>));
  Acc<T>* acc_ptr = reinterpret_cast<Acc<T>*>(acc.mutable_data<int64_t>());
  const cudaStream_t on = stream(device.index);
  size_t temp_bytes = 0;
  if (rows == 1) {
    check(cub::DeviceReduce::Reduce(nullptr, temp_bytes, elements, acc_ptr, count, MergeAcc<T, Acc>{}, init, on),
          "reduce", "cub::DeviceReduce::Reduce");
    Tensor temp = scratch_of(temp_bytes);
    check(cub::DeviceReduce::Reduce(temp.mutable_data<int64_t>(), temp_bytes, elements, acc_ptr, count,
                                    MergeAcc<T, Acc>{}, init, on),
          "reduce", "cub::DeviceReduce::Reduce");
  } else {
    auto starts = thrust::make_transform_iterator(thrust::counting_iterator<fx_index>(0), RowStart{count});
    check(cub::DeviceSegmentedReduce::Reduce(nullptr, temp_bytes, elements, acc_ptr, rows, starts, starts + 1,
                                             MergeAcc<T, Acc>{}, init, on),
          "reduce", "cub::DeviceSegmentedReduce::Reduce");
    Tensor temp = scratch_of(temp_bytes);
    check(cub::DeviceSegmentedReduce::Reduce(temp.mutable_data<int64_t>(), temp_bytes, elements, acc_ptr, rows, starts,
                                             starts + 1, MergeAcc<T, Acc>{}, init, on),
          "reduce", "cub::DeviceSegmentedReduce::Reduce");
  }
  Exec::for_each(rows, ResultBody<T, Acc>{acc_ptr, out});
}

}  // namespace fluxion::cuda::reduction_kernels
