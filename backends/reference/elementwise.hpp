/// Reference elementwise kernels: plain loops over Op::reference, the executable spec.
#pragma once
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::reference {

template <class Op> void unary_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::reference(T{}));
      const T* x = in[0].data<T>();
      R* y = out[0].mutable_data<R>();
      for (int64_t i = 0, n = in[0].size(); i < n; ++i) y[i] = Op::reference(x[i]);
    }
  });
}

template <class Op> void binary_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::reference(T{}, T{}));
      const T* a = in[0].data<T>();
      const T* b = in[1].data<T>();
      // A rank-0 operand is broadcast: its stride is 0.
      const int64_t sa = in[0].ndim() == 0 ? 0 : 1, sb = in[1].ndim() == 0 ? 0 : 1;
      R* y = out[0].mutable_data<R>();
      for (int64_t i = 0, n = out[0].size(); i < n; ++i) y[i] = Op::reference(a[i * sa], b[i * sb]);
    }
  });
}

}  // namespace fluxion::reference
