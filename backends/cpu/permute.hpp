/// CPU permute copy: writes a row-major array with its dims reordered, used by the reduction and
/// dot_general kernels to bring operands into a layout Eigen can map.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/strided_copy.hpp"

namespace fluxion::cpu {

/// out = transpose(in, perm): output dim i is input dim perm[i]. `in` is row-major with extents
/// `shape`; `out` has room for all elements and must not alias `in`. A view onto the shared
/// strided copy engine (tiled, run-merging), so there is one transpose implementation.
template <class T> void permute_copy(const T* in, IndexSpan shape, IndexSpan perm, T* out) {
  const IndexVector in_strides = strided::contiguous_strides(shape);
  IndexVector out_shape, src_strides;
  for (int64_t d : perm) {
    out_shape.push_back(shape[static_cast<size_t>(d)]);
    src_strides.push_back(in_strides[static_cast<size_t>(d)]);
  }
  strided::copy(out_shape, out, strided::contiguous_strides(out_shape), in, src_strides, sizeof(T));
}

/// True when reading `shape` in the dim order `perm` visits memory in row-major order, i.e. the
/// permuted array needs no copy (size-1 dims may sit anywhere).
inline bool is_identity_layout(IndexSpan shape, IndexSpan perm) {
  int64_t prev = -1;
  for (int64_t d : perm) {
    if (shape[static_cast<size_t>(d)] == 1) continue;
    if (d < prev) return false;
    prev = d;
  }
  return true;
}

}  // namespace fluxion::cpu
