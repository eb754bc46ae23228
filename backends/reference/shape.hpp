/// Reference kernels of the shape/movement primitives: one loop over output elements, each
/// unravelled to a multi-index and mapped back to the operand. The executable spec.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion::reference::layout {

/// The row-major multi-index of flat position `flat` in `shape`.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.size()), 0);
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

/// The row-major flat position of multi-index `idx` in `shape`.
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (int64_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[static_cast<size_t>(d)];
  return flat;
}

/// Calls f(out_flat, out_index) for every element of `shape`.
template <class F> void for_each_index(const Shape& shape, F&& f) {
  const int64_t n = shape.num_elements();
  for (int64_t i = 0; i < n; ++i) f(i, unravel(i, shape));
}

}  // namespace fluxion::reference::layout

namespace fluxion::reference::shape_kernels {

/// y[i] = x[i] in row-major order (reshape, squeeze, expand_dims).
inline void copy_flat(const Tensor& x, const Tensor& y) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    for (int64_t i = 0, n = x.size(); i < n; ++i) b[i] = a[i];
  });
}

inline void broadcast_in_dim(const Tensor& x, const std::vector<int64_t>& dims, const Tensor& y) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, const std::vector<int64_t>& oi) {
      std::vector<int64_t> xi(dims.size());
      for (size_t i = 0; i < dims.size(); ++i)
        xi[i] = x.shape()[static_cast<int64_t>(i)] == 1 ? 0 : oi[static_cast<size_t>(dims[i])];
      b[o] = a[layout::ravel(xi, x.shape())];
    });
  });
}

inline void transpose(const Tensor& x, const std::vector<int64_t>& perm, const Tensor& y) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, const std::vector<int64_t>& oi) {
      std::vector<int64_t> xi(perm.size());
      for (size_t k = 0; k < perm.size(); ++k) xi[static_cast<size_t>(perm[k])] = oi[k];
      b[o] = a[layout::ravel(xi, x.shape())];
    });
  });
}

}  // namespace fluxion::reference::shape_kernels
