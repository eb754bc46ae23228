/// CPU permute copy: writes a row-major array with its dims reordered (a strided gather), used by
/// the reduction and dot_general kernels to bring operands into a layout Eigen can map.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace fluxion::cpu {
namespace permute_detail {

/// Dims of a permute after dropping size-1 dims and merging runs of input dims that stay
/// adjacent in the output: `size[i]` is output dim i's extent, `stride[i]` its input stride.
struct Plan {
  std::vector<int64_t> size, stride;
};

inline Plan make_plan(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  const size_t rank = shape.size();
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * shape[i];
  Plan p;
  for (int64_t d : perm) {
    const int64_t n = shape[static_cast<size_t>(d)];
    if (n == 1) continue;
    const int64_t s = in_stride[static_cast<size_t>(d)];
    if (!p.size.empty() && p.stride.back() == n * s) {
      p.size.back() *= n;  // the previous output dim is contiguous with this one: merge
      p.stride.back() = s;
    } else {
      p.size.push_back(n);
      p.stride.push_back(s);
    }
  }
  return p;
}

}  // namespace permute_detail

/// out = transpose(in, perm): output dim i is input dim perm[i]. `in` is row-major with extents
/// `shape`; `out` has room for all elements and must not alias `in`.
template <class T>
void permute_copy(const T* in, const std::vector<int64_t>& shape, const std::vector<int64_t>& perm, T* out) {
  int64_t total = 1;
  for (int64_t n : shape) total *= n;
  if (total == 0) return;
  permute_detail::Plan p = permute_detail::make_plan(shape, perm);
  if (p.size.empty() || (p.size.size() == 1 && p.stride[0] == 1)) {  // already in order
    std::memcpy(out, in, static_cast<size_t>(total) * sizeof(T));
    return;
  }
  const size_t rank = p.size.size();
  const int64_t inner = p.size[rank - 1], inner_stride = p.stride[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;  // input offset of out[row, 0]
  for (int64_t o = 0; o < total; o += inner) {
    if (inner_stride == 1) {
      std::memcpy(out + o, in + offset, static_cast<size_t>(inner) * sizeof(T));
    } else {
      const T* src = in + offset;
      for (int64_t j = 0; j < inner; ++j) out[o + j] = src[j * inner_stride];
    }
    // Odometer increment over the outer output dims.
    for (size_t d = rank - 1; d-- > 0;) {
      offset += p.stride[d];
      if (++idx[d] < p.size[d]) break;
      offset -= p.stride[d] * p.size[d];
      idx[d] = 0;
    }
  }
}

/// True when reading `shape` in the dim order `perm` visits memory in row-major order, i.e. the
/// permuted array needs no copy (size-1 dims may sit anywhere).
inline bool is_identity_layout(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  int64_t prev = -1;
  for (int64_t d : perm) {
    if (shape[static_cast<size_t>(d)] == 1) continue;
    if (d < prev) return false;
    prev = d;
  }
  return true;
}

}  // namespace fluxion::cpu
