/// What every kernel family shares: typed pointers of the kernel's tensors, and StridedIndex, the
/// index map of the strided-index family (an output's flat index to an input element's offset).
#pragma once
#include <vector>

#include "backends/cuda/device_code.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/primitive.hpp"
#include "runtime/backend.hpp"

namespace fluxion::cuda {

/// Offset of the element that output flat index i reads: the output's row-major coordinates
/// (dims) times per-dim strides (any sign; 0 for a broadcast dim), plus `base`.
struct StridedIndex {
  int rank = 0;
  fx_index base = 0;
  fx_index dims[kMaxKernelRank] = {};
  fx_index strides[kMaxKernelRank] = {};

  FLUXION_HD fx_index offset(fx_index i) const {
    fx_index off = base;
    for (int d = rank - 1; d >= 0; --d) {
      const fx_index c = i % dims[d];
      i /= dims[d];
      off += c * strides[d];
    }
    return off;
  }
};

/// StridedIndex over `dims` with `strides` (one per dim): adjacent dims that step through memory
/// as one are merged first, so the rank limit binds only on truly strided layouts. Throws
/// NotImplementedError naming `op` beyond kMaxKernelRank merged dims.
inline StridedIndex make_strided_index(const char* op, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& strides, int64_t base = 0) {
  std::vector<int64_t> d, s;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!d.empty() && s.back() == strides[k] * dims[k]) {
      d.back() *= dims[k];
      s.back() = strides[k];
    } else {
      d.push_back(dims[k]);
      s.push_back(strides[k]);
    }
  }
  if (d.size() > static_cast<size_t>(kMaxKernelRank))
    detail::fail<NotImplementedError>(op, "the CUDA kernels index at most ", kMaxKernelRank,
                                      " strided dims, this layout has ", d.size(), ". Reshape to fewer dims first.");
  StridedIndex r;
  r.rank = static_cast<int>(d.size());
  r.base = base;
  for (size_t k = 0; k < d.size(); ++k) {
    r.dims[k] = d[k];
    r.strides[k] = s[k];
  }
  return r;
}

/// The basic bodies every family launches.
/// out[i] = in[map.offset(i)] for every output index i (broadcast, transpose, slice, permuted copies).
template <class T> struct StridedRead {
  const T* in;
  T* out;
  StridedIndex map;
  FLUXION_HD void operator()(fx_index i) const { out[i] = in[map.offset(i)]; }
};

/// out[map.offset(i)] = in[i] for every operand index i (the map is one-to-one: no write races).
template <class T> struct StridedWrite {
  const T* in;
  T* out;
  StridedIndex map;
  FLUXION_HD void operator()(fx_index i) const { out[map.offset(i)] = in[i]; }
};

/// dst[i] = src[i].
template <class T> struct CopyBody {
  const T* src;
  T* dst;
  FLUXION_HD void operator()(fx_index i) const { dst[i] = src[i]; }
};

/// out[i] = value.
template <class T> struct FillBody {
  T* out;
  T value;
  FLUXION_HD void operator()(fx_index i) const { out[i] = value; }
};

/// Row-major strides of `dims`.
inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

}  // namespace fluxion::cuda
