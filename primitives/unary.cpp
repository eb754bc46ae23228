// Elementwise unary primitives: neg sin cos tan exp log log1p expm1 sqrt rsqrt tanh logistic abs
// sign floor ceil round round_nearest_even not stop_gradient. Each is one Op struct (scalar
// functor, optional vectorised Eigen form, independent reference) plus one registration line.
// Floating-point forms with a packet form come from backends/cpu/unary_packets.hpp: one value is
// computed as one lane of the packet form, so every path (vector body, tails, fused blocks,
// constant folding) gives the same bits; special values follow the C library
// (tests/test_special_values.cpp). Every other scalar form (integer paths, tan, abs, not,
// stop_gradient) is the shared functor of primitives/scalar_functions.hpp, the CUDA kernels' text.
#include <Eigen/Core>
#include <cmath>

#include "backends/cpu/unary_packets.hpp"
#include "primitives/scalar_functions.hpp"
#include "fluxion/lax.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "primitives/unary.hpp"

namespace fluxion::primitives {
namespace unary_family {

using LD = long double;  // the reference computes transcendental functions in extended precision

// Integer negation and abs wrap around like two's complement hardware instead of overflowing.
template <class T> T wrap_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(x));
}

namespace ops = cpu::unary_ops;                // backends/cpu/unary_packets.hpp
namespace shared = fluxion::scalar_functions;  // primitives/scalar_functions.hpp

/// Op::scalar and Op::array of a floating-point primitive from its packet operation F: one value
/// is lane 0 of F's packet form, so every kernel path gives the vector body's bits.
template <class F> struct PacketForm {
  using Packet = F;
  template <class T> static T scalar(T x) { return ops::apply_one<F>(x); }
  template <class A> static auto array(const A& a) { return ops::apply_array<F>(a); }
};

struct Neg {
  static constexpr const char* name = "neg";
  using Packet = ops::Neg;
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return shared::Neg::apply(x);
    else return ops::apply_one<ops::Neg>(x);
  }
  template <class A> static auto array(const A& a) {
    if constexpr (std::is_integral_v<typename A::Scalar>) return -a;  // psub(0, a): wraps
    else return ops::apply_array<ops::Neg>(a);
  }
  template <class T> static T reference(T x) {
    if constexpr (std::is_integral_v<T>) return wrap_neg(x);
    else return std::copysign(x, std::signbit(x) ? T(1) : T(-1));
  }  // the sign bit flipped
};
struct Sin : PacketForm<ops::Sin> {
  static constexpr const char* name = "sin";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::sin(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::cos(x));
  }
};
struct Cos : PacketForm<ops::Cos> {
  static constexpr const char* name = "cos";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::cos(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::neg(lax::mul(t, lax::sin(x)));
  }
};
struct Tan {
  static constexpr const char* name = "tan";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T scalar(T x) { return shared::Tan::apply(x); }
  template <class T> static T reference(T x) { return T(std::sin(LD(x)) / std::cos(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::add(scalar_like(y, 1), lax::mul(y, y)));
  }
};
struct Exp : PacketForm<ops::Exp> {  // 0 below -87 (f32) and -708 (f64): backends/cpu/special_functions.hpp
  static constexpr const char* name = "exp";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::exp(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, y);
  }
};
struct Log : PacketForm<ops::Log> {
  static constexpr const char* name = "log";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::log(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::div(t, x);
  }
};
struct Log1p : PacketForm<ops::Log1p> {
  static constexpr const char* name = "log1p";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::log1p(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::div(t, lax::add(x, scalar_like(x, 1)));
  }
};
struct Expm1 : PacketForm<ops::Expm1> {
  static constexpr const char* name = "expm1";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::expm1(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::add(y, scalar_like(y, 1)));
  }
};
struct Sqrt : PacketForm<ops::Sqrt> {
  static constexpr const char* name = "sqrt";
  static constexpr DTypeSet dtypes = kFloating;
  // IEEE's correctly rounded sqrt in T: a long-double root rounded again to f64 is not always.
  template <class T> static T reference(T x) { return std::sqrt(x); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::div(t, lax::mul(y, scalar_like(y, 2)));
  }
};
struct Rsqrt : PacketForm<ops::Rsqrt> {
  static constexpr const char* name = "rsqrt";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(LD(1) / std::sqrt(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::mul(lax::div(y, x), scalar_like(x, -0.5)));
  }
};
struct Tanh : PacketForm<ops::Tanh> {
  static constexpr const char* name = "tanh";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::tanh(LD(x))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::sub(scalar_like(y, 1), lax::mul(y, y)));
  }
};
struct Logistic : PacketForm<ops::Logistic> {
  static constexpr const char* name = "logistic";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(LD(1) / (LD(1) + std::exp(-LD(x)))); }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::mul(y, lax::sub(scalar_like(y, 1), y)));
  }
};
struct Abs {
  static constexpr const char* name = "abs";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x) { return shared::Abs::apply(x); }
  template <class T> static T reference(T x) { return x < T(0) ? reference_neg(x) : (x == T(0) ? T(0) : x); }
  template <class T> static T reference_neg(T x) {
    if constexpr (std::is_integral_v<T>) return wrap_neg(x);
    else return T(0) - x;
  }
  static Tensor derivative(const Tensor& x, const Tensor& y, const Tensor& t) {
    (void)x;
    (void)y;
    return lax::mul(t, lax::sign(x));
  }
};
struct Sign {  // ±0 and NaN map to themselves (XLA's sign)
  static constexpr const char* name = "sign";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return shared::Sign::apply(x);
    else return ops::apply_one<ops::Sign>(x);
  }
  template <class A> static auto array(const A& a) {
    if constexpr (std::is_integral_v<typename A::Scalar>) return a.sign();
    else return ops::apply_array<ops::Sign>(a);
  }
  template <class T> static T reference(T x) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x) || x == T(0)) return x;
    return T((x > T(0)) - (x < T(0)));
  }
};
struct Floor : PacketForm<ops::Floor> {
  static constexpr const char* name = "floor";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::floor(LD(x))); }
};
struct Ceil : PacketForm<ops::Ceil> {
  static constexpr const char* name = "ceil";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) { return T(std::ceil(LD(x))); }
};
struct Round : PacketForm<ops::Round> {  // halfway cases away from zero (lax.round's default)
  static constexpr const char* name = "round";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) {
    LD a = std::floor(std::fabs(LD(x)) + LD(0.5));
    return T(std::copysign(a, LD(x)));
  }
};
struct RoundNearestEven : PacketForm<ops::RoundEven> {  // halfway cases to even (numpy's and jnp's round)
  static constexpr const char* name = "round_nearest_even";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T reference(T x) {  // the nearest integer; a tie goes to the even one
    const LD f = std::floor(LD(x)), d = LD(x) - f;
    const LD r = d < LD(0.5) ? f : d > LD(0.5) ? f + 1 : (std::fmod(f, LD(2)) == 0 ? f : f + 1);
    return T(std::copysign(r, LD(x)));
  }
};
struct Not {  // logical on bool, bitwise on integers
  static constexpr const char* name = "not";
  static constexpr DTypeSet dtypes = kIntegerOrBool;
  template <class T> static T scalar(T x) { return shared::Not::apply(x); }
  template <class T> static T reference(T x) {
    if constexpr (std::is_same_v<T, bool>) return x ? false : true;
    else return T(-1) - x;
  }
};
struct StopGradient {  // identity whose derivative is zero; eager evaluation is a view
  static constexpr const char* name = "stop_gradient";
  static constexpr DTypeSet dtypes = kAny;
  template <class T> static T scalar(T x) { return shared::StopGradient::apply(x); }
  template <class T> static T reference(T x) { return x; }
};

// neg is its own transpose.
void neg_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>&,
                   const std::vector<AbstractValue>&, const Params&, std::vector<Tensor>& cts_in) {
  cts_in[0] = cts_out[0].defined() ? lax::neg(cts_out[0]) : Tensor();
}

// Each handle: the Op's builder (unary_builder: shape, kernels, CPU lowering, batching) plus its
// traits and differentiation rules. Non-differentiable primitives (floor, sign, ...) get
// zero_jvp_rule, like JAX; stop_gradient too, which is the point of it (and its eager form is a
// view).
#define FLUXION_UNARY(fn, Op, rules)                               \
  const Primitive& fn##_p() {                                      \
    static const Primitive& p = unary_builder<Op>() rules.build(); \
    return p;                                                      \
  }
FLUXION_UNARY(neg, Neg, .linear().jvp(&linear_jvp_rule).transpose(&neg_transpose))
FLUXION_UNARY(sin, Sin, .jvp(&unary_jvp_rule<Sin>))
FLUXION_UNARY(cos, Cos, .jvp(&unary_jvp_rule<Cos>))
FLUXION_UNARY(tan, Tan, .jvp(&unary_jvp_rule<Tan>))
FLUXION_UNARY(exp, Exp, .jvp(&unary_jvp_rule<Exp>))
FLUXION_UNARY(log, Log, .jvp(&unary_jvp_rule<Log>))
FLUXION_UNARY(log1p, Log1p, .jvp(&unary_jvp_rule<Log1p>))
FLUXION_UNARY(expm1, Expm1, .jvp(&unary_jvp_rule<Expm1>))
FLUXION_UNARY(sqrt, Sqrt, .jvp(&unary_jvp_rule<Sqrt>))
FLUXION_UNARY(rsqrt, Rsqrt, .jvp(&unary_jvp_rule<Rsqrt>))
FLUXION_UNARY(tanh, Tanh, .jvp(&unary_jvp_rule<Tanh>))
FLUXION_UNARY(logistic, Logistic, .jvp(&unary_jvp_rule<Logistic>))
FLUXION_UNARY(abs, Abs, .jvp(&unary_jvp_rule<Abs>))
FLUXION_UNARY(sign, Sign, .jvp(&zero_jvp_rule))
FLUXION_UNARY(floor, Floor, .jvp(&zero_jvp_rule))
FLUXION_UNARY(ceil, Ceil, .jvp(&zero_jvp_rule))
FLUXION_UNARY(round, Round, .jvp(&zero_jvp_rule))
FLUXION_UNARY(round_nearest_even, RoundNearestEven, .jvp(&zero_jvp_rule))
FLUXION_UNARY(logical_not, Not, .jvp(&zero_jvp_rule))
FLUXION_UNARY(stop_gradient, StopGradient, .view().jvp(&zero_jvp_rule))
#undef FLUXION_UNARY

}  // namespace unary_family

void register_unary(std::vector<const Primitive*>& list) {
  using namespace unary_family;
  list.insert(list.end(),
              {&neg_p(),         &sin_p(),          &cos_p(),   &tan_p(),   &exp_p(),   &log_p(),
               &log1p_p(),       &expm1_p(),        &sqrt_p(),  &rsqrt_p(), &tanh_p(),  &logistic_p(),
               &abs_p(),         &sign_p(),         &floor_p(), &ceil_p(),  &round_p(), &round_nearest_even_p(),
               &logical_not_p(), &stop_gradient_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {
using namespace fluxion::primitives::unary_family;
Tensor neg(const Tensor& x) { return bind1(neg_p(), {x}); }
Tensor sin(const Tensor& x) { return bind1(sin_p(), {x}); }
Tensor cos(const Tensor& x) { return bind1(cos_p(), {x}); }
Tensor tan(const Tensor& x) { return bind1(tan_p(), {x}); }
Tensor exp(const Tensor& x) { return bind1(exp_p(), {x}); }
Tensor log(const Tensor& x) { return bind1(log_p(), {x}); }
Tensor log1p(const Tensor& x) { return bind1(log1p_p(), {x}); }
Tensor expm1(const Tensor& x) { return bind1(expm1_p(), {x}); }
Tensor sqrt(const Tensor& x) { return bind1(sqrt_p(), {x}); }
Tensor rsqrt(const Tensor& x) { return bind1(rsqrt_p(), {x}); }
Tensor tanh(const Tensor& x) { return bind1(tanh_p(), {x}); }
Tensor logistic(const Tensor& x) { return bind1(logistic_p(), {x}); }
Tensor abs(const Tensor& x) { return bind1(abs_p(), {x}); }
Tensor sign(const Tensor& x) { return bind1(sign_p(), {x}); }
Tensor floor(const Tensor& x) { return bind1(floor_p(), {x}); }
Tensor ceil(const Tensor& x) { return bind1(ceil_p(), {x}); }
Tensor round(const Tensor& x) { return bind1(round_p(), {x}); }
Tensor round(const Tensor& x, RoundingMethod method) {
  return bind1(method == RoundingMethod::to_nearest_even ? round_nearest_even_p() : round_p(), {x});
}
Tensor logical_not(const Tensor& x) { return bind1(logical_not_p(), {x}); }
Tensor stop_gradient(const Tensor& x) { return bind1(stop_gradient_p(), {x}); }
}  // namespace fluxion::lax
