/// CPU elementwise kernels: Eigen array expressions (vectorised) over flat buffers.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::cpu {

template <class T> using ArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Aligned64>;
template <class T> using MutableArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Aligned64>;

namespace elementwise_detail {
// Op::array(a) is the vectorised Eigen form; ops without one fall back to Op::scalar per element.
template <class Op, class A, class = void> struct has_unary_array : std::false_type {};
template <class Op, class A> struct has_unary_array<Op, A, std::void_t<decltype(Op::array(std::declval<const A&>()))>>
    : std::true_type {};
template <class Op, class A, class B, class = void> struct has_binary_array : std::false_type {};
template <class Op, class A, class B>
struct has_binary_array<Op, A, B, std::void_t<decltype(Op::array(std::declval<const A&>(), std::declval<const B&>()))>>
    : std::true_type {};

template <class Op, class A> auto unary_expr(const A& a) {
  using T = typename A::Scalar;
  if constexpr (has_unary_array<Op, A>::value) return Op::array(a);
  else return a.unaryExpr([](T x) { return Op::scalar(x); });
}

template <class Op, class A, class B> auto binary_expr(const A& a, const B& b) {
  using T = typename A::Scalar;
  if constexpr (has_binary_array<Op, A, B>::value) return Op::array(a, b);
  else return a.binaryExpr(b, [](T x, T y) { return Op::scalar(x, y); });
}
}  // namespace elementwise_detail

template <class Op> void unary_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::scalar(T{}));
      const int64_t n = in[0].size();
      ArrayMap<T> x(in[0].data<T>(), n);
      MutableArrayMap<R> y(out[0].mutable_data<R>(), n);
      y = elementwise_detail::unary_expr<Op>(x);
    }
  });
}

template <class Op> void binary_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::scalar(T{}, T{}));
      using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
      const int64_t n = out[0].size();
      MutableArrayMap<R> y(out[0].mutable_data<R>(), n);
      const bool a_scalar = in[0].ndim() == 0 && n != 1, b_scalar = in[1].ndim() == 0 && n != 1;
      if (a_scalar)
        y = elementwise_detail::binary_expr<Op>(Array::Constant(n, in[0].data<T>()[0]),
                                                ArrayMap<T>(in[1].data<T>(), n));
      else if (b_scalar)
        y = elementwise_detail::binary_expr<Op>(ArrayMap<T>(in[0].data<T>(), n),
                                                Array::Constant(n, in[1].data<T>()[0]));
      else y = elementwise_detail::binary_expr<Op>(ArrayMap<T>(in[0].data<T>(), n), ArrayMap<T>(in[1].data<T>(), n));
    }
  });
}

/// Blocks shorter than this run as plain scalar loops.
inline constexpr int64_t kSmallBlock = 8;

/// Block form of unary_kernel for fused groups (see BlockKernel): n elements, unaligned pointers;
/// a scalar input (scalar[0]) is one value and fills the block.
template <class Op>
void unary_block(DType dtype, const void* const* in, const bool* scalar, void* out, int64_t n, DType) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::scalar(T{}));
      if (scalar[0]) {  // one value, repeated over the block
        const R v = Op::scalar(*static_cast<const T*>(in[0]));
        std::fill(static_cast<R*>(out), static_cast<R*>(out) + n, v);
        return;
      }
      if (kLightKernels || n < kSmallBlock) {  // scalar code: Eigen's vector set-up dominates tiny blocks
        const T* x = static_cast<const T*>(in[0]);
        R* y = static_cast<R*>(out);
        for (int64_t i = 0; i < n; ++i) y[i] = Op::scalar(x[i]);
        return;
      }
      if constexpr (!kLightKernels) {
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> x(static_cast<const T*>(in[0]), n);
        Eigen::Map<Eigen::Array<R, Eigen::Dynamic, 1>> y(static_cast<R*>(out), n);
        y = elementwise_detail::unary_expr<Op>(x);
      }
    }
  });
}

/// Block form of binary_kernel: a scalar operand (scalar[i]) is broadcast over the block.
template <class Op>
void binary_block(DType dtype, const void* const* in, const bool* scalar, void* out, int64_t n, DType) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::scalar(T{}, T{}));
      using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
      using Map = Eigen::Map<const Array>;
      const T* a = static_cast<const T*>(in[0]);
      const T* b = static_cast<const T*>(in[1]);
      if (kLightKernels || n < kSmallBlock) {
        // Scalar operands are read once: `out` may be the block a scalar operand lives in.
        const T a0 = a[0], b0 = b[0];
        const bool sa = scalar[0], sb = scalar[1];
        R* y = static_cast<R*>(out);
        for (int64_t i = 0; i < n; ++i) y[i] = Op::scalar(sa ? a0 : a[i], sb ? b0 : b[i]);
        return;
      }
      if constexpr (!kLightKernels) {
        Eigen::Map<Eigen::Array<R, Eigen::Dynamic, 1>> y(static_cast<R*>(out), n);
        if (scalar[0] && !scalar[1]) y = elementwise_detail::binary_expr<Op>(Array::Constant(n, a[0]), Map(b, n));
        else if (scalar[1] && !scalar[0]) y = elementwise_detail::binary_expr<Op>(Map(a, n), Array::Constant(n, b[0]));
        else if (scalar[0] && scalar[1])
          y = elementwise_detail::binary_expr<Op>(Array::Constant(n, a[0]), Array::Constant(n, b[0]));
        else y = elementwise_detail::binary_expr<Op>(Map(a, n), Map(b, n));
      }
    }
  });
}

namespace elementwise_detail {
/// y[i] = Op(v, x[i]) (kValueFirst) or Op(x[i], v), i < N: one fixed-size Eigen expression (one
/// packet op for N the packet size), with no run-time alignment or size handling.
template <int N, class Op, bool kValueFirst, class T, class R> inline void fixed_run(const T* x, T v, R* y) {
  using Array = Eigen::Array<T, N, 1>;
  Eigen::Map<Eigen::Array<R, N, 1>> out(y);
  if constexpr (kValueFirst) out = binary_expr<Op>(Array::Constant(v), Eigen::Map<const Array>(x));
  else out = binary_expr<Op>(Eigen::Map<const Array>(x), Array::Constant(v));
}

/// The same for i < n: whole packets, then a half and a quarter packet, then scalars. Runs are
/// short (a few packets): Eigen's dynamic-size loop, with its alignment peeling, costs more.
/// Floating types only: integer and bool runs take the scalar loop (the packet forms for every
/// dtype of the 17 binary primitives doubled the compile time of primitives/binary.cpp).
template <class Op, bool kValueFirst, class T, class R> inline void row_run(const T* x, T v, R* y, int64_t n) {
  int64_t i = 0;
  if constexpr (!kLightKernels && std::is_floating_point_v<T>) {
    constexpr int P = Eigen::internal::packet_traits<T>::size;
    for (; i + P <= n; i += P) fixed_run<P, Op, kValueFirst>(x + i, v, y + i);
    if constexpr (P >= 8) {
      if (i + P / 2 <= n) fixed_run<P / 2, Op, kValueFirst>(x + i, v, y + i), i += P / 2;
    }
    if constexpr (P >= 4) {
      if (i + P / 4 <= n) fixed_run<P / 4, Op, kValueFirst>(x + i, v, y + i), i += P / 4;
    }
  }
  for (; i < n; ++i) y[i] = kValueFirst ? Op::scalar(v, x[i]) : Op::scalar(x[i], v);
}

/// n elements against `values`, one per run of `row`, the first run entered at `offset`.
template <class Op, bool kValueFirst, class T, class R>
void row_runs(const T* x, const T* values, int64_t row, int64_t offset, R* y, int64_t n) {
  int64_t done = std::min(row - offset, n);
  row_run<Op, kValueFirst>(x, *values++, y, done);
  for (; done + row <= n; done += row) row_run<Op, kValueFirst>(x + done, *values++, y + done, row);
  if (done < n) row_run<Op, kValueFirst>(x + done, *values, y + done, n - done);
}
}  // namespace elementwise_detail

/// Row form of binary_block (see RowBlockKernel): each run of a row operand's value is a few
/// packet ops against the other operand, so the broadcast block is never filled.
template <class Op> void binary_row_block(DType dtype, const void* const* in, const bool* scalar, const bool* rows,
                                          int64_t row, int64_t offset, void* out, int64_t n, DType) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::dtypes.contains(dtype_of_v<T>)) {
      using R = decltype(Op::scalar(T{}, T{}));
      const T* a = static_cast<const T*>(in[0]);
      const T* b = static_cast<const T*>(in[1]);
      R* y = static_cast<R*>(out);
      if (!rows[0] && !scalar[0]) return elementwise_detail::row_runs<Op, false>(a, b, row, offset, y, n);
      if (!rows[1] && !scalar[1]) return elementwise_detail::row_runs<Op, true>(b, a, row, offset, y, n);
      // Both one value per run (rows or scalar): a fill per run. Scalars are read before anything
      // is written: `out` may be the block one lives in.
      const T a0 = a[0], b0 = b[0];
      for (int64_t done = 0, c = offset, r = 0; done < n; c = 0, ++r) {
        const int64_t run = std::min(row - c, n - done);
        std::fill(y + done, y + done + run, Op::scalar(rows[0] ? a[r] : a0, rows[1] ? b[r] : b0));
        done += run;
      }
    }
  });
}

}  // namespace fluxion::cpu
