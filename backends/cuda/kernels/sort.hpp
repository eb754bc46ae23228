/// The sort family's kernels in the CUDA kernel table: sort (argsort and top_k are sorts) and the
/// cumulative primitives (one thread per row scans it sequentially, the CPU's row body;
/// associative_scan is a composition of other primitives). Sort: one permutation per
/// row, made by a stable bottom-up merge sort of the row's positions on one thread per row, one pass
/// per key from the last key to the first (stable passes compose to the lexicographic order); then
/// every operand is gathered through it, one thread per element. One thread per row suits many short
/// rows; a few very long rows would want a segmented device sort (CUB), not done yet.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/host_staged.hpp"
#include "fluxion/tensor.hpp"
#include "primitives/cumulative.hpp"
#include "primitives/reduction.hpp"
#include "primitives/sort.hpp"

namespace fluxion::cuda {

/// perm[r, j] = j: every row's positions in their original order.
struct SortIotaBody {
  fx_index* perm;
  fx_index n;
  FLUXION_HD void operator()(fx_index i) const { perm[i] = i % n; }
};

/// Row r's positions (perm[r, :]) stably merge-sorted by one key, with `scratch` (as large as perm)
/// for the ping-pong between widths; the result ends in perm.
template <class K> struct SortPassBody {
  const K* key;
  fx_index* perm;
  fx_index* scratch;
  fx_index n, inner;
  bool descending;

  FLUXION_HD bool before(fx_index p, fx_index q, fx_index base) const {  // p strictly before q
    const K kp = key[base + p * inner], kq = key[base + q * inner];
    return descending ? primitives::sort_detail::sort_less(kq, kp) : primitives::sort_detail::sort_less(kp, kq);
  }

  FLUXION_HD void operator()(fx_index r) const {
    const fx_index base = (r / inner) * n * inner + r % inner;
    fx_index* src = perm + r * n;
    fx_index* dst = scratch + r * n;
    for (fx_index width = 1; width < n; width *= 2) {
      for (fx_index lo = 0; lo < n; lo += 2 * width) {
        const fx_index mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
        fx_index i = lo, j = mid, o = lo;
        // Taking the left run's element unless the right one is strictly before keeps it stable.
        while (i < mid && j < hi) dst[o++] = before(src[j], src[i], base) ? src[j++] : src[i++];
        while (i < mid) dst[o++] = src[i++];
        while (j < hi) dst[o++] = src[j++];
      }
      fx_index* t = src;
      src = dst;
      dst = t;
    }
    if (src != perm + r * n)
      for (fx_index j = 0; j < n; ++j) perm[r * n + j] = src[j];
  }
};

/// out[i] = in[the element of i's row at position perm[row, j]], for i = ((o * n) + j) * inner + c.
template <class T> struct SortPermuteBody {
  const T* in;
  T* out;
  const fx_index* perm;
  fx_index n, inner;
  FLUXION_HD void operator()(fx_index i) const {
    const fx_index c = i % inner, j = (i / inner) % n, o = i / inner / n;
    out[i] = in[(o * n + perm[(o * inner + c) * n + j]) * inner + c];
  }
};

/// Inputs: the operands (keys first), equal shapes. Outputs: each operand sorted. SortParams.
template <class Exec> void sort_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<primitives::sort_detail::SortParams>();
  const Shape& s = in[0].shape();
  const fx_index size = s.num_elements();
  if (size == 0) return;
  fx_index n = s[p.axis], inner = 1;
  for (int64_t d = p.axis + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
  const Device device = out[0].device();
  Tensor perm = fluxion::empty(AbstractValue{Shape{size}, i64}, device);
  Tensor scratch = fluxion::empty(AbstractValue{Shape{size}, i64}, device);
  fx_index* perm_data = reinterpret_cast<fx_index*>(perm.mutable_data<int64_t>());
  fx_index* scratch_data = reinterpret_cast<fx_index*>(scratch.mutable_data<int64_t>());
  Exec::for_each(size, SortIotaBody{perm_data, n});
  for (int64_t k = p.num_keys; k-- > 0;)
    dispatch_dtype(in[k].dtype(), [&](auto tag) {
      using K = typename decltype(tag)::type;
      Exec::for_each(size / n, SortPassBody<K>{in[k].data<K>(), perm_data, scratch_data, n, inner, p.descending});
    });
  for (size_t k = 0; k < in.size(); ++k)
    dispatch_dtype(in[k].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Exec::for_each(size, SortPermuteBody<T>{in[k].data<T>(), out[k].mutable_data<T>(), perm_data, n, inner});
    });
}

/// Inputs: x (not bool). Output: x scanned along the axis with Op (CumsumParams), one thread per row.
template <class Exec, class Op>
void cumulative_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<primitives::reduction_family::CumsumParams>();
  const Shape& s = in[0].shape();
  const fx_index size = s.num_elements();
  if (size == 0) return;
  fx_index inner = 1;
  for (int64_t d = p.axis + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
  const fx_index n = s[p.axis];
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (primitives::cumulative_detail::kCumulativeApplies<Op, T>)
      Exec::for_each(size / n, primitives::cumulative_detail::CumulativeRowBody<Op, T>{
                                   in[0].data<T>(), out[0].mutable_data<T>(), n, inner, p.reverse});
  });
}

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_sort_kernels() {
  namespace cd = primitives::cumulative_detail;
  runtime::set_kernel(primitives::sort_detail::sort_p(), Exec::backend, &sort_kernel<Exec>);
  runtime::set_kernel(cd::cumprod_p(), Exec::backend, &cumulative_kernel<Exec, cd::Prod>);
  runtime::set_kernel(cd::cummax_p(), Exec::backend, &cumulative_kernel<Exec, cd::Max>);
  runtime::set_kernel(cd::cummin_p(), Exec::backend, &cumulative_kernel<Exec, cd::Min>);
  runtime::set_kernel(cd::cumlogsumexp_p(), Exec::backend, &cumulative_kernel<Exec, cd::LogAddExp>);
}

}  // namespace fluxion::cuda
