/// Reference kernels of the indexing primitives: one loop over output elements, each unravelled
/// to a multi-index and mapped back to its source by the definition. The executable spec.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/reference/shape.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::reference::indexing_kernels {

/// The single value of an integer rank-0 tensor.
inline int64_t scalar_index(const Tensor& t) { return t.to_vector<int64_t>().at(0); }

/// XLA's dynamic-slice start: clamped to [0, dim - size].
inline int64_t clamp_start(int64_t s, int64_t dim, int64_t size) {
  if (s < 0) s = 0;
  if (s > dim - size) s = dim - size;
  return s;
}

inline void slice(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& strides,
                  const Tensor& y) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, std::vector<int64_t> i) {
      for (size_t d = 0; d < i.size(); ++d) i[d] = start[d] + i[d] * strides[d];
      b[o] = a[layout::ravel(i, x.shape())];
    });
  });
}

inline void dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Tensor& y) {
  std::vector<int64_t> s;
  for (size_t d = 0; d < starts.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    s.push_back(clamp_start(scalar_index(starts[d]), x.shape()[di], y.shape()[di]));
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, std::vector<int64_t> i) {
      for (size_t d = 0; d < i.size(); ++d) i[d] += s[d];
      b[o] = a[layout::ravel(i, x.shape())];
    });
  });
}

/// Each output element is the update's when it lies inside the (clamped) update window.
inline void dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts,
                                 const Tensor& y) {
  std::vector<int64_t> s;
  for (size_t d = 0; d < starts.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    s.push_back(clamp_start(scalar_index(starts[d]), x.shape()[di], update.shape()[di]));
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    const T* u = update.data<T>();
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, std::vector<int64_t> i) {
      bool inside = true;
      for (size_t d = 0; d < i.size(); ++d) {
        i[d] -= s[d];
        inside = inside && i[d] >= 0 && i[d] < update.shape()[static_cast<int64_t>(d)];
      }
      b[o] = inside ? u[layout::ravel(i, update.shape())] : a[o];
    });
  });
}

/// Output position o of dim d comes from operand position (o - low) / (interior + 1) when that
/// divides exactly and lands inside the operand; otherwise it is padding.
inline void pad(const Tensor& x, const Tensor& value, const std::vector<int64_t>& low,
                const std::vector<int64_t>& /*high*/, const std::vector<int64_t>& interior, const Tensor& y) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    const T pv = value.data<T>()[0];
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, std::vector<int64_t> i) {
      bool from_x = true;
      for (size_t d = 0; d < i.size(); ++d) {
        const int64_t p = i[d] - low[d], step = interior[d] + 1;
        if (p < 0 || p % step != 0 || p / step >= x.shape()[static_cast<int64_t>(d)]) {
          from_x = false;
          break;
        }
        i[d] = p / step;
      }
      b[o] = from_x ? a[layout::ravel(i, x.shape())] : pv;
    });
  });
}

/// Each output element finds its operand by walking the operands' extents along `dimension`.
inline void concatenate(const std::vector<Tensor>& xs, int64_t dimension, const Tensor& y) {
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* b = y.mutable_data<T>();
    const auto k = static_cast<size_t>(dimension);
    layout::for_each_index(y.shape(), [&](int64_t o, std::vector<int64_t> i) {
      size_t which = 0;
      while (i[k] >= xs[which].shape()[dimension]) i[k] -= xs[which++].shape()[dimension];
      b[o] = xs[which].data<T>()[layout::ravel(i, xs[which].shape())];
    });
  });
}

inline void iota(int64_t dimension, const Tensor& y) {
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      T* b = y.mutable_data<T>();
      layout::for_each_index(y.shape(), [&](int64_t o, const std::vector<int64_t>& i) {
        b[o] = static_cast<T>(i[static_cast<size_t>(dimension)]);
      });
    }
  });
}

/// Output index = x-prefix ++ index-position ++ x-suffix; the x element read is
/// x-prefix ++ clamp(indices[index-position]) ++ x-suffix.
inline void gather(const Tensor& x, const Tensor& indices, int64_t axis, const Tensor& y) {
  const std::vector<int64_t> idx = indices.to_vector<int64_t>();
  const int64_t ir = indices.ndim(), n = x.shape()[axis];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    layout::for_each_index(y.shape(), [&](int64_t o, const std::vector<int64_t>& i) {
      std::vector<int64_t> ii(i.begin() + axis, i.begin() + axis + ir);
      int64_t k = idx[static_cast<size_t>(layout::ravel(ii, indices.shape()))];
      k = std::min(std::max<int64_t>(k, 0), n - 1);
      std::vector<int64_t> xi(i.begin(), i.begin() + axis);
      xi.push_back(k);
      xi.insert(xi.end(), i.begin() + axis + ir, i.end());
      b[o] = a[layout::ravel(xi, x.shape())];
    });
  });
}

/// y = operand, then every update element is added at the position gather would have read it from.
inline void scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates, int64_t axis,
                        const Tensor& y) {
  const std::vector<int64_t> idx = indices.to_vector<int64_t>();
  const int64_t ir = indices.ndim(), n = operand.shape()[axis];
  dispatch_dtype(operand.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* a = operand.data<T>();
      const T* u = updates.data<T>();
      T* b = y.mutable_data<T>();
      for (int64_t i = 0, total = operand.size(); i < total; ++i) b[i] = a[i];
      layout::for_each_index(updates.shape(), [&](int64_t q, const std::vector<int64_t>& i) {
        std::vector<int64_t> ii(i.begin() + axis, i.begin() + axis + ir);
        int64_t k = idx[static_cast<size_t>(layout::ravel(ii, indices.shape()))];
        k = std::min(std::max<int64_t>(k, 0), n - 1);
        std::vector<int64_t> yi(i.begin(), i.begin() + axis);
        yi.push_back(k);
        yi.insert(yi.end(), i.begin() + axis + ir, i.end());
        T& dst = b[layout::ravel(yi, operand.shape())];
        if constexpr (std::is_integral_v<T>) {
          using U = std::make_unsigned_t<T>;
          dst = static_cast<T>(static_cast<U>(dst) + static_cast<U>(u[q]));
        } else {
          dst = dst + u[q];
        }
      });
    }
  });
}

}  // namespace fluxion::reference::indexing_kernels
