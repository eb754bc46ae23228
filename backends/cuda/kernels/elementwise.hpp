/// The elementwise kernels of the CUDA backend: unary and binary primitives, select and
/// convert_element_type. Each body applies the primitive's scalar functor
/// (primitives/scalar_functions.hpp, the same text as the CPU's scalar forms and jit's kernels) to
/// one output element. Operands are contiguous; a rank-0 operand of a binary primitive or a rank-0
/// pred of select is broadcast (stride 0), as the shape rules allow.
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "primitives/binary.hpp"
#include "primitives/conversion.hpp"
#include "primitives/scalar_functions.hpp"
#include "primitives/unary.hpp"

namespace fluxion::cuda {
namespace elementwise_detail {

template <class F, class T, class R> struct UnaryBody {
  const T* x;
  R* y;
  FLUXION_HD void operator()(fx_index i) const { y[i] = F::apply(x[i]); }
};

/// sa, sb: 1, or 0 for a broadcast rank-0 operand.
template <class F, class T, class R> struct BinaryBody {
  const T* a;
  const T* b;
  R* y;
  fx_index sa, sb;
  FLUXION_HD void operator()(fx_index i) const { y[i] = F::apply(a[i * sa], b[i * sb]); }
};

/// sp: 1, or 0 for a rank-0 pred.
template <class T> struct SelectBody {
  const bool* pred;
  const T* on_true;
  const T* on_false;
  T* y;
  fx_index sp;
  FLUXION_HD void operator()(fx_index i) const {
    y[i] = scalar_functions::Select::apply(pred[i * sp], on_true[i], on_false[i]);
  }
};

template <class From, class To> struct ConvertBody {
  const From* x;
  To* y;
  // Halves are read as their exact float (fluxion/half.hpp) and written by their one rounding constructor.
  FLUXION_HD void operator()(fx_index i) const {
    y[i] = scalar_functions::ConvertElementType<To>::apply(to_compute(x[i]));
  }
};

/// Whether the dtype set with bits `allowed` (a primitive's shape rule) holds T's dtype.
template <class T> constexpr bool accepts(uint8_t allowed) { return (allowed >> static_cast<int>(dtype_of_v<T>)) & 1; }

/// Fails for a dtype the primitive's shape rule rejects (the kernel was called without the rule).
[[noreturn]] inline void unexpected_dtype(DType d) {
  detail::fail<DTypeError>("cuda elementwise kernel", "internal: got dtype ", d,
                           ", which the primitive's shape rule rejects. Bind the primitive (fx::bind) to check it.");
}

/// Kernel of a unary primitive whose functor F accepts the dtypes in the bit set `kAllowed`.
template <class Exec, class F, uint8_t kAllowed>
void unary_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (accepts<T>(kAllowed)) {
      using R = decltype(F::apply(T{}));
      Exec::for_each(out[0].size(), UnaryBody<F, T, R>{in[0].data<T>(), out[0].mutable_data<R>()});
    } else {
      unexpected_dtype(in[0].dtype());
    }
  });
}

/// Kernel of a binary primitive: equal shapes, or one (or both) operands rank 0.
template <class Exec, class F, uint8_t kAllowed>
void binary_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (accepts<T>(kAllowed)) {
      using R = decltype(F::apply(T{}, T{}));
      const fx_index sa = in[0].ndim() == 0 ? 0 : 1, sb = in[1].ndim() == 0 ? 0 : 1;
      Exec::for_each(out[0].size(),
                     BinaryBody<F, T, R>{in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<R>(), sa, sb});
    } else {
      unexpected_dtype(in[0].dtype());
    }
  });
}

template <class Exec> void select_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const fx_index sp = in[0].ndim() == 0 ? 0 : 1;
    Exec::for_each(out[0].size(),
                   SelectBody<T>{in[0].data<bool>(), in[1].data<T>(), in[2].data<T>(), out[0].mutable_data<T>(), sp});
  });
}

// Every storage dtype, f16 and bf16 included: the one kernel that reads and writes half values.
template <class Exec> void convert_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_storage_dtype(in[0].dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_storage_dtype(out[0].dtype(), [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      Exec::for_each(out[0].size(), ConvertBody<From, To>{in[0].data<From>(), out[0].mutable_data<To>()});
    });
  });
}

template <class Exec, class F, uint8_t kAllowed> void set_unary(const Primitive& p) {
  runtime::set_kernel(p, Exec::backend, &unary_kernel<Exec, F, kAllowed>);
}
template <class Exec, class F, uint8_t kAllowed> void set_binary(const Primitive& p) {
  runtime::set_kernel(p, Exec::backend, &binary_kernel<Exec, F, kAllowed>);
}

}  // namespace elementwise_detail

/// Files this family's kernels under Exec::backend. The dtype sets are the shape rules' (Op::dtypes
/// in primitives/unary.cpp and binary.cpp); a functor is instantiated only for those.
template <class Exec> void install_elementwise_kernels() {
  using namespace elementwise_detail;
  namespace u = primitives::unary_family;
  namespace b = primitives::binary_family;
  namespace c = primitives::conversion_family;
  namespace s = scalar_functions;
  constexpr uint8_t fl = kFloating.bits, num = kNumeric.bits, intb = kIntegerOrBool.bits, any = kAny.bits;

  set_unary<Exec, s::Neg, num>(u::neg_p());
  set_unary<Exec, s::Sin, fl>(u::sin_p());
  set_unary<Exec, s::Cos, fl>(u::cos_p());
  set_unary<Exec, s::Tan, fl>(u::tan_p());
  set_unary<Exec, s::Exp, fl>(u::exp_p());
  set_unary<Exec, s::Log, fl>(u::log_p());
  set_unary<Exec, s::Log1p, fl>(u::log1p_p());
  set_unary<Exec, s::Expm1, fl>(u::expm1_p());
  set_unary<Exec, s::Sqrt, fl>(u::sqrt_p());
  set_unary<Exec, s::Rsqrt, fl>(u::rsqrt_p());
  set_unary<Exec, s::Tanh, fl>(u::tanh_p());
  set_unary<Exec, s::Logistic, fl>(u::logistic_p());
  set_unary<Exec, s::Abs, num>(u::abs_p());
  set_unary<Exec, s::Sign, num>(u::sign_p());
  set_unary<Exec, s::Floor, fl>(u::floor_p());
  set_unary<Exec, s::Ceil, fl>(u::ceil_p());
  set_unary<Exec, s::Round, fl>(u::round_p());
  set_unary<Exec, s::RoundNearestEven, fl>(u::round_nearest_even_p());
  set_unary<Exec, s::Not, intb>(u::logical_not_p());
  set_unary<Exec, s::StopGradient, any>(u::stop_gradient_p());

  set_binary<Exec, s::Add, num>(b::add_p());
  set_binary<Exec, s::Sub, num>(b::sub_p());
  set_binary<Exec, s::Mul, num>(b::mul_p());
  set_binary<Exec, s::Div, num>(b::div_p());
  set_binary<Exec, s::Pow, fl>(b::pow_p());
  set_binary<Exec, s::Max, num>(b::max_p());
  set_binary<Exec, s::Min, num>(b::min_p());
  set_binary<Exec, s::Atan2, fl>(b::atan2_p());
  set_binary<Exec, s::Rem, num>(b::rem_p());
  set_binary<Exec, s::Lt, num>(b::lt_p());
  set_binary<Exec, s::Le, num>(b::le_p());
  set_binary<Exec, s::Gt, num>(b::gt_p());
  set_binary<Exec, s::Ge, num>(b::ge_p());
  set_binary<Exec, s::Eq, any>(b::eq_p());
  set_binary<Exec, s::Ne, any>(b::ne_p());
  set_binary<Exec, s::LogicalAnd, intb>(b::logical_and_p());
  set_binary<Exec, s::LogicalOr, intb>(b::logical_or_p());

  runtime::set_kernel(c::select_p(), Exec::backend, &select_kernel<Exec>);
  runtime::set_kernel(c::convert_element_type_p(), Exec::backend, &convert_kernel<Exec>);
}

}  // namespace fluxion::cuda
