// Elementwise binary primitives: add sub mul div pow max min atan2 rem lt le gt ge eq ne and or.
// Each is one Op struct (scalar functor shared by CPU and CUDA: primitives/scalar_functions.hpp;
// optional vectorised Eigen form; independent reference) plus one registration line. Integer
// arithmetic never has undefined behaviour: add/sub/mul wrap, x/0 = -1, x%0 = x,
// INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0 (XLA's).
#include <cmath>
#include <type_traits>

#include "backends/cpu/binary_ops.hpp"
#include "backends/cpu/special_functions.hpp"
#include "fluxion/lax.hpp"
#include "primitives/binary.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "primitives/scalar_functions.hpp"

namespace fluxion::primitives {
namespace binary_family {

using LD = long double;                        // the reference computes floating results in extended precision
namespace shared = fluxion::scalar_functions;  // the scalar forms (CPU and CUDA)

template <class T> using Unsigned = std::make_unsigned_t<T>;

// The Eigen form is used only for floating element types (integer + - * must wrap, which the
// scalar functor does through unsigned arithmetic).
template <class A> using IfFloating = std::enable_if_t<std::is_floating_point_v<typename A::Scalar>, int>;

// The reference's two's complement wrap-around arithmetic, computed in unsigned (where overflow
// is defined).
template <class T> T wrap_add(T x, T y) {
  return static_cast<T>(static_cast<Unsigned<T>>(x) + static_cast<Unsigned<T>>(y));
}
template <class T> T wrap_sub(T x, T y) {
  return static_cast<T>(static_cast<Unsigned<T>>(x) - static_cast<Unsigned<T>>(y));
}
template <class T> T wrap_neg(T x) { return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x)); }

// |x| as an unsigned value (exact for the most negative value too).
template <class T> Unsigned<T> magnitude(T x) {
  return x < 0 ? Unsigned<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x)) : static_cast<Unsigned<T>>(x);
}

template <class T> bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

struct Add {
  static constexpr const char* name = "add";
  using Packet = cpu::binary_ops::Add;  // the fused register-program operation
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Add::apply(x, y); }
  template <class A, class B, IfFloating<A> = 0> static auto array(const A& a, const B& b) { return a + b; }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_integral_v<T>) return wrap_sub(x, wrap_neg(y));
    else return T(LD(x) + LD(y));
  }
};
struct Sub {
  static constexpr const char* name = "sub";
  using Packet = cpu::binary_ops::Sub;  // the fused register-program operation
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Sub::apply(x, y); }
  template <class A, class B, IfFloating<A> = 0> static auto array(const A& a, const B& b) { return a - b; }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_integral_v<T>) return wrap_add(x, wrap_neg(y));
    else return T(LD(x) - LD(y));
  }
};
struct Mul {
  static constexpr const char* name = "mul";
  using Packet = cpu::binary_ops::Mul;  // the fused register-program operation
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Mul::apply(x, y); }
  template <class A, class B, IfFloating<A> = 0> static auto array(const A& a, const B& b) { return a * b; }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_integral_v<T>) {  // |x|*|y| in unsigned, then the sign
      Unsigned<T> m = static_cast<Unsigned<T>>(magnitude(x) * magnitude(y));
      return (x < 0) != (y < 0) ? static_cast<T>(Unsigned<T>(0) - m) : static_cast<T>(m);
    } else {
      return T(LD(x) * LD(y));
    }
  }
};
struct Div {  // integers: truncating; x/0 = -1, INT_MIN/-1 = INT_MIN
  static constexpr const char* name = "div";
  using Packet = cpu::binary_ops::Div;  // the fused register-program operation
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Div::apply(x, y); }
  template <class A, class B, IfFloating<A> = 0> static auto array(const A& a, const B& b) { return a / b; }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_integral_v<T>) {  // quotient of magnitudes, then the sign
      if (y == T(0)) return T(-1);
      Unsigned<T> q = magnitude(x) / magnitude(y);
      return (x < 0) != (y < 0) ? static_cast<T>(Unsigned<T>(0) - q) : static_cast<T>(q);
    } else {
      return T(LD(x) / LD(y));
    }
  }
};
struct Rem {  // sign of the dividend (C fmod); integers: x%0 = x, INT_MIN%-1 = 0
  static constexpr const char* name = "rem";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Rem::apply(x, y); }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_integral_v<T>) {  // remainder of magnitudes, then the dividend's sign
      if (y == T(0)) return x;
      Unsigned<T> r = magnitude(x) % magnitude(y);
      return x < 0 ? static_cast<T>(Unsigned<T>(0) - r) : static_cast<T>(r);
    } else {
      return T(std::fmod(LD(x), LD(y)));
    }
  }
};
// The C library's pow, element by element: Eigen 3.4's vectorised pow was measured 99 ulp (f32)
// and 946 ulp (f64) off over ordinary arguments, and gets the sign of pow(-0, odd), pow(-inf,
// odd) and of underflowing odd powers of negative numbers wrong (pow(-0.0, -1.0) = +inf).
struct Pow {
  static constexpr const char* name = "pow";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T scalar(T x, T y) { return shared::Pow::apply(x, y); }
  template <class T> static T reference(T x, T y) { return T(std::pow(LD(x), LD(y))); }
};
struct Atan2 {
  static constexpr const char* name = "atan2";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T scalar(T x, T y) { return shared::Atan2::apply(x, y); }
  template <class T> static T reference(T x, T y) { return T(std::atan2(LD(x), LD(y))); }
};
// max (kMax) or min of floats, NaN-propagating (a NaN operand is the result, the first if both),
// and of two equal operands (+0 and -0) the first, as numpy's maximum and the reference: one rule
// for packets and single elements. Eigen 3.4's PropagateNaN functors return the second of equal
// operands in packets and the first in their scalar form, so a vector body and its tail
// disagreed on the sign of max(+0, -0).
template <bool kMax> struct Extremum {
  template <class T> T operator()(const T& a, const T& b) const {  // one element: the shared functor
    if constexpr (kMax) return shared::Max::apply(a, b);
    else return shared::Min::apply(a, b);
  }
  template <class P> P packetOp(const P& a, const P& b) const {
    namespace ei = Eigen::internal;
    P r = kMax ? cpu::select_lt(a, b, b, a) : cpu::select_lt(b, a, b, a);  // b only when better
    r = ei::pselect(ei::pcmp_eq(b, b), r, b);
    return ei::pselect(ei::pcmp_eq(a, a), r, a);
  }
};
}  // namespace binary_family
}  // namespace fluxion::primitives
namespace Eigen::internal {  // vectorised (declared before any use)
template <bool kMax> struct functor_traits<fluxion::primitives::binary_family::Extremum<kMax>> {
  enum { Cost = 6, PacketAccess = 1 };
};
}  // namespace Eigen::internal
namespace fluxion::primitives {
namespace binary_family {

struct Max {  // NaN-propagating; of equal operands (+0, -0) the first
  static constexpr const char* name = "max";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Max::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) {
    if constexpr (std::is_floating_point_v<typename A::Scalar>) return a.binaryExpr(b, Extremum<true>());
    else return a.max(b);
  }
  template <class T> static T reference(T x, T y) {
    if (is_nan(x) || is_nan(y)) return x + y;  // NaN + anything is NaN
    return x < y ? y : x;
  }
};
struct Min {  // NaN-propagating; of equal operands (+0, -0) the first
  static constexpr const char* name = "min";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static T scalar(T x, T y) { return shared::Min::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) {
    if constexpr (std::is_floating_point_v<typename A::Scalar>) return a.binaryExpr(b, Extremum<false>());
    else return a.min(b);
  }
  template <class T> static T reference(T x, T y) {
    if (is_nan(x) || is_nan(y)) return x + y;
    return y < x ? y : x;
  }
};

// Comparisons: the result is bool; NaN compares unordered (only ne is true).
struct Lt {
  static constexpr const char* name = "lt";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static bool scalar(T x, T y) { return shared::Lt::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) { return a < b; }
  template <class T> static bool reference(T x, T y) { return y > x; }
};
struct Le {
  static constexpr const char* name = "le";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static bool scalar(T x, T y) { return shared::Le::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) { return a <= b; }
  template <class T> static bool reference(T x, T y) { return y >= x; }
};
struct Gt {
  static constexpr const char* name = "gt";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static bool scalar(T x, T y) { return shared::Gt::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) { return a > b; }
  template <class T> static bool reference(T x, T y) { return y < x; }
};
struct Ge {
  static constexpr const char* name = "ge";
  static constexpr DTypeSet dtypes = kNumeric;
  template <class T> static bool scalar(T x, T y) { return shared::Ge::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) { return a >= b; }
  template <class T> static bool reference(T x, T y) { return y <= x; }
};
struct Eq {
  static constexpr const char* name = "eq";
  static constexpr DTypeSet dtypes = kAny;
  template <class T> static bool scalar(T x, T y) { return shared::Eq::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) { return a == b; }
  template <class T> static bool reference(T x, T y) { return !(x != y); }
};
struct Ne {
  static constexpr const char* name = "ne";
  static constexpr DTypeSet dtypes = kAny;
  template <class T> static bool scalar(T x, T y) { return shared::Ne::apply(x, y); }
  template <class A, class B> static auto array(const A& a, const B& b) { return a != b; }
  template <class T> static bool reference(T x, T y) { return !(x == y); }
};

// Logical on bool, bitwise on integers.
struct And {
  static constexpr const char* name = "and";
  static constexpr DTypeSet dtypes = kIntegerOrBool;
  template <class T> static T scalar(T x, T y) { return shared::LogicalAnd::apply(x, y); }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) return x ? y : false;
    else return T(~(~x | ~y));
  }
};
struct Or {
  static constexpr const char* name = "or";
  static constexpr DTypeSet dtypes = kIntegerOrBool;
  template <class T> static T scalar(T x, T y) { return shared::LogicalOr::apply(x, y); }
  template <class T> static T reference(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) return x ? true : y;
    else return T(~(~x & ~y));
  }
};

// ---- Differentiation rules ----
// Rules run under the parent interpreter and use lax ops only, so they are differentiated again
// for higher derivatives. Undefined tangents/cotangents are symbolic zeros and stay symbolic.
// Operands may be rank 0 with a rank-n result: contributions of a rank-0 tangent broadcast
// through the primitive itself, and transposes sum back with unbroadcast.

// The primal output; true when the output is floating (integer/bool results have zero tangents).
bool primal_out(const Primitive& self, const std::vector<Tensor>& primals, const Params& params,
                std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(1, Tensor());
  return is_floating(primals_out[0].dtype());
}

// a + b of two tangent contributions (undefined = zero), shaped like the result.
Tensor add_tangents(const Tensor& a, const Tensor& b, const Shape& out_shape) {
  if (!a.defined()) return broadcast_scalar_to(b, out_shape);
  if (!b.defined()) return broadcast_scalar_to(a, out_shape);
  return broadcast_scalar_to(lax::add(a, b), out_shape);
}

// x with its zeros replaced by ones (keeps log finite where x == 0, like JAX's _replace_zero).
Tensor replace_zero(const Tensor& x) {
  return lax::select(lax::eq(x, scalar_like(x, 0)), ones(x.shape(), x.dtype()), x);
}

// Fails when a transpose rule is asked to transpose in an input it is not linear in.
void nonlinear_input(const Primitive& self, size_t i) {
  detail::fail<Error>(self.name.c_str(), "internal: transpose in operand ", i,
                      ", in which the primitive is not linear (a non-linear Jaxpr was transposed).");
}

void add_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  tangents_out[0] = add_tangents(tangents[0], tangents[1], primals_out[0].shape());
}

void sub_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Shape& shape = primals_out[0].shape();
  const Tensor &ta = tangents[0], &tb = tangents[1];
  if (ta.defined() && tb.defined()) tangents_out[0] = broadcast_scalar_to(lax::sub(ta, tb), shape);
  else if (ta.defined()) tangents_out[0] = broadcast_scalar_to(ta, shape);
  else if (tb.defined()) tangents_out[0] = broadcast_scalar_to(lax::neg(tb), shape);
}

void add_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!inputs[0].defined()) cts_in[0] = unbroadcast(ct, in_avals[0]);
  if (!inputs[1].defined()) cts_in[1] = unbroadcast(ct, in_avals[1]);
}

void sub_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  if (!inputs[0].defined()) cts_in[0] = unbroadcast(ct, in_avals[0]);
  if (!inputs[1].defined()) cts_in[1] = unbroadcast(lax::neg(ct), in_avals[1]);
}

void mul_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  Tensor da = tangents[0].defined() ? lax::mul(tangents[0], primals[1]) : Tensor();
  Tensor db = tangents[1].defined() ? lax::mul(primals[0], tangents[1]) : Tensor();
  tangents_out[0] = add_tangents(da, db, primals_out[0].shape());
}

// mul is bilinear: in a linear Jaxpr exactly one operand is linear, the other a known value.
void mul_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  const Tensor& ct = cts_out[0];
  if (!inputs[0].defined() && !inputs[1].defined()) nonlinear_input(self, 1);
  if (!ct.defined()) return;
  if (!inputs[0].defined()) cts_in[0] = unbroadcast(lax::mul(ct, inputs[1]), in_avals[0]);
  else cts_in[1] = unbroadcast(lax::mul(inputs[0], ct), in_avals[1]);
}

// d(a/b) = t_a / b - t_b * out / b.
void div_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &b = primals[1], &out = primals_out[0];
  Tensor da = tangents[0].defined() ? lax::div(tangents[0], b) : Tensor();
  Tensor db = tangents[1].defined() ? lax::neg(lax::mul(tangents[1], lax::div(out, b))) : Tensor();
  tangents_out[0] = add_tangents(da, db, out.shape());
}

// div is linear in its numerator only.
void div_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>& in_avals, const Params&, std::vector<Tensor>& cts_in) {
  if (!inputs[1].defined()) nonlinear_input(self, 1);
  if (!cts_out[0].defined()) return;
  cts_in[0] = unbroadcast(lax::div(cts_out[0], inputs[1]), in_avals[0]);
}

// d(x^y) = t_x * y x^(y-1) + t_y * log(x) x^y, like JAX: the x-derivative is 0 where y == 0 and the
// y-derivative 0 where x == 0 (instead of NaN).
void pow_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &x = primals[0], &y = primals[1], &out = primals_out[0];
  Tensor dx, dy;
  if (tangents[0].defined()) {
    Tensor y_zero = lax::eq(y, scalar_like(y, 0));
    Tensor y_safe = lax::select(y_zero, ones(y.shape(), y.dtype()), y);
    Tensor general = lax::mul(y_safe, lax::pow(x, lax::sub(y, scalar_like(y, 1))));
    Tensor jac = lax::select(y_zero, zeros(out.shape(), out.dtype()), general);
    dx = lax::mul(tangents[0], jac);
  }
  if (tangents[1].defined()) dy = lax::mul(tangents[1], lax::mul(lax::log(replace_zero(x)), out));
  tangents_out[0] = add_tangents(dx, dy, out.shape());
}

// The derivative goes to the selected operand; ties split it half and half, like JAX.
// coef(a) = [a == out] / (1 + [b == out]).
Tensor balanced_coef(const Tensor& a, const Tensor& b, const Tensor& out) {
  Tensor hit_a = lax::convert_element_type(lax::eq(a, out), out.dtype());
  Tensor hit_b = lax::convert_element_type(lax::eq(b, out), out.dtype());
  return lax::div(hit_a, lax::add(hit_b, scalar_like(out, 1)));
}

void minmax_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &a = primals[0], &b = primals[1], &out = primals_out[0];
  Tensor da = tangents[0].defined() ? lax::mul(tangents[0], balanced_coef(a, b, out)) : Tensor();
  Tensor db = tangents[1].defined() ? lax::mul(tangents[1], balanced_coef(b, a, out)) : Tensor();
  tangents_out[0] = add_tangents(da, db, out.shape());
}

// atan2(a, b): d = (b t_a - a t_b) / (a^2 + b^2).
void atan2_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
               const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  const Tensor &a = primals[0], &b = primals[1];
  Tensor denom = lax::add(lax::mul(a, a), lax::mul(b, b));
  Tensor da = tangents[0].defined() ? lax::mul(tangents[0], lax::div(b, denom)) : Tensor();
  Tensor db = tangents[1].defined() ? lax::neg(lax::mul(tangents[1], lax::div(a, denom))) : Tensor();
  tangents_out[0] = add_tangents(da, db, primals_out[0].shape());
}

// rem(x, y) = x - y * trunc(x / y): d = t_x - t_y * trunc(x / y), trunc(q) = sign(q) floor(|q|).
void rem_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  if (!primal_out(self, primals, params, primals_out, tangents_out)) return;
  Tensor dy;
  if (tangents[1].defined()) {
    Tensor q = lax::div(primals[0], primals[1]);
    Tensor trunc = lax::mul(lax::sign(q), lax::floor(lax::abs(q)));
    dy = lax::neg(lax::mul(tangents[1], trunc));
  }
  tangents_out[0] = add_tangents(tangents[0], dy, primals_out[0].shape());
}

// Each handle: the Op's builder (binary_builder: shape, kernels, CPU lowering, batching) plus its
// traits and differentiation rules.
#define FLUXION_BINARY(fn, Op, rules)                               \
  const Primitive& fn##_p() {                                       \
    static const Primitive& p = binary_builder<Op>() rules.build(); \
    return p;                                                       \
  }
FLUXION_BINARY(add, Add, .linear().commutative().jvp(&add_jvp).transpose(&add_transpose))
FLUXION_BINARY(sub, Sub, .linear().jvp(&sub_jvp).transpose(&sub_transpose))
FLUXION_BINARY(mul, Mul, .commutative().jvp(&mul_jvp).transpose(&mul_transpose))
FLUXION_BINARY(div, Div, .jvp(&div_jvp).transpose(&div_transpose))
FLUXION_BINARY(pow, Pow, .jvp(&pow_jvp))
FLUXION_BINARY(max, Max, .commutative().jvp(&minmax_jvp))
FLUXION_BINARY(min, Min, .commutative().jvp(&minmax_jvp))
FLUXION_BINARY(atan2, Atan2, .jvp(&atan2_jvp))
FLUXION_BINARY(rem, Rem, .jvp(&rem_jvp))
FLUXION_BINARY(lt, Lt, .jvp(&zero_jvp_rule))
FLUXION_BINARY(le, Le, .jvp(&zero_jvp_rule))
FLUXION_BINARY(gt, Gt, .jvp(&zero_jvp_rule))
FLUXION_BINARY(ge, Ge, .jvp(&zero_jvp_rule))
FLUXION_BINARY(eq, Eq, .commutative().jvp(&zero_jvp_rule))
FLUXION_BINARY(ne, Ne, .commutative().jvp(&zero_jvp_rule))
FLUXION_BINARY(logical_and, And, .commutative().jvp(&zero_jvp_rule))
FLUXION_BINARY(logical_or, Or, .commutative().jvp(&zero_jvp_rule))
#undef FLUXION_BINARY

}  // namespace binary_family

void register_binary(std::vector<const Primitive*>& list) {
  using namespace binary_family;
  list.insert(list.end(), {&add_p(), &sub_p(), &mul_p(), &div_p(), &pow_p(), &max_p(), &min_p(), &atan2_p(), &rem_p(),
                           &lt_p(), &le_p(), &gt_p(), &ge_p(), &eq_p(), &ne_p(), &logical_and_p(), &logical_or_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {
#define FLUXION_BINARY_LAX(fn)                                                   \
  Tensor fn(const Tensor& a, const Tensor& b) {                                  \
    return fluxion::bind1(fluxion::primitives::binary_family::fn##_p(), {a, b}); \
  }
FLUXION_BINARY_LAX(add)
FLUXION_BINARY_LAX(sub)
FLUXION_BINARY_LAX(mul)
FLUXION_BINARY_LAX(div)
FLUXION_BINARY_LAX(pow)
FLUXION_BINARY_LAX(max)
FLUXION_BINARY_LAX(min)
FLUXION_BINARY_LAX(atan2)
FLUXION_BINARY_LAX(rem)
FLUXION_BINARY_LAX(lt)
FLUXION_BINARY_LAX(le)
FLUXION_BINARY_LAX(gt)
FLUXION_BINARY_LAX(ge)
FLUXION_BINARY_LAX(eq)
FLUXION_BINARY_LAX(ne)
FLUXION_BINARY_LAX(logical_and)
FLUXION_BINARY_LAX(logical_or)
#undef FLUXION_BINARY_LAX
}  // namespace fluxion::lax
