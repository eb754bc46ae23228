/// CudaExec's CUB paths of the reductions (nvcc only, included by reductions.hpp), all for data that
/// lies in contiguous rows (the reduced or scanned axis trailing, or every axis):
/// - reduce_sum and reduce_prod: one CUB call, cub::DeviceReduce for one row and
///   cub::DeviceSegmentedReduce for several, over the same accumulators as the portable bodies
///   (SumAcc, ProdAcc): each element becomes an accumulator, accumulators merge. CUB merges in an
///   order of its choosing, so only sums and products come here (their merges are commutative: the
///   sign of a zero sum does not depend on the order); max and min keep the first of equal values
///   (-0 before +0) and stay on the chunked bodies, which merge in index order.
/// - argmax and argmin: the same calls over (index, value) candidates with a selection that does
///   not depend on the merge order (PickCandidate), so CUB's answer is the reference's exactly.
/// - cumsum: cub::DeviceScan::InclusiveScanByKey (key = the row) over the portable path's running
///   sums (compensated in double for floats, wrapping for integers).
#pragma once
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
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

/// True when line o of `count` elements, each `step` apart, starting at kept.offset(o), is the
/// contiguous range [o * count, (o + 1) * count).
inline bool contiguous_lines(const StridedIndex& kept, fx_index count, fx_index step) {
  const bool packed = kept.rank == 0 || (kept.rank == 1 && kept.strides[0] == count);
  return (step == 1 || count <= 1) && packed && kept.base == 0;
}

/// True when output o reduces the contiguous elements [o * count, (o + 1) * count).
inline bool contiguous_rows(const ReduceIndex& ix) {
  const bool rows_dense = ix.reduced.rank == 0 || (ix.reduced.rank == 1 && ix.reduced.strides[0] == 1);
  return rows_dense && contiguous_lines(ix.kept, ix.count, 1);
}

/// Scratch of at least `bytes` bytes on `device` (an i64 tensor: 8-byte aligned). At least one
/// word: a null temporary storage would make CUB's second call a size query again.
inline Tensor cub_scratch(size_t bytes, Device device) {
  return fluxion::empty(AbstractValue{Shape{static_cast<int64_t>(bytes / 8 + 1)}, i64}, device);
}

/// acc[o] = `merge` over elements [o * count, (o + 1) * count) from `init`, for o < rows (count >=
/// 1), by CUB on the device's stream (CudaExec's, which also orders the scratch tensors' frees).
template <class Elements, class Acc, class Merge> void cub_reduce_segments(Elements elements, Acc* acc, fx_index rows,
                                                                           fx_index count, Merge merge, Acc init,
                                                                           Device device, const char* op) {
  const cudaStream_t on = stream(device.index);
  size_t temp_bytes = 0;
  if (rows == 1) {
    check(cub::DeviceReduce::Reduce(nullptr, temp_bytes, elements, acc, count, merge, init, on), op,
          "cub::DeviceReduce::Reduce");
    Tensor temp = cub_scratch(temp_bytes, device);
    check(cub::DeviceReduce::Reduce(temp.mutable_data<int64_t>(), temp_bytes, elements, acc, count, merge, init, on),
          op, "cub::DeviceReduce::Reduce");
  } else {
    auto starts = thrust::make_transform_iterator(thrust::counting_iterator<fx_index>(0), RowStart{count});
    check(cub::DeviceSegmentedReduce::Reduce(nullptr, temp_bytes, elements, acc, rows, starts, starts + 1, merge, init,
                                             on),
          op, "cub::DeviceSegmentedReduce::Reduce");
    Tensor temp = cub_scratch(temp_bytes, device);
    check(cub::DeviceSegmentedReduce::Reduce(temp.mutable_data<int64_t>(), temp_bytes, elements, acc, rows, starts,
                                             starts + 1, merge, init, on),
          op, "cub::DeviceSegmentedReduce::Reduce");
  }
}

/// out[o] = the reduction of in[o * count, (o + 1) * count) for o < rows (count >= 1).
template <class Exec, class T, template <class> class Acc>
void cub_reduce_rows(const T* in, T* out, fx_index rows, fx_index count, T identity, Device device) {
  Tensor acc = cub_scratch(static_cast<size_t>(rows) * sizeof(Acc<T>), device);
  Acc<T>* acc_ptr = reinterpret_cast<Acc<T>*>(acc.mutable_data<int64_t>());
  cub_reduce_segments(thrust::make_transform_iterator(in, ToAcc<T, Acc>{identity}), acc_ptr, rows, count,
                      MergeAcc<T, Acc>{}, Acc<T>(identity), device, "reduce");
  Exec::for_each(rows, ResultBody<T, Acc>{acc_ptr, out});
}

/// A candidate answer of argmax/argmin: a flat index into the input (-1: none yet) and its value.
template <class T> struct ArgCandidate {
  fx_index index;
  T value;
};

/// Flat index e as a candidate.
template <class T> struct ToCandidate {
  const T* in;
  __host__ __device__ ArgCandidate<T> operator()(fx_index e) const { return ArgCandidate<T>{e, in[e]}; }
};

/// The reference's rule (first_extremum) as the choice of the better of two candidates under a
/// strict total order, which makes the choice associative and commutative, so any merge order CUB
/// takes gives the same answer: a NaN beats every number and the lower index wins between NaNs; the
/// larger number (IsMax; the smaller for argmin) wins, and the lower index between equal numbers
/// (-0 == +0, as the reference's `<` sees them). The best of a row is thus its first NaN, else the
/// first of its extreme values: what the reference's left-to-right scan returns. Index -1 (CUB's
/// initial value) loses to every candidate.
template <class T, bool IsMax> struct PickCandidate {
  __host__ __device__ ArgCandidate<T> operator()(const ArgCandidate<T>& a, const ArgCandidate<T>& b) const {
    if (a.index < 0 || b.index < 0) return a.index < 0 ? b : a;
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    const ArgCandidate<T>& first = a.index < b.index ? a : b;
    if (a_nan || b_nan) return a_nan && b_nan ? first : (a_nan ? a : b);
    if (a.value == b.value) return first;
    return (IsMax ? b.value < a.value : a.value < b.value) ? a : b;
  }
};

/// out[o] = the row-relative index of row o's best candidate.
template <class T, class I> struct ArgResultBody {
  const ArgCandidate<T>* best;
  I* out;
  fx_index count;
  __host__ __device__ void operator()(fx_index o) const { out[o] = static_cast<I>(best[o].index - o * count); }
};

/// out[o] = argmax (IsMax) / argmin of in[o * count, (o + 1) * count) for o < rows (count >= 1).
template <class Exec, class T, class I, bool IsMax>
void cub_arg_rows(const T* in, I* out, fx_index rows, fx_index count, Device device) {
  Tensor best = cub_scratch(static_cast<size_t>(rows) * sizeof(ArgCandidate<T>), device);
  auto* best_ptr = reinterpret_cast<ArgCandidate<T>*>(best.mutable_data<int64_t>());
  auto candidates = thrust::make_transform_iterator(thrust::counting_iterator<fx_index>(0), ToCandidate<T>{in});
  cub_reduce_segments(candidates, best_ptr, rows, count, PickCandidate<T, IsMax>{}, ArgCandidate<T>{-1, T(0)}, device,
                      IsMax ? "argmax" : "argmin");
  Exec::for_each(rows, ArgResultBody<T, I>{best_ptr, out, count});
}

/// Scan position e (row e / count, position e % count in scan order, from the row's end when
/// `reverse`) to its element's offset.
struct ScanOrder {
  fx_index count;
  bool reverse;
  __host__ __device__ fx_index at(fx_index e) const {
    const fx_index s = e % count;
    return e - s + (reverse ? count - 1 - s : s);
  }
};

/// Scan position e as the running sum of its element alone; Sum is reductions.hpp's RunningSum<T>.
template <class T, class Sum> struct ToRunningSum {
  const T* in;
  ScanOrder order;
  __host__ __device__ Sum operator()(fx_index e) const {
    Sum s;
    s.add(in[order.at(e)]);
    return s;
  }
};
struct RowOf {
  fx_index count;
  __host__ __device__ fx_index operator()(fx_index e) const { return e / count; }
};
template <class Sum> struct MergeRunningSums {
  __host__ __device__ Sum operator()(const Sum& a, const Sum& b) const {
    Sum r = a;
    r.merge(b);
    return r;
  }
};
template <class T, class Sum> struct ScanResultBody {
  const Sum* prefix;
  T* out;
  ScanOrder order;
  __host__ __device__ void operator()(fx_index e) const { out[order.at(e)] = prefix[e].value(); }
};

/// cumsum of rows [o * count, (o + 1) * count) for o < rows (count >= 1), from each row's end when
/// `reverse`: one cub::DeviceScan::InclusiveScanByKey over all rows (the key is the row), of the
/// running sums the portable bodies use. Summation order: CUB's (a tree of partial sums within
/// tiles, then the tiles' prefixes), each partial a double-double-like compensated sum for floats,
/// so every prefix is the exact prefix sum up to about count 2^-106 of the sum of magnitudes, rounded once
/// to T -- the reference's prefix (long double, rounded once) but for near-ties; integers wrap as
/// the reference's. Scratch: one running sum (24 bytes) per element, read back in scan order.
template <class Exec, class T, class Sum>
void cub_cumsum_rows(const T* in, T* out, fx_index rows, fx_index count, bool reverse, Device device) {
  const fx_index total = rows * count;
  static_assert(alignof(Sum) <= alignof(int64_t), "running sums fit an int64 array's alignment");
  Tensor prefix = cub_scratch(static_cast<size_t>(total) * sizeof(Sum), device);
  Sum* prefix_ptr = reinterpret_cast<Sum*>(prefix.mutable_data<int64_t>());
  const ScanOrder order{count, reverse};
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<fx_index>(0), RowOf{count});
  auto values =
      thrust::make_transform_iterator(thrust::counting_iterator<fx_index>(0), ToRunningSum<T, Sum>{in, order});
  const cudaStream_t on = stream(device.index);
  size_t temp_bytes = 0;
  check(cub::DeviceScan::InclusiveScanByKey(nullptr, temp_bytes, keys, values, prefix_ptr, MergeRunningSums<Sum>{},
                                            total, ::cuda::std::equal_to<>{}, on),
        "cumsum", "cub::DeviceScan::InclusiveScanByKey");
  Tensor temp = cub_scratch(temp_bytes, device);
  check(cub::DeviceScan::InclusiveScanByKey(temp.mutable_data<int64_t>(), temp_bytes, keys, values, prefix_ptr,
                                            MergeRunningSums<Sum>{}, total, ::cuda::std::equal_to<>{}, on),
        "cumsum", "cub::DeviceScan::InclusiveScanByKey");
  Exec::for_each(total, ScanResultBody<T, Sum>{prefix_ptr, out, order});
}

}  // namespace fluxion::cuda::reduction_kernels
