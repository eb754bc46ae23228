/// CPU kernels of the shape/movement primitives, on the strided copy engine. Inputs are validated.
#pragma once
#include <cstring>
#include <vector>

#include "backends/cpu/strided_copy.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::cpu::shape_kernels {

inline const void* raw(const Tensor& t) { return t.array("cpu kernel").data(); }
inline void* raw_out(const Tensor& t) { return t.array("cpu kernel").data(); }

/// y = x's elements in row-major order (reshape, squeeze, expand_dims when not a view).
inline void copy_flat(const Tensor& x, const Tensor& y) {
  const size_t nbytes = static_cast<size_t>(x.size() * dtype_size(x.dtype()));
  if (nbytes) std::memcpy(raw_out(y), raw(x), nbytes);
}

/// Operand dim i feeds output dim dims[i]; size-1 operand dims broadcast (stride 0).
inline void broadcast_in_dim(const Tensor& x, const std::vector<int64_t>& dims, const Tensor& y) {
  const std::vector<int64_t>& out = y.shape().dims();
  const IndexVector xs = strided::contiguous_strides(x.shape().dims());
  IndexVector src(out.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i)
    if (x.shape()[static_cast<int64_t>(i)] != 1) src[static_cast<size_t>(dims[i])] = xs[i];
  strided::copy(out, raw_out(y), strided::contiguous_strides(out), raw(x), src, dtype_size(x.dtype()));
}

/// Output dim k is operand dim perm[k].
inline void transpose(const Tensor& x, const std::vector<int64_t>& perm, const Tensor& y) {
  const std::vector<int64_t>& out = y.shape().dims();
  const IndexVector xs = strided::contiguous_strides(x.shape().dims());
  IndexVector src(out.size());
  for (size_t k = 0; k < perm.size(); ++k) src[k] = xs[static_cast<size_t>(perm[k])];
  strided::copy(out, raw_out(y), strided::contiguous_strides(out), raw(x), src, dtype_size(x.dtype()));
}

}  // namespace fluxion::cpu::shape_kernels
