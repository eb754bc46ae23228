/// The reduction kernels of the CUDA backend: reduce_sum/max/min/prod over any set of axes,
/// argmax/argmin and cumsum. One body index per output element (per line for cumsum) visits its
/// reduced elements in row-major order, as the reference does (backends/reference/reduction.hpp):
/// float sums start at -0 and an empty sum is +0, max/min let NaN stick, empty max/min/prod give
/// the identity, argmax/argmin keep the first extremum and the first NaN, integers wrap. The
/// accumulators are in reductions_accumulators.hpp; under nvcc, CudaExec runs sums, products,
/// argmax/argmin and cumsum over contiguous rows with CUB (reductions_cub.cuh).
#pragma once
#include <limits>
#include <type_traits>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/reductions_accumulators.hpp"
#include "primitives/reduction.hpp"

#if defined(__CUDACC__)
#include "backends/cuda/kernels/reductions_cub.cuh"
#endif

namespace fluxion::cuda {
namespace reduction_kernels {

using primitives::reduction_family::ArgParams;
using primitives::reduction_family::CumsumParams;
using primitives::reduction_family::ReduceParams;

/// out[o] = the reduction of o's elements with accumulator Acc (`identity` when there are none).
template <class T, template <class> class Acc> struct ReduceBody {
  const T* in;
  T* out;
  ReduceIndex ix;
  T identity;
  FLUXION_HD void operator()(fx_index o) const {
    if (ix.count == 0) {
      out[o] = identity;
      return;
    }
    const fx_index base = ix.kept.offset(o);
    Acc<T> acc(identity);
    for (fx_index r = 0; r < ix.count; ++r) acc.add(in[base + ix.reduced.offset(r)]);
    out[o] = acc.result();
  }
};

/// The identity of each reduction (the result of reducing nothing), computed on the host.
template <template <class> class Acc, class T> T identity_of() {
  if constexpr (std::is_same_v<Acc<T>, ProdAcc<T>>) return T(1);
  else if constexpr (std::is_same_v<Acc<T>, MaxAcc<T>>)
    return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  else if constexpr (std::is_same_v<Acc<T>, MinAcc<T>>)
    return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  else return T(0);
}

/// Reductions longer than this many elements per output are split into chunks of this size: one
/// body index per (output, chunk) accumulates a partial, then one per output merges its partials
/// in chunk order. A full reduction thus runs on many threads instead of one.
inline constexpr fx_index kReduceChunk = 4096;

/// partial[q] = the accumulator of chunk q % chunks of output q / chunks.
template <class T, template <class> class Acc> struct ReduceChunkBody {
  const T* in;
  Acc<T>* partial;
  ReduceIndex ix;
  fx_index chunks;
  T identity;
  FLUXION_HD void operator()(fx_index q) const {
    const fx_index o = q / chunks, first = (q % chunks) * kReduceChunk;
    const fx_index last = first + kReduceChunk < ix.count ? first + kReduceChunk : ix.count;
    const fx_index base = ix.kept.offset(o);
    Acc<T> acc(identity);
    for (fx_index r = first; r < last; ++r) acc.add(in[base + ix.reduced.offset(r)]);
    partial[q] = acc;
  }
};

/// out[o] = the merge of o's partials, in chunk order.
template <class T, template <class> class Acc> struct MergeChunksBody {
  const Acc<T>* partial;
  T* out;
  fx_index chunks;
  FLUXION_HD void operator()(fx_index o) const {
    Acc<T> acc = partial[o * chunks];
    for (fx_index c = 1; c < chunks; ++c) acc.merge(partial[o * chunks + c]);
    out[o] = acc.result();
  }
};

/// Runs the reduction described by `ix` of `in` into `out` (out_n elements), chunked when long.
template <class Exec, class T, template <class> class Acc>
void run_reduction(const T* in, T* out, fx_index out_n, const ReduceIndex& ix, Device device) {
  if (out_n == 0) return;
  const T identity = identity_of<Acc, T>();
#if defined(__CUDACC__)
  // CUB merges in its own order: only for sums and products (see reductions_cub.cuh), and for rows
  // long enough to fill a block.
  if constexpr (Exec::backend == Backend::cuda &&
                (std::is_same_v<Acc<T>, SumAcc<T>> || std::is_same_v<Acc<T>, ProdAcc<T>>))
    if (ix.count >= kBlockThreads && contiguous_rows(ix)) {
      cub_reduce_rows<Exec, T, Acc>(in, out, out_n, ix.count, identity, device);
      return;
    }
#endif
  if (ix.count <= kReduceChunk) {
    Exec::for_each(out_n, ReduceBody<T, Acc>{in, out, ix, identity});
    return;
  }
  const fx_index chunks = (ix.count + kReduceChunk - 1) / kReduceChunk;
  // Partials live in an i64 scratch tensor (8-byte aligned: every accumulator is made of 8-byte or
  // smaller scalars).
  static_assert(alignof(Acc<T>) <= alignof(int64_t), "accumulators fit an int64 array's alignment");
  const fx_index words = (static_cast<fx_index>(sizeof(Acc<T>)) + 7) / 8;
  Tensor scratch = fluxion::empty(AbstractValue{Shape{out_n * chunks * words}, i64}, device);
  Acc<T>* partial = reinterpret_cast<Acc<T>*>(scratch.mutable_data<int64_t>());
  Exec::for_each(out_n * chunks, ReduceChunkBody<T, Acc>{in, partial, ix, chunks, identity});
  Exec::for_each(out_n, MergeChunksBody<T, Acc>{partial, out, chunks});
}

template <class Exec, template <class> class Acc>
void reduce_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& axes = params.as<ReduceParams>().axes;
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {  // the shape rule takes numbers only
      const ReduceIndex ix = make_reduce_index("reduce", in[0].shape().dims(), axes);
      run_reduction<Exec, T, Acc>(in[0].data<T>(), out[0].mutable_data<T>(), out[0].size(), ix, in[0].device());
    }
  });
}

/// The reference's argmax (IsMax) / argmin rule over candidates candidate(0..count) (increasing
/// indices j along the axis, count >= 1) of line[j * step]: the first extremum, except that the
/// first NaN is the answer.
template <class T, bool IsMax, class Candidate>
FLUXION_HD fx_index first_extremum(const T* line, fx_index step, fx_index count, const Candidate& candidate) {
  fx_index best = candidate(0);
  for (fx_index t = 0; t < count; ++t) {
    const fx_index j = candidate(t);
    const T x = line[j * step];
    if (x != x) return j;
    const T b = line[best * step];
    if (IsMax ? b < x : x < b) best = j;
  }
  return best;
}

struct RangeCandidates {  // first, first + 1, ...
  fx_index first;
  FLUXION_HD fx_index operator()(fx_index t) const { return first + t; }
};
struct ListCandidates {  // the chunks' answers, in chunk order
  const fx_index* list;
  FLUXION_HD fx_index operator()(fx_index t) const { return list[t]; }
};

/// out[o] = the arg-reduction of o's whole line (axis of n elements).
template <class T, class I, bool IsMax> struct ArgBody {
  const T* in;
  I* out;
  StridedIndex kept;
  fx_index n, step;
  FLUXION_HD void operator()(fx_index o) const {
    out[o] = static_cast<I>(first_extremum<T, IsMax>(in + kept.offset(o), step, n, RangeCandidates{0}));
  }
};

/// Lines longer than kReduceChunk: partial[q] = the answer of chunk q % chunks of line q / chunks.
template <class T, bool IsMax> struct ArgChunkBody {
  const T* in;
  fx_index* partial;
  StridedIndex kept;
  fx_index n, step, chunks;
  FLUXION_HD void operator()(fx_index q) const {
    const fx_index o = q / chunks, first = (q % chunks) * kReduceChunk;
    const fx_index count = n - first < kReduceChunk ? n - first : kReduceChunk;
    partial[q] = first_extremum<T, IsMax>(in + kept.offset(o), step, count, RangeCandidates{first});
  }
};

/// ...then out[o] = the same rule over o's chunk answers in chunk order: the first NaN is the first
/// chunk answer that is NaN, and the first extremum is the first chunk answer that is one.
template <class T, class I, bool IsMax> struct ArgMergeBody {
  const T* in;
  const fx_index* partial;
  I* out;
  StridedIndex kept;
  fx_index step, chunks;
  FLUXION_HD void operator()(fx_index o) const {
    const ListCandidates answers{partial + o * chunks};
    out[o] = static_cast<I>(first_extremum<T, IsMax>(in + kept.offset(o), step, chunks, answers));
  }
};

template <class Exec, class T, class I, bool IsMax> void run_arg_reduction(const T* x, I* out, fx_index out_n,
                                                                           const StridedIndex& kept, fx_index n,
                                                                           fx_index step, Device device) {
#if defined(__CUDACC__)
  // CUB's answer is the reference's whatever its merge order (PickCandidate, reductions_cub.cuh).
  if constexpr (Exec::backend == Backend::cuda)
    if (n >= kBlockThreads && contiguous_lines(kept, n, step)) {
      cub_arg_rows<Exec, T, I, IsMax>(x, out, out_n, n, device);
      return;
    }
#endif
  if (n <= kReduceChunk) {
    Exec::for_each(out_n, ArgBody<T, I, IsMax>{x, out, kept, n, step});
    return;
  }
  const fx_index chunks = (n + kReduceChunk - 1) / kReduceChunk;
  Tensor partial = fluxion::empty(AbstractValue{Shape{out_n * chunks}, i64}, device);
  Exec::for_each(out_n * chunks, ArgChunkBody<T, IsMax>{x, partial.mutable_data<int64_t>(), kept, n, step, chunks});
  Exec::for_each(out_n, ArgMergeBody<T, I, IsMax>{x, partial.data<int64_t>(), out, kept, step, chunks});
}

template <class Exec, bool IsMax>
void arg_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<ArgParams>();
  const ReduceIndex ix = make_reduce_index(IsMax ? "argmax" : "argmin", in[0].shape().dims(), p.axes);
  const fx_index step = row_major_strides(in[0].shape().dims())[static_cast<size_t>(p.axes[0])];
  const Device device = in[0].device();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in[0].data<T>();
      if (p.index_dtype == i32)
        run_arg_reduction<Exec, T, int32_t, IsMax>(x, out[0].mutable_data<int32_t>(), out[0].size(), ix.kept, ix.count,
                                                   step, device);
      else
        run_arg_reduction<Exec, T, int64_t, IsMax>(x, out[0].mutable_data<int64_t>(), out[0].size(), ix.kept, ix.count,
                                                   step, device);
    }
  });
}

/// cumsum's running sum: from +0 (the reference's start), compensated in double for floats (so
/// prefixes round as the reference's from-scratch prefix sums in long double), wrapping for
/// integers.
template <class T> struct RunningSum {
  CompensatedSum f{0.0};
  Wide<T> i = 0;
  FLUXION_HD void add(T x) {
    if constexpr (std::is_floating_point_v<T>) f.add(static_cast<double>(x));
    else i = static_cast<Wide<T>>(i + static_cast<Wide<T>>(x));
  }
  FLUXION_HD void merge(const RunningSum& o) {
    f.merge(o.f);
    i = static_cast<Wide<T>>(i + o.i);
  }
  FLUXION_HD T value() const {
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(f.value());
    else return static_cast<T>(i);
  }
};

/// Where cumsum's lines lie: line l = (outer, inner) starts at outer * n * inner + inner and steps
/// by `inner`; its s-th element in scan order is index s, or n - 1 - s when `reverse`.
struct CumsumLines {
  fx_index n, inner;
  bool reverse;
  FLUXION_HD fx_index at(fx_index l, fx_index s) const {
    return (l / inner) * n * inner + l % inner + (reverse ? n - 1 - s : s) * inner;
  }
};

/// Scan positions [first, last) of line l from `sum` (the sum of the positions before first):
/// writes each prefix when `out` is set, and returns the sum at `last`.
template <class T> FLUXION_HD RunningSum<T> scan_range(const T* in, T* out, const CumsumLines& lines, fx_index l,
                                                       fx_index first, fx_index last, RunningSum<T> sum) {
  for (fx_index s = first; s < last; ++s) {
    const fx_index at = lines.at(l, s);
    sum.add(in[at]);
    if (out) out[at] = sum.value();
  }
  return sum;
}

/// One body index per line (lines of at most kReduceChunk elements).
template <class T> struct CumsumBody {
  const T* in;
  T* out;
  CumsumLines lines;
  FLUXION_HD void operator()(fx_index l) const { scan_range(in, out, lines, l, 0, lines.n, RunningSum<T>{}); }
};

/// Longer lines, in three passes over chunks of kReduceChunk positions: each chunk's total, then
/// per line the totals turned into exclusive prefixes (in chunk order), then each chunk scanned from
/// its prefix.
template <class T> struct CumsumChunkTotalBody {
  const T* in;
  RunningSum<T>* partial;
  CumsumLines lines;
  fx_index chunks;
  FLUXION_HD void operator()(fx_index q) const {
    const fx_index l = q / chunks, first = (q % chunks) * kReduceChunk;
    const fx_index last = first + kReduceChunk < lines.n ? first + kReduceChunk : lines.n;
    partial[q] = scan_range<T>(in, nullptr, lines, l, first, last, RunningSum<T>{});
  }
};
template <class T> struct CumsumChunkPrefixBody {
  RunningSum<T>* partial;
  fx_index chunks;
  FLUXION_HD void operator()(fx_index l) const {
    RunningSum<T> sum;
    for (fx_index c = 0; c < chunks; ++c) {
      const RunningSum<T> total = partial[l * chunks + c];
      partial[l * chunks + c] = sum;
      sum.merge(total);
    }
  }
};
template <class T> struct CumsumChunkScanBody {
  const T* in;
  T* out;
  const RunningSum<T>* partial;
  CumsumLines lines;
  fx_index chunks;
  FLUXION_HD void operator()(fx_index q) const {
    const fx_index l = q / chunks, first = (q % chunks) * kReduceChunk;
    const fx_index last = first + kReduceChunk < lines.n ? first + kReduceChunk : lines.n;
    scan_range(in, out, lines, l, first, last, partial[q]);
  }
};

template <class Exec>
void cumsum_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<CumsumParams>();
  const std::vector<int64_t>& shape = in[0].shape().dims();
  const fx_index n = shape[static_cast<size_t>(p.axis)];
  fx_index inner = 1;
  for (size_t d = static_cast<size_t>(p.axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  if (in[0].size() == 0) return;  // nothing to write
  const CumsumLines lines{n, inner, p.reverse};
  const fx_index count = in[0].size() / n;  // lines
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in[0].data<T>();
      T* y = out[0].mutable_data<T>();
#if defined(__CUDACC__)
      if constexpr (Exec::backend == Backend::cuda)
        if (inner == 1 && n >= kBlockThreads) {  // contiguous lines long enough to fill a block
          cub_cumsum_rows<Exec, T, RunningSum<T>>(x, y, count, n, p.reverse, in[0].device());
          return;
        }
#endif
      if (n <= kReduceChunk) {
        Exec::for_each(count, CumsumBody<T>{x, y, lines});
        return;
      }
      const fx_index chunks = (n + kReduceChunk - 1) / kReduceChunk;
      static_assert(alignof(RunningSum<T>) <= alignof(int64_t), "running sums fit an int64 array's alignment");
      const fx_index words = (static_cast<fx_index>(sizeof(RunningSum<T>)) + 7) / 8;
      Tensor scratch = fluxion::empty(AbstractValue{Shape{count * chunks * words}, i64}, in[0].device());
      auto* partial = reinterpret_cast<RunningSum<T>*>(scratch.mutable_data<int64_t>());
      Exec::for_each(count * chunks, CumsumChunkTotalBody<T>{x, partial, lines, chunks});
      Exec::for_each(count, CumsumChunkPrefixBody<T>{partial, chunks});
      Exec::for_each(count * chunks, CumsumChunkScanBody<T>{x, y, partial, lines, chunks});
    }
  });
}

}  // namespace reduction_kernels

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_reduction_kernels() {
  using namespace primitives::reduction_family;
  using namespace reduction_kernels;
  runtime::set_kernel(reduce_sum_p(), Exec::backend, &reduce_kernel<Exec, SumAcc>);
  runtime::set_kernel(reduce_prod_p(), Exec::backend, &reduce_kernel<Exec, ProdAcc>);
  runtime::set_kernel(reduce_max_p(), Exec::backend, &reduce_kernel<Exec, MaxAcc>);
  runtime::set_kernel(reduce_min_p(), Exec::backend, &reduce_kernel<Exec, MinAcc>);
  runtime::set_kernel(argmax_p(), Exec::backend, &arg_kernel<Exec, true>);
  runtime::set_kernel(argmin_p(), Exec::backend, &arg_kernel<Exec, false>);
  runtime::set_kernel(cumsum_p(), Exec::backend, &cumsum_kernel<Exec>);
}

}  // namespace fluxion::cuda
